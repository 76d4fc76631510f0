import { describe, expect, it } from 'vitest';
import { CriTimeline, percentile, splitWindow, unionLength } from '../../bench/overhead.js';

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
  it('counts every call but the essential ones as overhead, unless it overlaps an essential one', () => {
    const s = splitWindow(0, 100, [
      { method: 'RunPodSandbox', start: 10, end: 50 },
      { method: 'ImageStatus', start: 20, end: 30 }, // hidden under RunPodSandbox
      { method: 'PodSandboxStatus', start: 50, end: 55 },
      { method: 'CreateContainer', start: 60, end: 70 },
      { method: 'StartContainer', start: 70, end: 90 },
      { method: 'ListContainers', start: 95, end: 120 }, // clipped to the window
    ]);
    expect(s.totalMs).toBe(100);
    expect(s.essentialMs).toBe(70);
    expect(s.overheadMs).toBe(30);
    expect(s.outsideCriMs).toBe(100 - 70 - 5 - 5);
    expect(s.callMs).toEqual({
      RunPodSandbox: 40,
      ImageStatus: 10,
      PodSandboxStatus: 5,
      CreateContainer: 10,
      StartContainer: 20,
      ListContainers: 5,
    });
    expect(splitWindow(0, 10, [{ method: 'ListPodSandbox', start: 0, end: 4 }], []).overheadMs).toBe(10);
  });
  it('measures a window against the calls reported during it', async () => {
    const t = new CriTimeline();
    t.onCall({ method: 'RunPodSandbox', durationMs: 1 }); // before the window: ignored
    const s = await t.measure(async () => {
      await new Promise((r) => setTimeout(r, 30));
      t.onCall({ method: 'StartContainer', durationMs: 20 }); // the last 20 ms of the window
    });
    expect(s.essentialMs).toBeGreaterThan(19);
    expect(s.essentialMs).toBeLessThanOrEqual(20.001);
    expect(s.overheadMs).toBeCloseTo(s.totalMs - s.essentialMs, 6);
    expect(Object.keys(s.callMs)).toEqual(['StartContainer']);
  });
});
