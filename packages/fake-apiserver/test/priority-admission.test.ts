import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer, UserInfo } from '../src/index.js';
import { ApiClient, nodeRbacServer, pod, priorityClass } from './helpers.js';

const USERS: Record<string, UserInfo> = {
  'admin-token': { name: 'admin', uid: 'u-admin', groups: ['system:masters'] },
  'n1-token': { name: 'system:node:n1', uid: 'u-n1', groups: ['system:nodes'] },
};
const PCS = '/apis/scheduling.k8s.io/v1/priorityclasses';
const PODS = '/api/v1/namespaces/default/pods';

describe('Priority admission', () => {
  let s: ApiServer;
  const client = (token: string) => new ApiClient(s.url, { token, ca: s.caPem });
  const admin = () => client('admin-token');
  const create = (name: string, spec: Record<string, unknown> = {}) => admin().post(PODS, pod(name, spec));

  beforeAll(async () => {
    s = await nodeRbacServer(USERS);
    expect((await admin().post(PCS, priorityClass('high', 999_999_999))).status).toBe(201);
    expect((await admin().post(PCS, priorityClass('polite', 10, { preemptionPolicy: 'Never' }))).status).toBe(
      201,
    );
  });
  afterAll(() => s?.close());

  it('gives a pod without a class priority 0 and PreemptLowerPriority while no class is the default', async () => {
    const r = await create('plain');
    expect(r.status).toBe(201);
    expect(r.body.spec.priority).toBe(0);
    expect(r.body.spec.preemptionPolicy).toBe('PreemptLowerPriority');
    expect(r.body.spec.priorityClassName).toBeUndefined();
  });

  it('resolves priorityClassName to the class value and preemption policy', async () => {
    const high = await create('high', { priorityClassName: 'high' });
    expect(high.status).toBe(201);
    expect(high.body.spec).toMatchObject({ priority: 999_999_999, preemptionPolicy: 'PreemptLowerPriority' });
    const polite = await create('polite', { priorityClassName: 'polite' });
    expect(polite.body.spec).toMatchObject({ priority: 10, preemptionPolicy: 'Never' });
    const critical = await create('critical', { priorityClassName: 'system-node-critical' });
    expect(critical.body.spec.priority).toBe(2_000_001_000);
  });

  it('refuses a class that does not exist with 403, also on a dry run', async () => {
    for (const path of [`${PODS}?dryRun=All`, PODS]) {
      const r = await admin().post(path, pod('ghost', { priorityClassName: 'missing' }));
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({
        kind: 'Status',
        reason: 'Forbidden',
        message: 'pods "ghost" is forbidden: no PriorityClass with name missing was found',
        details: { name: 'ghost', kind: 'pods' },
      });
    }
    expect((await admin().get(`${PODS}/ghost`)).status).toBe(404);
  });

  it('accepts a spec.priority equal to the computed one and refuses one that differs (403)', async () => {
    const same = await create('same', { priorityClassName: 'high', priority: 999_999_999 });
    expect(same.status).toBe(201);
    const zero = await create('zero', { priority: 0 });
    expect(zero.status).toBe(201);
    const own = await create('own', { priority: 1000 });
    expect(own.status).toBe(403);
    expect(own.body.message).toBe(
      'pods "own" is forbidden: the integer value of priority (1000) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name',
    );
    const policy = await create('pushy', {
      priorityClassName: 'polite',
      preemptionPolicy: 'PreemptLowerPriority',
    });
    expect(policy.status).toBe(403);
    expect(policy.body.message).toBe(
      'pods "pushy" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name',
    );
  });

  it('keeps the resolved priority on an update that leaves it out, and refuses a change', async () => {
    const stored = (await admin().get(`${PODS}/high`)).body;
    const { priority: _p, preemptionPolicy: _pp, ...spec } = stored.spec;
    const put = await admin().put(`${PODS}/high`, {
      ...stored,
      spec: { ...spec, activeDeadlineSeconds: 600 },
    });
    expect(put.status).toBe(200);
    expect(put.body.spec).toMatchObject({ priority: 999_999_999, preemptionPolicy: 'PreemptLowerPriority' });
    const changed = await admin().patch(`${PODS}/high`, 'merge', { spec: { priority: 5 } });
    expect(changed.status).toBe(422);
  });

  it('resolves a mirror pod the kubelet creates from its static pod class', async () => {
    const mirror = pod(
      'static-web-n1',
      { nodeName: 'n1', priorityClassName: 'system-node-critical' },
      { annotations: { 'kubernetes.io/config.mirror': 'hash' } },
    );
    const r = await client('n1-token').post(PODS, mirror);
    expect(r.status).toBe(201);
    expect(r.body.spec).toMatchObject({ priority: 2_000_001_000, preemptionPolicy: 'PreemptLowerPriority' });
  });

  it('gives pods without a class the global default class, by name', async () => {
    expect((await admin().post(PCS, priorityClass('everyday', 100, { globalDefault: true }))).status).toBe(
      201,
    );
    try {
      const r = await create('defaulted');
      expect(r.status).toBe(201);
      expect(r.body.spec).toMatchObject({
        priorityClassName: 'everyday',
        priority: 100,
        preemptionPolicy: 'PreemptLowerPriority',
      });
      const zero = await create('zero-again', { priority: 0 });
      expect(zero.status).toBe(403);
      expect(zero.body.message).toContain('computed 100 from the given PriorityClass name');
    } finally {
      await admin().delete(`${PCS}/everyday`);
    }
  });
});
