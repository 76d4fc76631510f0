import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSuperset, mergeTolerations, resourceListsEqual } from '../src/admission/runtimeclass.js';
import { type Harness, pod, startHarness } from './helpers.js';

const RUNTIMECLASSES = '/apis/node.k8s.io/v1/runtimeclasses';
const PODS = '/api/v1/namespaces/default/pods';

describe('RuntimeClass admission', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ scheduler: false, nodeLifecycle: false });
    const classes = [
      { metadata: { name: 'plain' }, handler: 'runc' },
      {
        metadata: { name: 'costly' },
        handler: 'runc',
        overhead: { podFixed: { cpu: '10m', memory: '1Mi' } },
      },
      {
        metadata: { name: 'steered' },
        handler: 'runc',
        scheduling: {
          nodeSelector: { sandbox: 'yes' },
          tolerations: [{ key: 'sandbox', operator: 'Exists', effect: 'NoSchedule' }],
        },
      },
    ];
    for (const rc of classes) {
      const r = await h.api.post(RUNTIMECLASSES, {
        apiVersion: 'node.k8s.io/v1',
        kind: 'RuntimeClass',
        ...rc,
      });
      expect(r.status).toBe(201);
    }
  });
  afterAll(() => h?.stop());

  const create = (name: string, spec: Record<string, unknown>, dryRun = false) =>
    h.api.post(`${PODS}${dryRun ? '?dryRun=All' : ''}`, pod(name, spec));

  it('refuses a pod naming a class that does not exist with 403, also on a dry run', async () => {
    for (const dryRun of [true, false]) {
      const r = await create('ghost', { runtimeClassName: 'missing' }, dryRun);
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({
        kind: 'Status',
        reason: 'Forbidden',
        message: 'pods "ghost" is forbidden: pod rejected: RuntimeClass "missing" not found',
        details: { name: 'ghost', kind: 'pods' },
      });
    }
    expect((await h.api.get(`${PODS}/ghost`)).status).toBe(404);
  });

  it('admits a pod of a class without overhead or scheduling unchanged', async () => {
    const r = await create('plain', { runtimeClassName: 'plain' });
    expect(r.status).toBe(201);
    expect(r.body.spec.overhead).toBeUndefined();
    expect(r.body.spec.nodeSelector).toBeUndefined();
  });

  it("copies the class's podFixed overhead into spec.overhead", async () => {
    const r = await create('costly', { runtimeClassName: 'costly' });
    expect(r.status).toBe(201);
    expect(r.body.spec.overhead).toEqual({ cpu: '10m', memory: '1Mi' });
  });

  it("accepts a pod's own overhead equal by value, refuses one that differs", async () => {
    const same = await create('same', {
      runtimeClassName: 'costly',
      overhead: { cpu: '0.01', memory: '1Mi' },
    });
    expect(same.status).toBe(201);
    const other = await create('other', {
      runtimeClassName: 'costly',
      overhead: { cpu: '20m', memory: '1Mi' },
    });
    expect(other.status).toBe(403);
    expect(other.body.message).toBe(
      `pods "other" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`,
    );
  });

  it('refuses an overhead on a pod whose class defines none, and on a pod without a class', async () => {
    for (const spec of [{ runtimeClassName: 'plain' }, {}]) {
      const r = await create('free', { ...spec, overhead: { cpu: '1m' } });
      expect(r.status).toBe(403);
      expect(r.body.message).toBe(
        'pods "free" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead',
      );
    }
  });

  it("merges the class's node selector and tolerations into the pod", async () => {
    const r = await create('steered', {
      runtimeClassName: 'steered',
      nodeSelector: { zone: 'a' },
      tolerations: [{ key: 'other', operator: 'Exists' }],
    });
    expect(r.status).toBe(201);
    expect(r.body.spec.nodeSelector).toEqual({ zone: 'a', sandbox: 'yes' });
    expect(r.body.spec.tolerations).toEqual(
      expect.arrayContaining([
        { key: 'other', operator: 'Exists' },
        { key: 'sandbox', operator: 'Exists', effect: 'NoSchedule' },
      ]),
    );
    const bare = await create('steered-bare', { runtimeClassName: 'steered' });
    expect(bare.body.spec.nodeSelector).toEqual({ sandbox: 'yes' });
  });

  it('refuses a pod whose node selector conflicts with the class', async () => {
    const r = await create('clash', { runtimeClassName: 'steered', nodeSelector: { sandbox: 'no' } });
    expect(r.status).toBe(403);
    expect(r.body.message).toBe(
      'pods "clash" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = yes; pod.spec.nodeSelector[sandbox] = no',
    );
  });

  it('leaves updates alone: a stored pod keeps its overhead after its class is deleted', async () => {
    expect((await create('kept', { runtimeClassName: 'costly' })).status).toBe(201);
    expect((await h.api.delete(`${RUNTIMECLASSES}/costly`)).status).toBe(200);
    const r = await h.api.patch(`${PODS}/kept`, 'merge', { metadata: { labels: { a: 'b' } } });
    expect(r.status).toBe(200);
    expect(r.body.spec.overhead).toEqual({ cpu: '10m', memory: '1Mi' });
  });
});

describe('RuntimeClass admission helpers', () => {
  it('compares resource lists by quantity value and by names', () => {
    expect(resourceListsEqual({ cpu: '1', memory: '1Gi' }, { memory: '1024Mi', cpu: '1000m' })).toBe(true);
    expect(resourceListsEqual({ cpu: '1' }, { cpu: '1', memory: '1Gi' })).toBe(false);
    expect(resourceListsEqual({ cpu: '1' }, { memory: '1' })).toBe(false);
    expect(resourceListsEqual(undefined, {})).toBe(false);
  });

  it('keeps only the wider of two tolerations, and the first of equal ones', () => {
    const any = { operator: 'Exists' };
    const keyed = { key: 'k', operator: 'Exists', effect: 'NoSchedule' };
    expect(mergeTolerations([keyed], [any])).toEqual([any]);
    expect(mergeTolerations([any], [keyed])).toEqual([any]);
    expect(mergeTolerations([keyed], [{ ...keyed }])).toEqual([keyed]);
    const a = { key: 'a', operator: 'Equal', value: '1' };
    const b = { key: 'b', operator: 'Equal', value: '1' };
    expect(mergeTolerations([a], [b])).toEqual([a, b]);
  });

  it('widens NoExecute only for a toleration that lasts at least as long', () => {
    const short = { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 };
    const long = { ...short, tolerationSeconds: 300 };
    expect(isSuperset(long, short)).toBe(true);
    expect(isSuperset(short, long)).toBe(false);
    expect(isSuperset({ key: 'k', operator: 'Exists', effect: 'NoExecute' }, long)).toBe(true);
    expect(
      isSuperset({ key: 'k', operator: 'Equal', value: 'v' }, { key: 'k', operator: 'Equal', value: 'w' }),
    ).toBe(false);
  });
});
