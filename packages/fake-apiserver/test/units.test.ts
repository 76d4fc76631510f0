import { describe, expect, it } from 'vitest';
import { parseTokenFile } from '../src/auth/tokens.js';
import { podRequests } from '../src/controllers/scheduler.js';
import { defaultPullPolicy } from '../src/defaults/pod.js';
import { deepEqual } from '../src/meta/equal.js';
import { ApiError } from '../src/meta/status.js';
import { applyJsonPatch } from '../src/patch/json-patch.js';
import { applyMergePatch } from '../src/patch/merge.js';
import { applyStrategicMergePatch } from '../src/patch/strategic.js';
import { humanDuration, podStatusReason } from '../src/registry/printers.js';
import { parseFieldSelector } from '../src/selectors/field.js';
import { parseLabelSelector } from '../src/selectors/label.js';

describe('strategic merge patch', () => {
  const POD = 'io.k8s.api.core.v1.Pod';
  const base = {
    metadata: { finalizers: ['a'] },
    spec: {
      containers: [
        { name: 'x', image: 'i1', ports: [{ containerPort: 80 }] },
        { name: 'y', image: 'i2' },
      ],
      tolerations: [{ key: 't1' }],
    },
  };

  it('merges keyed lists, replaces plain lists, unions primitive merge lists', () => {
    const out = applyStrategicMergePatch(
      base,
      {
        metadata: { finalizers: ['b', 'a'] },
        spec: {
          containers: [
            { name: 'y', image: 'i3' },
            { name: 'z', image: 'i4' },
          ],
          tolerations: [{ key: 't2' }],
        },
      },
      POD,
    ) as typeof base;
    expect(out.spec.containers.map((c) => `${c.name}=${c.image}`)).toEqual(['x=i1', 'y=i3', 'z=i4']);
    expect(out.spec.tolerations).toEqual([{ key: 't2' }]);
    expect(out.metadata.finalizers).toEqual(['a', 'b']);
  });

  it('honours $patch delete/replace, $setElementOrder and $deleteFromPrimitiveList', () => {
    const out = applyStrategicMergePatch(
      base,
      {
        metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] },
        spec: {
          '$setElementOrder/containers': [{ name: 'y' }, { name: 'x' }],
          containers: [{ name: 'x', $patch: 'delete' }],
        },
      },
      POD,
    ) as typeof base;
    expect(out.spec.containers.map((c) => c.name)).toEqual(['y']);
    expect(out.metadata.finalizers).toEqual([]);
    const reordered = applyStrategicMergePatch(
      base,
      { spec: { '$setElementOrder/containers': [{ name: 'y' }, { name: 'x' }] } },
      POD,
    ) as typeof base;
    expect(reordered.spec.containers.map((c) => c.name)).toEqual(['y', 'x']);
    const replaced = applyStrategicMergePatch(
      base,
      { spec: { $patch: 'replace', containers: [{ name: 'only', image: 'i' }] } },
      POD,
    ) as typeof base;
    expect(replaced.spec).toEqual({ containers: [{ name: 'only', image: 'i' }] });
    expect(() =>
      applyStrategicMergePatch(base, { spec: { containers: [{ image: 'no-name' }] } }, POD),
    ).toThrow(/does not contain declared merge key: name/);
  });

  it('merges node conditions by type and keeps untouched ones', () => {
    const node = {
      status: {
        conditions: [
          { type: 'Ready', status: 'False' },
          { type: 'DiskPressure', status: 'False' },
        ],
      },
    };
    const out = applyStrategicMergePatch(
      node,
      { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }] } },
      'io.k8s.api.core.v1.Node',
    );
    expect(out).toEqual({
      status: {
        conditions: [
          { type: 'Ready', status: 'True', reason: 'KubeletReady' },
          { type: 'DiskPressure', status: 'False' },
        ],
      },
    });
  });
});

describe('merge and json patch', () => {
  it('merge patch deletes with null and replaces lists', () => {
    expect(applyMergePatch({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { b: null }, l: [3] })).toEqual({
      a: { c: 2 },
      l: [3],
    });
  });
  it('json patch add/remove/replace/move/copy/test', () => {
    const doc = { a: [1, 2], b: { c: 1 } };
    const out = applyJsonPatch(doc, [
      { op: 'add', path: '/a/-', value: 3 },
      { op: 'replace', path: '/b/c', value: 2 },
      { op: 'copy', from: '/b', path: '/d' },
      { op: 'move', from: '/d', path: '/e' },
      { op: 'remove', path: '/a/0' },
      { op: 'test', path: '/e/c', value: 2 },
      { op: 'test', path: '/e', value: { c: 2 } },
    ]);
    expect(out).toEqual({ a: [2, 3], b: { c: 2 }, e: { c: 2 } });
    expect(doc).toEqual({ a: [1, 2], b: { c: 1 } });
    expect(() => applyJsonPatch(doc, [{ op: 'replace', path: '/zz', value: 1 }])).toThrow(ApiError);
  });
});

describe('selectors', () => {
  it('parses label selectors', () => {
    const sel = parseLabelSelector('app in (a, b),!legacy,tier!=db,version>2')!;
    expect(sel({ app: 'a', version: '3' })).toBe(true);
    expect(sel({ app: 'a', version: '3', legacy: '' })).toBe(false);
    expect(sel({ app: 'c', version: '3' })).toBe(false);
    expect(sel({ app: 'b', tier: 'db', version: '3' })).toBe(false);
    expect(sel({ app: 'b', version: '1' })).toBe(false);
    expect(parseLabelSelector('')).toBeUndefined();
    expect(() => parseLabelSelector('app in (a b')).toThrow(ApiError);
  });
  it('parses field selectors against the allowed fields', () => {
    const fields = { 'spec.nodeName': (o: { spec?: { nodeName?: string } }) => o.spec?.nodeName };
    const sel = parseFieldSelector('spec.nodeName=n1', fields)!;
    expect(sel({ spec: { nodeName: 'n1' } })).toBe(true);
    expect(sel({ spec: { nodeName: 'n2' } })).toBe(false);
    expect(parseFieldSelector('spec.nodeName!=n1', fields)!({ spec: {} })).toBe(true);
    expect(() => parseFieldSelector('status.x=1', fields)).toThrow(/field label not supported: status.x/);
  });
});

describe('small helpers', () => {
  it('compares JSON structurally, ignoring key order and undefined', () => {
    expect(deepEqual({ a: 1, b: [1, { c: 2, d: 3 }] }, { b: [1, { d: 3, c: 2 }], a: 1 })).toBe(true);
    expect(deepEqual({ a: 1, x: undefined }, { a: 1 })).toBe(true);
    expect(deepEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(deepEqual({ a: 1 }, { a: '1' })).toBe(false);
    expect(deepEqual([], {})).toBe(false);
  });
  it('sums pod requests from quantities: containers, the largest init container, overhead', () => {
    const requests = podRequests({
      spec: {
        containers: [
          { resources: { requests: { cpu: '100m', memory: '128Mi', 'example.com/dongle': 2 } } },
          { resources: { requests: { cpu: '0.2', memory: '1e3', broken: '12Q' } } },
        ],
        initContainers: [{ resources: { requests: { cpu: '1', memory: '1Ki' } } }],
        overhead: { cpu: ' 50m ' },
      },
    });
    expect(requests.get('cpu')).toBeCloseTo(1.05);
    expect(requests.get('memory')).toBe(128 * 2 ** 20 + 1000);
    expect(requests.get('example.com/dongle')).toBe(2);
    expect(requests.get('broken')).toBe(0);
  });
  it('defaults imagePullPolicy by tag', () => {
    expect(defaultPullPolicy('busybox')).toBe('Always');
    expect(defaultPullPolicy('busybox:latest')).toBe('Always');
    expect(defaultPullPolicy('registry:5000/busybox')).toBe('Always');
    expect(defaultPullPolicy('registry:5000/busybox:1.36')).toBe('IfNotPresent');
    expect(defaultPullPolicy('busybox@sha256:abc')).toBe('IfNotPresent');
  });
  it('parses the kube-apiserver token file format', () => {
    const m = parseTokenFile('# comment\nt1,alice,u1\nt2,bob,u2,"dev,ops"\n');
    expect(m.get('t1')).toEqual({ name: 'alice', uid: 'u1', groups: [] });
    expect(m.get('t2')).toEqual({ name: 'bob', uid: 'u2', groups: ['dev', 'ops'] });
    expect(() => parseTokenFile('onlytoken\n')).toThrow(/line 1/);
  });
  it('prints ages and pod status like kubectl', () => {
    expect(humanDuration(5_000)).toBe('5s');
    expect(humanDuration(150_000)).toBe('2m30s');
    expect(humanDuration(3 * 3600_000)).toBe('3h');
    expect(humanDuration(50 * 3600_000)).toBe('2d2h');
    const crashing = {
      metadata: {},
      status: {
        phase: 'Running',
        containerStatuses: [{ state: { waiting: { reason: 'CrashLoopBackOff' } } }],
      },
    };
    expect(podStatusReason(crashing)).toBe('CrashLoopBackOff');
    expect(podStatusReason({ metadata: { deletionTimestamp: 'x' }, status: { phase: 'Running' } })).toBe(
      'Terminating',
    );
  });
});
