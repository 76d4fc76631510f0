// The scenarios' pod watch against the fake apiserver: it must outlive client-node's idle timeout
// (a DELETED after a silence longer than that is still seen) and relist when its version is gone.
import { type ApiServer, createApiServer } from '@kh/fake-apiserver';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PodWatch, type PodWatchTarget } from '../src/support/watch.js';

const NS = 'watch';
let server: ApiServer;
let target: Omit<PodWatchTarget, 'idleTimeoutMs' | 'reopenDelayMs'>;

beforeAll(async () => {
  // A small watch cache, so a few writes expire a resourceVersion.
  server = await createApiServer({
    scheduler: false,
    watchCacheSize: 8,
    tls: true,
    tokens: { 'watch-test-token': 'admin' },
  });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig());
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  target = { kubeConfig, core, namespace: NS };
});
afterAll(async () => {
  await server?.close();
});

const pod = (name: string): V1Pod => ({
  metadata: { name, labels: { case: name } },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
});

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const listedVersion = async (labelSelector: string) =>
  (await target.core.listNamespacedPod({ namespace: NS, labelSelector })).metadata?.resourceVersion;

describe('PodWatch', () => {
  it('sees a deletion that comes after a silence longer than one watch request lasts', async () => {
    const labelSelector = 'case=silent';
    const w = new PodWatch(
      { ...target, idleTimeoutMs: 200 },
      { labelSelector, resourceVersion: await listedVersion(labelSelector) },
    );
    try {
      await target.core.createNamespacedPod({ namespace: NS, body: pod('silent') });
      await until('two silent watch requests to end', () => (w.ends >= 2 ? true : undefined));
      await target.core.deleteNamespacedPod({ namespace: NS, name: 'silent' });
      await until('DELETED', () => w.events.find((e) => e.type === 'DELETED'));
      expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
      expect(w.lastEnd).toMatch(/TimeoutError/);
    } finally {
      w.stop();
    }
  });

  it('lists again when its version is gone, and reports what changed meanwhile as events', async () => {
    const labelSelector = 'case=expired';
    const w = new PodWatch(
      { ...target, idleTimeoutMs: 200, reopenDelayMs: 1_000 },
      { labelSelector, resourceVersion: await listedVersion(labelSelector) },
    );
    try {
      await target.core.createNamespacedPod({ namespace: NS, body: pod('expired') });
      await until('ADDED', () => w.events.find((e) => e.type === 'ADDED'));
      await until('a watch request to end', () => (w.ends >= 1 ? true : undefined));
      // While no request is open: the pod goes, and more writes than the cache holds follow.
      await target.core.deleteNamespacedPod({ namespace: NS, name: 'expired' });
      for (let i = 0; i < 10; i++) {
        await target.core.createNamespacedConfigMap({
          namespace: NS,
          body: { metadata: { name: `cm-${i}` } },
        });
      }
      const deleted = await until('DELETED', () => w.events.find((e) => e.type === 'DELETED'));
      expect(deleted.pod.metadata?.name).toBe('expired');
      expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
    } finally {
      w.stop();
    }
  });

  it('ends no request once stopped', async () => {
    const w = new PodWatch({ ...target, idleTimeoutMs: 100 }, { labelSelector: 'case=none' });
    await until('the first request to end', () => (w.ends >= 1 ? true : undefined));
    w.stop();
    const ends = w.ends;
    await new Promise((r) => setTimeout(r, 400));
    expect(w.ends).toBe(ends);
  });
});
