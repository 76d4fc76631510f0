import { describe, expect, it } from 'vitest';
import { parseQuantityOrPercent } from '../src/util/quantity.js';

// Quantity itself is tested in @kh/apimachinery; this is the kubelet's quantity-or-percentage form.
describe('parseQuantityOrPercent', () => {
  it('reads percentages as fractions', () => {
    expect(parseQuantityOrPercent('10%')).toEqual({ percentage: 0.1 });
    expect(parseQuantityOrPercent('7.5%')).toEqual({ percentage: 0.075 });
  });
  it('reads quantities', () => {
    const r = parseQuantityOrPercent('100Mi');
    expect('quantity' in r && r.quantity.value()).toBe(104_857_600n);
  });
  it.each(['0%', '101%', 'x%', '-5%', '10MB', ''])('rejects %j', (text) => {
    expect(() => parseQuantityOrPercent(text)).toThrow();
  });
});
