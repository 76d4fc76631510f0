import { describe, expect, it } from 'vitest';
import { slowest } from '../bench/load.js';

describe('slowest', () => {
  // Spans on the performance.now() clock; the steady state began at 1 000 ms.
  const spans: [number, number, string][] = [
    [1_100, 1_110, 'lease'],
    [2_500, 3_400, 'podStatus'],
    [1_900, 1_905, 'lease'],
    [4_000, 4_300, 'nodeStatus'],
  ];
  const overlapsList = ([from, to]: [number, number, string]) => from < 4_100 && to > 4_000;

  it('gives the slowest writes first, with when each was sent into the steady state', () => {
    expect(slowest(spans, 1_000, overlapsList, 2)).toEqual([
      { atS: 1.5, ms: 900, kind: 'podStatus', duringList: false },
      { atS: 3, ms: 300, kind: 'nodeStatus', duringList: true },
    ]);
  });

  it('leaves the spans it was given in their order', () => {
    const before = structuredClone(spans);
    slowest(spans, 1_000, overlapsList);
    expect(spans).toEqual(before);
  });
});
