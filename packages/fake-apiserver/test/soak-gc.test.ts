import { describe, expect, it } from 'vitest';
import { HEAP_MARGIN, type HeapSample, judgeHeap, MIN_COLLECTIONS, parseMarkCompact } from '../bench/gc.js';

// Lines printed by `node --trace-gc` (Node 22.23, V8 12.4) on this machine.
const LINES = {
  markCompact:
    '[19846:0x28d02000]      239 ms: Mark-Compact 65.9 (92.7) -> 21.1 (56.6) MB, pooled: 23 MB, 10.41 / 0.00 ms  (+ 1.6 ms in 0 steps since start of marking, biggest step 0.0 ms, walltime since start of marking 31 ms) (average mu = 0.951, current mu = 0.951) finalize incremental marking via stack guard; GC in old space requested',
  markCompactSync:
    '[19856:0x3e9e6000]      321 ms: Mark-Compact 43.9 (77.1) -> 3.4 (36.6) MB, pooled: 30 MB, 8.92 / 0.00 ms  (average mu = 0.639, current mu = 0.006) testing; GC in old space requested',
  reduce:
    '[24268:0x1fac9000]       57 ms: Mark-Compact (reduce) 4.4 (5.6) -> 4.0 (5.6) MB, pooled: 0 MB, 5.68 / 0.00 ms  (average mu = 0.892, current mu = 0.892) heap profiler; GC in old space requested',
  scavenge:
    '[19856:0x3e9e6000]      152 ms: Scavenge 26.6 (35.5) -> 26.6 (59.0) MB, pooled: 0 MB, 26.47 / 0.00 ms  (average mu = 1.000, current mu = 1.000) allocation failure; ',
};

describe('parseMarkCompact', () => {
  it('reads the heap a Mark-Compact leaves, incremental or not', () => {
    expect(parseMarkCompact(LINES.markCompact)).toEqual({
      ms: 239,
      reduce: false,
      beforeMiB: 65.9,
      afterMiB: 21.1,
      committedAfterMiB: 56.6,
    });
    expect(parseMarkCompact(LINES.markCompactSync)).toMatchObject({ ms: 321, afterMiB: 3.4, reduce: false });
  });

  it('reads the (reduce) variant', () => {
    expect(parseMarkCompact(LINES.reduce)).toEqual({
      ms: 57,
      reduce: true,
      beforeMiB: 4.4,
      afterMiB: 4,
      committedAfterMiB: 5.6,
    });
  });

  it('ignores scavenges and any other output', () => {
    expect(parseMarkCompact(LINES.scavenge)).toBeUndefined();
    expect(parseMarkCompact('fake-apiserver serving at http://127.0.0.1:1')).toBeUndefined();
    expect(parseMarkCompact(LINES.markCompact.slice(0, 60))).toBeUndefined();
  });
});

describe('judgeHeap', () => {
  // One Mark-Compact every 15 s over 600 s, warm-up over at 100 s.
  const series = (heapAt: (t: number) => number): HeapSample[] =>
    Array.from({ length: 40 }, (_, i) => ({ t: 15 * (i + 1), afterMiB: heapAt(15 * (i + 1)) }));

  it('calls a heap that returns to the same level flat, however it wobbles', () => {
    const j = judgeHeap(
      series((t) => 90 + ((t / 15) % 3) * 2),
      100,
      600,
    );
    expect(j.verdict).toBe('flat');
    expect(j.baseline).toMatchObject({ from: 100, to: 540, collections: 29 });
    expect(j.last).toMatchObject({ from: 540, to: 600, collections: 5 });
    expect(j.growthMiB).toBeLessThanOrEqual(HEAP_MARGIN.miB);
  });

  it('calls a heap that keeps growing after the warm-up growing', () => {
    // 4 MiB a minute: the last minute is some 19 MiB over the baseline's median.
    const j = judgeHeap(
      series((t) => 90 + (t * 4) / 60),
      100,
      600,
    );
    expect(j.verdict).toBe('growing');
    expect(j.growthMiB).toBeGreaterThan(HEAP_MARGIN.miB);
  });

  it('does not count the warm-up', () => {
    // Filling the caches: 20 -> 90 MiB in the first 100 s, flat after.
    expect(
      judgeHeap(
        series((t) => Math.min(90, 20 + (t * 70) / 100)),
        100,
        600,
      ).verdict,
    ).toBe('flat');
  });

  it('reaches back to the last three Mark-Compacts when the last minute holds fewer', () => {
    // One every 35 s: the last minute (540-600 s) holds two, at 560 and 595 s.
    const sparse = Array.from({ length: 17 }, (_, i) => ({ t: 35 * (i + 1), afterMiB: 90 + 2 * i }));
    const j = judgeHeap(sparse, 100, 600);
    expect(j.last).toMatchObject({ from: 525, to: 600, collections: 3, medianMiB: 120 });
    expect(j.baseline).toMatchObject({ from: 100, to: 525, collections: 12, medianMiB: 105 });
    expect(j.verdict).toBe('growing');
    expect(
      judgeHeap(
        sparse.map((s) => ({ ...s, afterMiB: 90 })),
        100,
        600,
      ).verdict,
    ).toBe('flat');
  });

  it('gives no verdict on too few Mark-Compacts', () => {
    // Eight after the warm-up, five of them in the last minute: three for the baseline, enough.
    expect(
      judgeHeap(
        series(() => 90).filter((s) => s.t < 100 || s.t > 490),
        100,
        600,
      ).verdict,
    ).toBe('flat');
    // Seven: two for the baseline.
    const few = series(() => 90).filter((s) => s.t < 100 || s.t > 505);
    const j = judgeHeap(few, 100, 600);
    expect(j.verdict).toBe('too few Mark-Compacts');
    expect(j.baseline.collections).toBe(MIN_COLLECTIONS - 1);
    expect(j.last.collections).toBe(5);
    expect(j.growthMiB).toBeUndefined();
    expect(judgeHeap([], 100, 600).verdict).toBe('too few Mark-Compacts');
  });
});
