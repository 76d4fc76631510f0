import { describe, expect, it } from 'vitest';
import { percentile, summarize } from '../bench/stats.js';

describe('bench statistics', () => {
  it('uses nearest-rank percentiles', () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(percentile(sorted, 50)).toBe(5);
    expect(percentile(sorted, 90)).toBe(9);
    expect(percentile([7], 50)).toBe(7);
    expect(() => percentile([], 50)).toThrow(/empty/);
  });

  it('summarizes unsorted samples', () => {
    expect(summarize([30, 10, 20.004, 40])).toEqual({
      n: 4,
      p50: 20,
      p90: 40,
      p99: 40,
      mean: 25,
      min: 10,
      max: 40,
    });
  });
});
