import { describe, expect, it } from 'vitest';
import { percentile, summarize } from '../../src/report/stats.js';

describe('percentile (nearest rank)', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);

  it('returns the value at rank ceil(p/100 * n)', () => {
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 90)).toBe(90);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 100)).toBe(100);
    expect(percentile([10, 20, 30, 40], 50)).toBe(20);
    expect(percentile([10, 20, 30, 40], 51)).toBe(30);
  });

  it('is the maximum for p99 of a small sample, never an interpolated value', () => {
    expect(percentile([3, 7, 8, 12, 40], 99)).toBe(40);
    expect(percentile([3, 7, 8, 12, 40], 90)).toBe(40);
    expect(percentile([3, 7, 8, 12, 40], 50)).toBe(8);
    expect(percentile([5], 1)).toBe(5);
  });

  it('rejects an empty sample and percentiles outside (0, 100]', () => {
    expect(() => percentile([], 50)).toThrow(/empty/);
    expect(() => percentile([1], 0)).toThrow(RangeError);
    expect(() => percentile([1], 101)).toThrow(RangeError);
    expect(() => percentile([1], Number.NaN)).toThrow(RangeError);
  });
});

describe('summarize', () => {
  it('sorts and summarises an unsorted sample', () => {
    expect(summarize([40, 3, 12, 8, 7])).toEqual({ count: 5, min: 3, p50: 8, p90: 40, p99: 40, max: 40 });
  });

  it('ignores non-finite values and returns undefined for nothing to summarise', () => {
    expect(summarize([1, Number.NaN, Number.POSITIVE_INFINITY, 2])).toMatchObject({
      count: 2,
      min: 1,
      max: 2,
    });
    expect(summarize([])).toBeUndefined();
    expect(summarize([Number.NaN])).toBeUndefined();
  });
});
