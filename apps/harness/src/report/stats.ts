import type { LatencySummary } from './model.js';

/**
 * Nearest-rank percentile of an ascending sample: the smallest value such that at least p% of the
 * sample is <= it. It always returns an observed value, which keeps a p99 of 20 samples honest
 * (it is the maximum) instead of interpolating a latency nobody measured.
 */
export function percentile(sortedAsc: readonly number[], p: number): number {
  if (sortedAsc.length === 0) throw new RangeError('percentile of an empty sample');
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile must be in (0, 100], got ${p}`);
  const rank = Math.ceil((p / 100) * sortedAsc.length);
  return sortedAsc[rank - 1]!;
}

/** Summary of a sample, or undefined when it is empty. Non-finite values are ignored. */
export function summarize(sample: readonly number[]): LatencySummary | undefined {
  const sorted = sample.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  return {
    count: sorted.length,
    min: sorted[0]!,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1]!,
  };
}
