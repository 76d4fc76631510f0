import { describe, expect, it } from 'vitest';
import { CriTimeline, percentile, unionLength } from '../../bench/overhead.js';

describe('benchmark arithmetic', () => {
  it('counts overlapping CRI calls once', () => {
    expect(unionLength([])).toBe(0);
    expect(
      unionLength([
        { start: 0, end: 10 },
        { start: 5, end: 15 },
        { start: 20, end: 25 },
      ]),
    ).toBe(20);
    expect(
      unionLength([
        { start: 3, end: 4 },
        { start: 0, end: 10 },
      ]),
    ).toBe(10);
  });
  it('takes nearest-rank percentiles', () => {
    const v = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(v, 50)).toBe(50);
    expect(percentile(v, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
  });
  it('subtracts time spent inside reported calls from a measured window', async () => {
    const t = new CriTimeline();
    const s = await t.measure(async () => {
      await new Promise((r) => setTimeout(r, 30));
      t.onCall({ durationMs: 20 }); // a call that took the last 20 ms of the window
    });
    expect(s.criMs).toBeGreaterThan(19);
    expect(s.criMs).toBeLessThanOrEqual(20.001);
    expect(s.overheadMs).toBeCloseTo(s.totalMs - s.criMs, 6);
  });
});
