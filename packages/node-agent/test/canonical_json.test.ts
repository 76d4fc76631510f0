import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../src/util/canonical_json.js';

describe('canonicalJson', () => {
  it('sorts keys at every depth, so key order never makes two equal objects differ', () => {
    const a = { b: 1, a: { y: [1, { d: 2, c: 3 }], x: 'v' } };
    const b = { a: { x: 'v', y: [1, { c: 3, d: 2 }] }, b: 1 };
    expect(canonicalJson(a)).toBe('{"a":{"x":"v","y":[1,{"c":3,"d":2}]},"b":1}');
    expect(canonicalJson(b)).toBe(canonicalJson(a));
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: 2 }));
  });

  it('writes what JSON.stringify writes for API objects: dates, undefined, escapes, non-finite numbers', () => {
    const value = {
      when: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)),
      gone: undefined,
      fn: () => 1,
      list: [undefined, null, Number.NaN, Number.POSITIVE_INFINITY, -0, 1.5e300, true, false],
      text: 'quote " backslash \\ newline \n unicode é \u2028',
      nested: { toJSON: () => ({ z: 1, a: 2 }) },
    };
    // JSON.stringify of the same object with keys already in order gives the reference text.
    const sorted = {
      fn: value.fn,
      gone: undefined,
      list: value.list,
      nested: { a: 2, z: 1 },
      text: value.text,
      when: value.when,
    };
    expect(canonicalJson(value)).toBe(JSON.stringify(sorted));
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson('s')).toBe('"s"');
    expect(() => canonicalJson({ n: 1n })).toThrow(TypeError);
  });
});
