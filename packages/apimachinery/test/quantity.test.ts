import { describe, expect, it } from 'vitest';
import { Quantity, QuantityError } from '../src/index.js';

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
    ['1T', 10n ** 12n],
    ['1P', 10n ** 15n],
    ['1E', 10n ** 18n],
    ['2e3', 2000n],
    ['2E3', 2000n],
    ['2e+3', 2000n],
    ['1e-3', 1n], // 0.001 rounds up to 1 as a whole value
    ['110', 110n],
    ['0', 0n],
    ['+5', 5n],
    ['-5', -5n],
    ['1.', 1n],
    ['.5', 1n],
    ['007', 7n],
    ['18446744073709551616', 18446744073709551616n], // decimal values are not capped at int64
    ['8Ei', (1n << 63n) - 1n], // binary values are, silently
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
    ['1e-3', 1n],
    ['1.0001', 1001n],
  ])('%s has milliValue %d', (text, milli) => {
    expect(Quantity.parse(text).milliValue()).toBe(milli);
  });

  it('rounds away from zero for negative values, as Kubernetes does', () => {
    expect(Quantity.parse('-1.5').value()).toBe(-2n);
    expect(Quantity.parse('-1u').milliValue()).toBe(-1n);
    expect(Quantity.parse('-0.5').value()).toBe(-1n);
  });

  it('keeps precision down to nano-units and rounds finer values up', () => {
    expect(Quantity.parse('0.9n').toString()).toBe('1n');
    expect(Quantity.parse('0.000000000001').toString()).toBe('1n');
    expect(Quantity.parse('1e-12').toString()).toBe('1e-9');
    expect(Quantity.parse('-0.1n').toString()).toBe('-1n');
    expect(Quantity.parse('1.2345').toString()).toBe('1234500u');
  });

  it('remembers the suffix family', () => {
    expect(Quantity.parse('1Mi').format).toBe('BinarySI');
    expect(Quantity.parse('1M').format).toBe('DecimalSI');
    expect(Quantity.parse('1').format).toBe('DecimalSI');
    expect(Quantity.parse('1e6').format).toBe('DecimalExponent');
    // A fraction of one byte cannot be written in binary suffixes.
    expect(Quantity.parse('0.0001Ki').format).toBe('DecimalSI');
  });

  it.each([
    '',
    'abc',
    '10MB',
    '1.2.3',
    'Mi',
    '1 Gi',
    ' 1',
    '5%',
    '1e',
    '1e3.5',
    '--1',
    '1K',
    '1mi',
    '.',
    '+',
    '12Q',
    '1e99999',
  ])('rejects %j with a QuantityError', (text) => {
    expect(() => Quantity.parse(text)).toThrow(QuantityError);
  });

  it('names the input and the bad suffix', () => {
    expect(() => Quantity.parse('10MB')).toThrow(/^invalid quantity "10MB": .*suffix "MB"/);
    expect(() => Quantity.parse('')).toThrow(/invalid quantity "": empty string/);
    expect(() => Quantity.parse('x')).toThrow(
      expect.objectContaining({
        name: 'QuantityError',
        input: 'x',
        reason: 'expected a number such as 1, 1.5 or .5, then a suffix',
      }),
    );
  });

  it('rejects non-strings with a clear error', () => {
    expect(() => Quantity.parse(5 as unknown as string)).toThrow(/expected a string, got number/);
  });
});

describe('Quantity.fromJSON', () => {
  it('reads strings, trimming white space as the apiserver decoder does', () => {
    expect(Quantity.fromJSON(' 128Mi ').value()).toBe(128n * 2n ** 20n);
  });

  it('reads plain JSON numbers', () => {
    expect(Quantity.fromJSON(4).value()).toBe(4n);
    expect(Quantity.fromJSON(0.5).milliValue()).toBe(500n);
    expect(Quantity.fromJSON(1e21).toString()).toBe('1e21');
    expect(Quantity.fromJSON(-2).value()).toBe(-2n);
  });

  it.each([null, undefined, {}, [], true, Number.NaN, Number.POSITIVE_INFINITY, '12Q'])(
    'rejects %j',
    (value) => {
      expect(() => Quantity.fromJSON(value)).toThrow(QuantityError);
      expect(Quantity.tryFromJSON(value)).toBeUndefined();
    },
  );

  it('tryFromJSON returns the quantity when valid', () => {
    expect(Quantity.tryFromJSON('1e3')?.value()).toBe(1000n);
  });

  it('round-trips through JSON in canonical form', () => {
    const obj = JSON.parse(JSON.stringify({ cpu: Quantity.parse('1.5'), memory: Quantity.parse('1.5Gi') }));
    expect(obj).toEqual({ cpu: '1500m', memory: '1536Mi' });
    expect(Quantity.fromJSON(obj.memory).cmp(Quantity.parse('1.5Gi'))).toBe(0);
  });
});

describe('Quantity.asApproximateFloat64', () => {
  it.each([
    ['100m', 0.1],
    ['128Mi', 128 * 2 ** 20],
    ['1e3', 1000],
    ['2', 2],
    ['-1.5', -1.5],
    ['1n', 1e-9],
  ])('%s is about %d', (text, value) => {
    expect(Quantity.parse(text).asApproximateFloat64()).toBeCloseTo(value, 12);
  });

  it('is exact for whole values up to 2^53', () => {
    expect(Quantity.parse('8Pi').asApproximateFloat64()).toBe(2 ** 53);
  });
});

describe('Quantity constructors', () => {
  it('fromValue and fromMilli build exact values', () => {
    expect(Quantity.fromValue(3).milliValue()).toBe(3000n);
    expect(Quantity.fromValue(1n << 40n, 'BinarySI').toString()).toBe('1Ti');
    expect(Quantity.fromMilli(250).toString()).toBe('250m');
    expect(Quantity.fromMilli(250n).value()).toBe(1n);
  });

  it('refuses fractional or unsafe numbers instead of rounding silently', () => {
    expect(() => Quantity.fromValue(1.5)).toThrow(/value must be a safe integer/);
    expect(() => Quantity.fromMilli(2 ** 60)).toThrow(/milli value must be a safe integer/);
  });
});

describe('Quantity arithmetic and canonical form', () => {
  it('subtracts exactly and keeps the binary format', () => {
    const cap = Quantity.parse('16Gi');
    const alloc = cap.sub(Quantity.parse('1Gi')).sub(Quantity.parse('100Mi'));
    expect(alloc.value()).toBe((15n << 30n) - 100n * 1024n * 1024n);
    expect(alloc.toString()).toBe('15260Mi');
  });

  it('adds exactly where floats would not', () => {
    const sum = Quantity.parse('100m').add(Quantity.parse('200m'));
    expect(sum.cmp(Quantity.parse('300m'))).toBe(0);
  });

  it('a zero left side takes the right side format, as in Kubernetes', () => {
    expect(Quantity.parse('0').add(Quantity.parse('1Mi')).toString()).toBe('1Mi');
    expect(Quantity.parse('0').sub(Quantity.parse('2Mi')).toString()).toBe('-2Mi');
    expect(Quantity.parse('1k').add(Quantity.parse('24')).toString()).toBe('1024');
  });

  it.each([
    ['1024', 'BinarySI', '1Ki'],
    ['16777216', 'BinarySI', '16Mi'],
    ['1000', 'BinarySI', '1k'],
    ['2000', 'BinarySI', '2000'],
    ['1025', 'BinarySI', '1025'],
    ['1500', 'DecimalExponent', '1500'],
    ['1500000', 'DecimalExponent', '1500e3'],
    ['100Mi', undefined, '100Mi'],
    ['1.5Gi', undefined, '1536Mi'],
    ['0.5Gi', undefined, '512Mi'],
    ['0.5Ki', undefined, '512'],
    ['1536.5Ki', undefined, '1573376'], // whole bytes, but no binary suffix divides them
    ['1024.001Ki', undefined, '1048577024m'], // a fraction of a byte prints in decimal
    ['1500m', undefined, '1500m'],
    ['1.5', undefined, '1500m'],
    ['2000m', undefined, '2'],
    ['4', undefined, '4'],
    ['1000', undefined, '1k'],
    ['110', undefined, '110'],
    ['10000', undefined, '10k'],
    ['0.01', undefined, '10m'],
    ['2e3', undefined, '2e3'],
    ['1e-3', undefined, '1e-3'],
    ['12e5', undefined, '1200e3'],
    ['0', undefined, '0'],
    ['-0', undefined, '0'],
    ['0Mi', undefined, '0'],
    ['-1.5Gi', undefined, '-1536Mi'],
    ['-100m', undefined, '-100m'],
    ['1000E', undefined, '1e21'], // DecimalSI has no suffix above E
    ['1024Ei', undefined, '9223372036854775807'], // capped at 2^63-1, which no binary suffix divides
  ])('%s (%s) prints as %s', (text, format, out) => {
    const q = Quantity.parse(text);
    const shown = format ? Quantity.fromValue(q.value(), format as 'BinarySI') : q;
    expect(shown.toString()).toBe(out);
    expect(shown.toJSON()).toBe(out);
  });

  it('compares', () => {
    expect(Quantity.parse('1Gi').cmp(Quantity.parse('1G'))).toBe(1);
    expect(Quantity.parse('1G').cmp(Quantity.parse('1Gi'))).toBe(-1);
    expect(Quantity.parse('1000m').cmp(Quantity.parse('1'))).toBe(0);
    expect(Quantity.parse('0').isZero()).toBe(true);
    expect(Quantity.parse('1n').isZero()).toBe(false);
    expect(Quantity.parse('-1n').sign()).toBe(-1);
    expect(Quantity.parse('0').sign()).toBe(0);
    expect(Quantity.parse('1n').sign()).toBe(1);
  });
});
