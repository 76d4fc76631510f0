import { describe, expect, it } from 'vitest';
import { resourceCollectorPercentile } from './cpu.js';

describe('resourceCollectorPercentile', () => {
  it('reads the sorted samples at int(n * q) - 1, as resource_collector.go does', () => {
    const samples = Array.from({ length: 20 }, (_, i) => (20 - i) / 10); // 2.0 down to 0.1
    expect(resourceCollectorPercentile(samples, 0.5)).toBe(1); // index 9 of 0.1..2.0
    expect(resourceCollectorPercentile(samples, 0.95)).toBe(1.9); // index 18: the top one is left out
    expect(resourceCollectorPercentile(samples, 1)).toBe(2);
  });

  it('is 0 with too few samples, as upstream reports "not enough data"', () => {
    expect(resourceCollectorPercentile([0.7], 0.95)).toBe(0);
    expect(resourceCollectorPercentile([], 0.5)).toBe(0);
  });
});
