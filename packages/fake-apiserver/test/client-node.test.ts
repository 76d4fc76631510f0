import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  makeInformer,
  type V1Pod,
  Watch,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type Harness, startHarness } from './helpers.js';

describe('@kubernetes/client-node against the fake apiserver (TLS + token)', () => {
  let h: Harness;
  let kc: KubeConfig;
  let core: CoreV1Api;

  beforeAll(async () => {
    // No scheduler: with no nodes it would add PodScheduled updates to every event stream.
    h = await startHarness({ scheduler: false });
    kc = new KubeConfig();
    kc.loadFromString(h.server.kubeconfig());
    core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'cn' } } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  const newPod = (name: string, labels: Record<string, string> = {}): V1Pod => ({
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
  });

  it('creates, reads, lists with selectors and pages', async () => {
    for (let i = 0; i < 5; i++) {
      await core.createNamespacedPod({
        namespace: 'cn',
        body: newPod(`p${i}`, { idx: String(i), even: String(i % 2 === 0) }),
      });
    }
    const got = await core.readNamespacedPod({ namespace: 'cn', name: 'p3' });
    expect(got.spec?.containers[0]?.imagePullPolicy).toBe('IfNotPresent');
    expect(got.status?.qosClass).toBe('BestEffort');
    const even = await core.listNamespacedPod({ namespace: 'cn', labelSelector: 'even=true' });
    expect(even.items.map((p) => p.metadata?.name)).toEqual(['p0', 'p2', 'p4']);
    const page1 = await core.listNamespacedPod({ namespace: 'cn', limit: 2 });
    expect(page1.items.map((p) => p.metadata?.name)).toEqual(['p0', 'p1']);
    expect(page1.metadata?.remainingItemCount).toBe(3);
    const page2 = await core.listNamespacedPod({
      namespace: 'cn',
      limit: 2,
      _continue: page1.metadata?._continue,
    });
    expect(page2.items.map((p) => p.metadata?.name)).toEqual(['p2', 'p3']);
  });

  it('keeps a node Lease in kube-node-lease, as the kubelet does', async () => {
    const coord = kc.makeApiClient(CoordinationV1Api);
    const now = new Date();
    const lease = await coord.createNamespacedLease({
      namespace: 'kube-node-lease',
      body: {
        metadata: { name: 'n1' },
        spec: { holderIdentity: 'n1', leaseDurationSeconds: 40, renewTime: now },
      },
    });
    expect(lease.spec?.leaseDurationSeconds).toBe(40);
    lease.spec!.renewTime = new Date(now.getTime() + 10_000);
    const renewed = await coord.replaceNamespacedLease({
      namespace: 'kube-node-lease',
      name: 'n1',
      body: lease,
    });
    expect(Number(renewed.metadata?.resourceVersion)).toBeGreaterThan(
      Number(lease.metadata?.resourceVersion),
    );
    expect(new Date(renewed.spec?.renewTime as unknown as string).getTime()).toBe(now.getTime() + 10_000);
  });

  it('watches from a resourceVersion', async () => {
    const list = await core.listNamespacedPod({ namespace: 'cn' });
    const seen: string[] = [];
    const watch = new Watch(kc);
    const ctl = await watch.watch(
      '/api/v1/namespaces/cn/pods',
      { resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true },
      (type, obj) => seen.push(`${type} ${obj.metadata.name}`),
      () => {},
    );
    try {
      await core.createNamespacedPod({ namespace: 'cn', body: newPod('w1') });
      await core.deleteNamespacedPod({ namespace: 'cn', name: 'w1' });
      await eventually(() => expect(seen).toEqual(['ADDED w1', 'DELETED w1']));
    } finally {
      ctl.abort();
    }
  });

  it('feeds an informer with add, update and delete', async () => {
    const informer = makeInformer(
      kc,
      '/api/v1/namespaces/cn/pods',
      () => core.listNamespacedPod({ namespace: 'cn', labelSelector: 'app=inf' }),
      'app=inf',
    );
    const events: string[] = [];
    informer.on('add', (p) => events.push(`add ${p.metadata?.name}`));
    informer.on('update', (p) => events.push(`update ${p.metadata?.name} ${p.metadata?.labels?.v ?? ''}`));
    informer.on('delete', (p) => events.push(`delete ${p.metadata?.name}`));
    await core.createNamespacedPod({ namespace: 'cn', body: newPod('before', { app: 'inf' }) });
    await informer.start();
    try {
      await eventually(() => expect(events).toEqual(['add before']));
      await core.createNamespacedPod({ namespace: 'cn', body: newPod('after', { app: 'inf' }) });
      // client-node sends application/json-patch+json by default.
      await core.patchNamespacedPod({
        namespace: 'cn',
        name: 'after',
        body: [{ op: 'add', path: '/metadata/labels/v', value: '2' }],
      });
      await core.deleteNamespacedPod({ namespace: 'cn', name: 'before' });
      await eventually(() =>
        expect(events).toEqual(['add before', 'add after', 'update after 2', 'delete before']),
      );
      expect(informer.list('cn').map((p) => p.metadata?.name)).toEqual(['after']);
    } finally {
      await informer.stop();
    }
  });

  it('surfaces API errors as Status bodies', async () => {
    const err = await core
      .readNamespacedPod({ namespace: 'cn', name: 'missing' })
      .catch((e: { code: number; body: string }) => e);
    expect((err as { code: number }).code).toBe(404);
    expect(JSON.parse((err as { body: string }).body)).toMatchObject({
      kind: 'Status',
      reason: 'NotFound',
      message: 'pods "missing" not found',
    });
  });
});
