import { afterEach, describe, expect, it } from 'vitest';
import type { ApiServer } from '../src/index.js';
import { createApiServer } from '../src/index.js';
import type { KObject } from '../src/meta/object.js';
import { ApiClient, eventually, pod, readyNode } from './helpers.js';

let server: ApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(opts: Parameters<typeof createApiServer>[0] = {}) {
  server = await createApiServer(opts);
  return new ApiClient(server.url);
}

const podOn = async (api: ApiClient, name: string) =>
  (await api.get(`/api/v1/namespaces/default/pods/${name}`)).body;
const scheduledCondition = (p: KObject) =>
  (p.status?.conditions ?? []).find((c: KObject) => c.type === 'PodScheduled');

describe('scheduler', () => {
  it('binds to a Ready node with room, respecting requests, pods count, nodeSelector and taints', async () => {
    const api = await start({ nodeLifecycle: false });
    await api.post('/api/v1/nodes', readyNode('small', { cpu: '1', memory: '1Gi', pods: '2' }));
    await api.post(
      '/api/v1/nodes',
      readyNode('gpu', {
        cpu: '8',
        memory: '16Gi',
        labels: { accel: 'gpu' },
        taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
      }),
    );
    const notReady = readyNode('down', { cpu: '64', memory: '64Gi' });
    notReady.status.conditions[0].status = 'False';
    await api.post('/api/v1/nodes', notReady);
    const cordoned = readyNode('cordoned', { cpu: '64', memory: '64Gi' });
    cordoned.spec.unschedulable = true;
    await api.post('/api/v1/nodes', cordoned);

    const req = (cpu: string) => ({
      containers: [{ name: 'c', image: 'busybox:1', resources: { requests: { cpu, memory: '100Mi' } } }],
    });
    await api.post('/api/v1/namespaces/default/pods', pod('fits', req('500m')));
    await eventually(async () => expect((await podOn(api, 'fits')).spec.nodeName).toBe('small'));
    expect(scheduledCondition(await podOn(api, 'fits'))).toMatchObject({ status: 'True' });

    // Too big for "small", and "gpu" is tainted: nothing fits.
    await api.post('/api/v1/namespaces/default/pods', pod('big', req('2')));
    await eventually(async () => {
      const cond = scheduledCondition(await podOn(api, 'big'));
      expect(cond).toMatchObject({ status: 'False', reason: 'Unschedulable' });
      expect(cond.message).toBe(
        '0/4 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.',
      );
    });
    const events = (
      await api.get(
        '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dbig,reason%3DFailedScheduling',
      )
    ).body;
    expect(events.items).toHaveLength(1);
    expect(events.items[0]).toMatchObject({ type: 'Warning', source: { component: 'default-scheduler' } });

    // Tolerating the taint and selecting the label lands it on "gpu".
    await api.post(
      '/api/v1/namespaces/default/pods',
      pod('gpu-pod', {
        ...req('2'),
        nodeSelector: { accel: 'gpu' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
      }),
    );
    await eventually(async () => expect((await podOn(api, 'gpu-pod')).spec.nodeName).toBe('gpu'));

    // "small" allows 2 pods: one more fits, the next one does not.
    await api.post(
      '/api/v1/namespaces/default/pods',
      pod('second', { ...req('100m'), nodeSelector: { 'kubernetes.io/hostname': 'small' } }),
    );
    await eventually(async () => expect((await podOn(api, 'second')).spec.nodeName).toBe('small'));
    await api.post(
      '/api/v1/namespaces/default/pods',
      pod('third', { ...req('100m'), nodeSelector: { 'kubernetes.io/hostname': 'small' } }),
    );
    await eventually(async () =>
      expect(scheduledCondition(await podOn(api, 'third'))?.message).toMatch(/1 Too many pods/),
    );

    // Room frees up when a pod goes away: the waiting pod is retried and bound.
    await api.delete('/api/v1/namespaces/default/pods/second?gracePeriodSeconds=0');
    await eventually(async () => expect((await podOn(api, 'third')).spec.nodeName).toBe('small'));
  });
});

describe('node lifecycle controller', () => {
  it('marks conditions Unknown when the lease is not renewed within the grace period, and taints the node', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const clock = { now: () => now };
    const api = await start({
      clock,
      leaseGraceSeconds: 40,
      nodeMonitorPeriodSeconds: 3600,
      scheduler: false,
    });
    const node = readyNode('n1');
    node.status.conditions.push({
      type: 'MemoryPressure',
      status: 'False',
      reason: 'KubeletHasSufficientMemory',
    });
    await api.post('/api/v1/nodes', node);
    await api.post('/api/v1/namespaces/default/pods', pod('resident', { nodeName: 'n1' }));
    await api.patch('/api/v1/namespaces/default/pods/resident/status', 'strategic', {
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    const renew = async () => {
      const lease = await api.get('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1');
      const spec = {
        holderIdentity: 'n1',
        leaseDurationSeconds: 40,
        renewTime: new Date(now).toISOString().replace('Z', '000Z'),
      };
      if (lease.status === 404)
        await api.post('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
          metadata: { name: 'n1' },
          spec,
        });
      else
        await api.put('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1', {
          ...lease.body,
          spec,
        });
    };
    const lifecycle = server!.nodeLifecycle!;
    const ready = async () =>
      (await api.get('/api/v1/nodes/n1')).body.status.conditions.find((c: KObject) => c.type === 'Ready');

    // Renewing every 10 s keeps it Ready past the grace period.
    for (let i = 0; i < 6; i++) {
      now += 10_000;
      await renew();
      lifecycle.tick();
    }
    expect((await ready()).status).toBe('True');

    now += 41_000;
    lifecycle.tick();
    await eventually(async () => {
      const n = (await api.get('/api/v1/nodes/n1')).body;
      const byType = Object.fromEntries(n.status.conditions.map((c: KObject) => [c.type, c]));
      expect(byType.Ready).toMatchObject({
        status: 'Unknown',
        reason: 'NodeStatusUnknown',
        message: 'Kubelet stopped posting node status.',
      });
      expect(byType.MemoryPressure).toMatchObject({ status: 'Unknown', reason: 'NodeStatusUnknown' });
      expect(byType.DiskPressure).toMatchObject({
        status: 'Unknown',
        reason: 'NodeStatusNeverUpdated',
        message: 'Kubelet never posted node status.',
      });
      expect(n.spec.taints.map((t: KObject) => `${t.key}:${t.effect}`)).toEqual([
        'node.kubernetes.io/unreachable:NoSchedule',
        'node.kubernetes.io/unreachable:NoExecute',
      ]);
    });

    const resident = await podOn(api, 'resident');
    expect(resident.status.conditions.find((c: KObject) => c.type === 'Ready')).toMatchObject({
      status: 'False',
    });
    // The kubelet comes back: Ready again, taints removed.
    const fresh = new Date(now).toISOString().replace(/\.\d+Z$/, 'Z');
    await api.patch('/api/v1/nodes/n1/status', 'strategic', {
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            lastHeartbeatTime: fresh,
            lastTransitionTime: fresh,
          },
        ],
      },
    });
    await eventually(async () =>
      expect((await api.get('/api/v1/nodes/n1')).body.spec.taints).toBeUndefined(),
    );
    lifecycle.tick();
    expect((await ready()).status).toBe('True');
  });
});

describe('event TTL', () => {
  it('expires events an hour after their last update', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const api = await start({ clock: { now: () => now }, scheduler: false, nodeLifecycle: false });
    const ts = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
    const event = (name: string, last: number) => ({
      metadata: { name },
      involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' },
      reason: 'Test',
      type: 'Normal',
      lastTimestamp: ts(last),
    });
    await api.post('/api/v1/namespaces/default/events', event('old', now));
    await api.post('/api/v1/namespaces/default/events', event('fresh', now + 30 * 60_000));
    now += 61 * 60_000;
    server!.eventTtl.sweep();
    const names = (await api.get('/api/v1/namespaces/default/events')).body.items.map(
      (e: KObject) => e.metadata.name,
    );
    expect(names).toEqual(['fresh']);
  });
});
