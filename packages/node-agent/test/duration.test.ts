import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../src/util/duration.js';

describe('parseDuration (Go syntax)', () => {
  it.each([
    ['10s', 10_000],
    ['5m', 300_000],
    ['5m0s', 300_000],
    ['1m30s', 90_000],
    ['2h45m', 9_900_000],
    ['1.5h', 5_400_000],
    ['300ms', 300],
    ['1500us', 1.5],
    ['1500µs', 1.5],
    ['2000000ns', 2],
    ['.5s', 500],
    ['0', 0],
    ['-1m', -60_000],
    ['+2s', 2000],
  ])('%s = %d ms', (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each([
    ['10', /missing unit/],
    ['', /invalid duration/],
    ['1d', /invalid duration/],
    ['s', /invalid duration/],
    ['1m 30s', /invalid duration/],
    ['-', /invalid duration/],
    ['1.2.3s', /invalid duration/],
  ])('rejects %j', (text, why) => {
    expect(() => parseDuration(text)).toThrow(why);
  });
});

describe('formatDuration (Go Duration.String)', () => {
  it.each([
    [0, '0s'],
    [10_000, '10s'],
    [300_000, '5m0s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
    [9_900_000, '2h45m0s'],
    [500, '500ms'],
    [1.5, '1.5ms'],
    [0.0015, '1.5µs'],
    [1500, '1.5s'],
    [-60_000, '-1m0s'],
  ])('%d ms -> %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('round-trips through parseDuration', () => {
    for (const ms of [1, 999, 1000, 61_000, 7_322_000, 86_400_000]) {
      expect(parseDuration(formatDuration(ms))).toBe(ms);
    }
  });
});
