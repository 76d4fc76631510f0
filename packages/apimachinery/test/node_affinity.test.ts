import { describe, expect, it } from 'vitest';
import {
  type AffinityNode,
  type AffinityPod,
  nodeSelectorRequirementMatches as matches,
  type NodeSelectorTerm,
  nodeSelectorMatches,
  nodeSelectorTermMatches,
  podMatchesNodeAffinity,
} from '../src/index.js';

const node: AffinityNode = {
  metadata: { name: 'n1', labels: { zone: 'a', gen: '3', big: '9223372036854775807' } },
};

describe('nodeSelectorRequirementMatches', () => {
  it('In / NotIn', () => {
    expect(matches({ key: 'k', operator: 'In', values: ['a', 'b'] }, 'b')).toBe(true);
    expect(matches({ key: 'k', operator: 'In', values: ['a'] }, 'c')).toBe(false);
    expect(matches({ key: 'k', operator: 'In', values: ['a'] }, undefined)).toBe(false);
    expect(matches({ key: 'k', operator: 'NotIn', values: ['a'] }, 'c')).toBe(true);
    expect(matches({ key: 'k', operator: 'NotIn', values: ['a'] }, 'a')).toBe(false);
    // A missing label is "not in" any set.
    expect(matches({ key: 'k', operator: 'NotIn', values: ['a'] }, undefined)).toBe(true);
  });

  it('Exists / DoesNotExist look only at presence, an empty value is present', () => {
    expect(matches({ key: 'k', operator: 'Exists' }, '')).toBe(true);
    expect(matches({ key: 'k', operator: 'Exists' }, undefined)).toBe(false);
    expect(matches({ key: 'k', operator: 'DoesNotExist' }, undefined)).toBe(true);
    expect(matches({ key: 'k', operator: 'DoesNotExist' }, 'x')).toBe(false);
  });

  it('Gt / Lt compare integers, not strings', () => {
    expect(matches({ key: 'k', operator: 'Gt', values: ['9'] }, '10')).toBe(true);
    expect(matches({ key: 'k', operator: 'Lt', values: ['10'] }, '9')).toBe(true);
    expect(matches({ key: 'k', operator: 'Gt', values: ['3'] }, '3')).toBe(false);
    expect(matches({ key: 'k', operator: 'Lt', values: ['3'] }, '3')).toBe(false);
    expect(matches({ key: 'k', operator: 'Gt', values: ['-5'] }, '-4')).toBe(true);
  });

  it('Gt / Lt are exact int64 beyond 2^53 (the Number comparison got these wrong)', () => {
    // 2^53 + 1 and 2^53 are the same double, so a Number comparison calls them equal.
    expect(matches({ key: 'k', operator: 'Gt', values: ['9007199254740992'] }, '9007199254740993')).toBe(
      true,
    );
    expect(matches({ key: 'k', operator: 'Lt', values: ['9007199254740993'] }, '9007199254740992')).toBe(
      true,
    );
    expect(
      matches({ key: 'k', operator: 'Lt', values: ['9223372036854775807'] }, '9223372036854775806'),
    ).toBe(true);
    expect(
      matches({ key: 'k', operator: 'Gt', values: ['-9223372036854775808'] }, '-9223372036854775807'),
    ).toBe(true);
  });

  it('Gt / Lt match nothing for operands that are not int64, or without exactly one value', () => {
    expect(matches({ key: 'k', operator: 'Gt', values: ['1'] }, '9223372036854775808')).toBe(false); // 2^63
    expect(matches({ key: 'k', operator: 'Lt', values: ['1'] }, '-9223372036854775809')).toBe(false);
    expect(matches({ key: 'k', operator: 'Gt', values: ['1'] }, '2.5')).toBe(false);
    expect(matches({ key: 'k', operator: 'Gt', values: ['1'] }, '1e3')).toBe(false);
    expect(matches({ key: 'k', operator: 'Gt', values: ['1'] }, '0x10')).toBe(false);
    expect(matches({ key: 'k', operator: 'Gt', values: ['x'] }, '5')).toBe(false);
    expect(matches({ key: 'k', operator: 'Gt', values: ['1'] }, undefined)).toBe(false);
    expect(matches({ key: 'k', operator: 'Lt', values: [] }, '5')).toBe(false);
    expect(matches({ key: 'k', operator: 'Lt', values: ['9', '10'] }, '5')).toBe(false);
  });

  it('an unknown operator matches nothing', () => {
    expect(matches({ key: 'k', operator: 'Like', values: ['a'] }, 'a')).toBe(false);
  });
});

describe('nodeSelectorTermMatches', () => {
  it('ANDs expressions and fields; matchFields selects metadata.name only', () => {
    const term: NodeSelectorTerm = {
      matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }],
      matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }],
    };
    expect(nodeSelectorTermMatches(term, node)).toBe(true);
    expect(
      nodeSelectorTermMatches(
        { ...term, matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['n1'] }] },
        node,
      ),
    ).toBe(false);
    expect(
      nodeSelectorTermMatches(
        { matchFields: [{ key: 'metadata.uid', operator: 'In', values: ['n1'] }] },
        node,
      ),
    ).toBe(false);
    expect(
      nodeSelectorTermMatches({ matchExpressions: [{ key: 'gen', operator: 'Gt', values: ['2'] }] }, node),
    ).toBe(true);
  });

  it('an empty term matches nothing', () => {
    expect(nodeSelectorTermMatches({}, node)).toBe(false);
    expect(nodeSelectorTermMatches({ matchExpressions: [], matchFields: [] }, node)).toBe(false);
  });
});

describe('nodeSelectorMatches', () => {
  it('ORs terms; no terms match nothing', () => {
    const no = { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] };
    const yes = { matchExpressions: [{ key: 'zone', operator: 'Exists' }] };
    expect(nodeSelectorMatches({ nodeSelectorTerms: [no, yes] }, node)).toBe(true);
    expect(nodeSelectorMatches({ nodeSelectorTerms: [no] }, node)).toBe(false);
    expect(nodeSelectorMatches({ nodeSelectorTerms: [] }, node)).toBe(false);
  });
});

describe('podMatchesNodeAffinity', () => {
  const affinity = (terms: NodeSelectorTerm[]): AffinityPod['spec'] => ({
    affinity: {
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
    },
  });

  it('a pod without selector or affinity fits any node', () => {
    expect(podMatchesNodeAffinity({}, node)).toBe(true);
    expect(podMatchesNodeAffinity({ spec: { affinity: { nodeAffinity: {} } } }, { metadata: {} })).toBe(true);
  });

  it('nodeSelector needs every label with an equal value', () => {
    expect(podMatchesNodeAffinity({ spec: { nodeSelector: { zone: 'a', gen: '3' } } }, node)).toBe(true);
    expect(podMatchesNodeAffinity({ spec: { nodeSelector: { zone: 'b' } } }, node)).toBe(false);
    expect(podMatchesNodeAffinity({ spec: { nodeSelector: { rack: '' } } }, node)).toBe(false);
  });

  it('nodeSelector and required affinity must both hold', () => {
    const spec = {
      nodeSelector: { zone: 'a' },
      ...affinity([{ matchExpressions: [{ key: 'gen', operator: 'Lt', values: ['3'] }] }]),
    };
    expect(podMatchesNodeAffinity({ spec }, node)).toBe(false);
    expect(
      podMatchesNodeAffinity(
        {
          spec: affinity([
            { matchExpressions: [{ key: 'big', operator: 'Gt', values: ['9223372036854775806'] }] },
          ]),
        },
        node,
      ),
    ).toBe(true);
  });
});
