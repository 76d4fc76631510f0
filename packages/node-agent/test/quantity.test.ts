import { describe, expect, it } from 'vitest';
import { parseQuantityOrPercent, Quantity } from '../src/util/quantity.js';

describe('Quantity.parse', () => {
  it.each([
    ['100Mi', 100n * 1024n * 1024n],
    ['1Ki', 1024n],
    ['1Gi', 1n << 30n],
    ['1.5Gi', 3n << 29n],
    ['2Ei', 2n << 60n],
    ['1k', 1000n],
    ['1M', 1_000_000n],
    ['1G', 1_000_000_000n],
    ['1.5G', 1_500_000_000n],
    ['2e3', 2000n],
    ['2E3', 2000n],
    ['1e-3', 1n], // 0.001 rounds up to 1 as a whole value
    ['110', 110n],
    ['0', 0n],
    ['+5', 5n],
    ['-5', -5n],
  ])('%s has value %d', (text, value) => {
    expect(Quantity.parse(text).value()).toBe(value);
  });

  it.each([
    ['500m', 500n],
    ['1', 1000n],
    ['0.1', 100n],
    ['2.5', 2500n],
    ['1u', 1n], // below a milli-unit rounds up
    ['1n', 1n],
    ['100m', 100n],
  ])('%s has milliValue %d', (text, milli) => {
    expect(Quantity.parse(text).milliValue()).toBe(milli);
  });

  it.each(['', 'abc', '10MB', '1.2.3', 'Mi', '1 Gi', '5%', '1e', '--1'])('rejects %j', (text) => {
    expect(() => Quantity.parse(text)).toThrow();
  });

  it('names the bad suffix', () => {
    expect(() => Quantity.parse('10MB')).toThrow(/suffix "MB"/);
  });
});

describe('Quantity arithmetic and canonical form', () => {
  it('subtracts exactly and keeps the binary format', () => {
    const cap = Quantity.parse('16Gi');
    const alloc = cap.sub(Quantity.parse('1Gi')).sub(Quantity.parse('100Mi'));
    expect(alloc.value()).toBe((15n << 30n) - 100n * 1024n * 1024n);
    expect(alloc.toString()).toBe('15260Mi');
  });

  it.each([
    ['1024', 'BinarySI', '1Ki'],
    ['16777216', 'BinarySI', '16Mi'],
    ['1000', 'BinarySI', '1k'],
    ['2000', 'BinarySI', '2000'],
    ['1025', 'BinarySI', '1025'],
    ['100Mi', undefined, '100Mi'],
    ['1500m', undefined, '1500m'],
    ['2000m', undefined, '2'],
    ['4', undefined, '4'],
    ['1000', undefined, '1k'],
    ['110', undefined, '110'],
    ['2e3', undefined, '2e3'],
    ['0', undefined, '0'],
  ])('%s (%s) prints as %s', (text, format, out) => {
    const q = Quantity.parse(text);
    const shown = format ? Quantity.fromMilli(q.milli, format as 'BinarySI') : q;
    expect(shown.toString()).toBe(out);
  });

  it('compares', () => {
    expect(Quantity.parse('1Gi').cmp(Quantity.parse('1G'))).toBe(1);
    expect(Quantity.parse('1000m').cmp(Quantity.parse('1'))).toBe(0);
    expect(Quantity.parse('0').isZero()).toBe(true);
  });
});

describe('parseQuantityOrPercent', () => {
  it('reads percentages as fractions', () => {
    expect(parseQuantityOrPercent('10%')).toEqual({ percentage: 0.1 });
    expect(parseQuantityOrPercent('7.5%')).toEqual({ percentage: 0.075 });
  });
  it('reads quantities', () => {
    const r = parseQuantityOrPercent('100Mi');
    expect('quantity' in r && r.quantity.value()).toBe(104_857_600n);
  });
  it.each(['0%', '101%', 'x%', '-5%'])('rejects %j', (text) => {
    expect(() => parseQuantityOrPercent(text)).toThrow();
  });
});
