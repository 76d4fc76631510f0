// Unit tests of the pieces with their own rules: the request cache and the resize decoder.
import { ResourceExhaustedError } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { decodeResizeEvents } from '../src/protocol/resize.js';
import { RequestCache } from '../src/request_cache.js';

describe('RequestCache', () => {
  it('hands out distinct unguessable tokens that work once, within the TTL', () => {
    let now = 0;
    const cache = new RequestCache<string>(60_000, 10, () => now);
    const a = cache.insert('a');
    const b = cache.insert('b');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(cache.consume(a)).toBe('a');
    expect(cache.consume(a)).toBeUndefined();
    now = 60_000;
    expect(cache.consume(b)).toBeUndefined();
  });

  it('counts only live entries against the limit', () => {
    let now = 0;
    const cache = new RequestCache<number>(1_000, 2, () => now);
    cache.insert(1);
    cache.insert(2);
    expect(() => cache.insert(3)).toThrow(ResourceExhaustedError);
    now = 1_000;
    expect(cache.size).toBe(0);
    cache.insert(4);
    expect(cache.size).toBe(1);
  });
});

describe('decodeResizeEvents', () => {
  async function decode(chunks: string[]) {
    const out = [];
    for await (const size of decodeResizeEvents(chunks)) out.push(size);
    return out;
  }

  it('reads objects split across chunks and several in one chunk, as Go encodes them', async () => {
    expect(
      await decode(['{"Width":80,', '"Height":24}\n{"Width":1', '00,"Height":40}\n{"width":1,"height":2}']),
    ).toEqual([
      { width: 80, height: 24 },
      { width: 100, height: 40 },
      { width: 1, height: 2 },
    ]);
  });

  it('skips sizes that are not 16-bit unsigned integers', async () => {
    expect(
      await decode([
        '{"Width":-1,"Height":24}',
        '{"Width":70000,"Height":1}',
        '{"Width":"80"}',
        '{"Width":5,"Height":6}',
      ]),
    ).toEqual([{ width: 5, height: 6 }]);
  });

  it('stops at the first syntax error, like the kubelet', async () => {
    expect(await decode(['{"Width":1,"Height":1}', 'oops', '{"Width":2,"Height":2}'])).toEqual([
      { width: 1, height: 1 },
    ]);
    expect(await decode(['{"Width":1,,}'])).toEqual([]);
    expect(await decode([`{"x":"${'a'.repeat(5000)}"}`])).toEqual([]);
  });

  it('is not fooled by braces inside strings', async () => {
    expect(await decode(['{"note":"}{\\"","Width":3,"Height":4}'])).toEqual([{ width: 3, height: 4 }]);
  });
});
