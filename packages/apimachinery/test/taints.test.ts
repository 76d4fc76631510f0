import { describe, expect, it } from 'vitest';
import {
  findMatchingUntoleratedTaint,
  type Taint,
  toleratesTaint,
  tolerationsTolerateTaint,
} from '../src/index.js';

const taint: Taint = { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' };

describe('toleratesTaint', () => {
  it('Equal (the default operator) needs the same key and value', () => {
    expect(toleratesTaint({ key: 'dedicated', operator: 'Equal', value: 'gpu' }, taint)).toBe(true);
    expect(toleratesTaint({ key: 'dedicated', value: 'gpu' }, taint)).toBe(true);
    expect(toleratesTaint({ key: 'dedicated', value: 'cpu' }, taint)).toBe(false);
    expect(toleratesTaint({ key: 'other', value: 'gpu' }, taint)).toBe(false);
    // An absent value equals an empty one.
    expect(
      toleratesTaint({ key: 'k', operator: 'Equal' }, { key: 'k', value: '', effect: 'NoSchedule' }),
    ).toBe(true);
  });

  it('Exists ignores the value; with an empty key it tolerates every taint', () => {
    expect(toleratesTaint({ key: 'dedicated', operator: 'Exists' }, taint)).toBe(true);
    expect(toleratesTaint({ key: 'other', operator: 'Exists' }, taint)).toBe(false);
    expect(toleratesTaint({ operator: 'Exists' }, taint)).toBe(true);
    expect(toleratesTaint({ key: '', operator: 'Exists' }, taint)).toBe(true);
  });

  it('an empty key is a wildcard only for Exists', () => {
    expect(toleratesTaint({ value: 'gpu' }, taint)).toBe(false);
    expect(toleratesTaint({ key: '', operator: 'Equal', value: 'gpu' }, taint)).toBe(false);
  });

  it('an effect must match unless the toleration leaves it empty', () => {
    expect(toleratesTaint({ operator: 'Exists', effect: 'NoSchedule' }, taint)).toBe(true);
    expect(toleratesTaint({ operator: 'Exists', effect: 'NoExecute' }, taint)).toBe(false);
    expect(toleratesTaint({ operator: 'Exists', effect: '' }, { ...taint, effect: 'NoExecute' })).toBe(true);
    // tolerationSeconds bounds how long a NoExecute taint is tolerated, not whether it is.
    const noExecute = { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' };
    expect(
      toleratesTaint(
        { key: noExecute.key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        noExecute,
      ),
    ).toBe(true);
  });

  it('an unknown operator tolerates nothing', () => {
    expect(toleratesTaint({ key: 'dedicated', operator: 'Like', value: 'gpu' }, taint)).toBe(false);
  });
});

describe('tolerationsTolerateTaint / findMatchingUntoleratedTaint', () => {
  it('any toleration is enough; none or undefined tolerate nothing', () => {
    expect(
      tolerationsTolerateTaint(
        [
          { key: 'x', operator: 'Exists' },
          { key: 'dedicated', value: 'gpu' },
        ],
        taint,
      ),
    ).toBe(true);
    expect(tolerationsTolerateTaint([], taint)).toBe(false);
    expect(tolerationsTolerateTaint(undefined, taint)).toBe(false);
  });

  it('finds the first untolerated taint the filter admits', () => {
    const taints: Taint[] = [
      { key: 'soft', effect: 'PreferNoSchedule' },
      { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
      { key: 'gone', effect: 'NoExecute' },
    ];
    const hard = (t: Taint) => t.effect === 'NoSchedule' || t.effect === 'NoExecute';
    expect(findMatchingUntoleratedTaint(taints, [], hard)?.key).toBe('dedicated');
    expect(findMatchingUntoleratedTaint(taints, [{ key: 'dedicated', operator: 'Exists' }], hard)?.key).toBe(
      'gone',
    );
    expect(findMatchingUntoleratedTaint(taints, [{ operator: 'Exists' }], hard)).toBeUndefined();
    expect(findMatchingUntoleratedTaint(taints, [])?.key).toBe('soft');
    expect(findMatchingUntoleratedTaint(undefined, [])).toBeUndefined();
  });
});
