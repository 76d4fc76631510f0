import { describe, expect, it } from 'vitest';
import { EXCERPT_AFTER_MS, EXCERPT_BEFORE_MS, excerptAround } from '../../src/run/log-excerpt.js';

const T0 = Date.parse('2026-11-23T01:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
// One agent line a second for 300 s, klog style, with a stack trace under the line at 50 s.
const agent = Array.from({ length: 300 }, (_, s) => `I${at(s)} "tick" n=${s}`);
agent.splice(51, 0, '    at syncPod (pod_workers.js:10)');

describe('excerptAround', () => {
  it('is the last lines when nothing failed or no line has a time', () => {
    expect(excerptAround(agent, [], 5)).toEqual(agent.slice(-5));
    const plain = Array.from({ length: 100 }, (_, i) => `line ${i}`);
    expect(excerptAround(plain, [T0 + 50_000], 10)).toEqual(plain.slice(-10));
  });

  it('keeps the lines around a failure, continuation lines included, then the last lines', () => {
    const out = excerptAround(agent, [T0 + 55_000], 80, 3);
    const before = EXCERPT_BEFORE_MS / 1000;
    const after = EXCERPT_AFTER_MS / 1000;
    expect(out[0]).toBe('…');
    expect(out[1]).toBe(`I${at(55 - before)} "tick" n=${55 - before}`);
    expect(out).toContain('    at syncPod (pod_workers.js:10)');
    const gap = out.indexOf('…', 1);
    expect(out[gap - 1]).toBe(`I${at(55 + after)} "tick" n=${55 + after}`);
    expect(out.slice(gap + 1)).toEqual(agent.slice(-3));
  });

  it('reads containerd-style time fields and stays within its budget, keeping the latest lines of the window', () => {
    const containerd = Array.from(
      { length: 600 },
      (_, i) => `time="${at(i / 10).replace('Z', '123456Z')}" level=info msg="m${i}"`,
    );
    const out = excerptAround(containerd, [T0 + 30_000], 40, 10);
    expect(out.filter((l) => l !== '…')).toHaveLength(40);
    // The 30 lines from the window are the ones right up to 5 s after the failure.
    expect(out).toContain(containerd[350]);
    expect(out).not.toContain(containerd[200]);
    expect(out.slice(-10)).toEqual(containerd.slice(-10));
  });
});
