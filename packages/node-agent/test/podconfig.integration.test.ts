// The API pod source against the fake apiserver: list and watch with spec.nodeName, graceful
// deletion, and 410 Gone for a compacted resourceVersion.

import { realClock } from '@kh/apimachinery';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../src/api/node_api.js';
import {
  ApiServerPodSource,
  KubePodListWatch,
  ResourceExpiredError,
} from '../src/podconfig/apiserver_source.js';
import type { PodUpdate } from '../src/types/pod_update.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';

let apiserver: TestApiServer;
let kubeconfig: string;
let core: CoreV1Api;

beforeAll(async () => {
  apiserver = await startTestApiServer({ watchCacheSize: 5 });
  kubeconfig = apiserver.kubeconfig;
  core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
});
afterAll(() => apiserver?.stop());

const podOn = (name: string, nodeName: string): V1Pod => ({
  metadata: { name, namespace: 'default' },
  spec: { nodeName, containers: [{ name: 'c', image: 'busybox' }] },
});

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('API server pod source', () => {
  it('delivers this node’s pods only: ADD, UPDATE, graceful DELETE and REMOVE', async () => {
    await core.createNamespacedPod({ namespace: 'default', body: podOn('before', 'src-node') });
    await core.createNamespacedPod({ namespace: 'default', body: podOn('elsewhere', 'other-node') });
    const source = new ApiServerPodSource({
      lw: new KubePodListWatch(loadKubeConfig(kubeconfig), 'src-node'),
      clock: realClock,
    });
    const got: string[] = [];
    const abort = new AbortController();
    const running = source.run(abort.signal, (u: PodUpdate) =>
      got.push(`${u.op} ${u.pods.map((p) => p.metadata?.name).join(',')}`),
    );
    try {
      await until(() => source.ready() && got.length === 1, 'the initial list');
      expect(got).toEqual(['ADD before']);
      await core.createNamespacedPod({ namespace: 'default', body: podOn('web', 'src-node') });
      await until(() => got.includes('ADD web'), 'ADD web');
      await core.patchNamespacedPod({
        namespace: 'default',
        name: 'web',
        body: [{ op: 'add', path: '/metadata/labels', value: { tier: 'web' } }],
      });
      await until(() => got.includes('UPDATE web'), 'UPDATE web');
      // A pod bound to a node is deleted gracefully: deletionTimestamp first, then removal.
      await core.deleteNamespacedPod({ namespace: 'default', name: 'web' });
      await until(() => got.includes('DELETE web'), 'DELETE web');
      await core.deleteNamespacedPod({ namespace: 'default', name: 'web', gracePeriodSeconds: 0 });
      await until(() => got.includes('REMOVE web'), 'REMOVE web');
      expect(got).toEqual(['ADD before', 'ADD web', 'UPDATE web', 'DELETE web', 'REMOVE web']);
    } finally {
      abort.abort();
      await running;
    }
  });

  it('reports 410 Gone for a compacted resourceVersion', async () => {
    const lw = new KubePodListWatch(loadKubeConfig(kubeconfig), 'gone-node');
    const { resourceVersion } = await lw.list();
    for (let i = 0; i < 8; i++)
      await core.createNamespacedPod({ namespace: 'default', body: podOn(`churn-${i}`, 'x') });
    const w = lw.watch(resourceVersion, () => {});
    await expect(w.done).rejects.toBeInstanceOf(ResourceExpiredError);
  });

  it('ends a silent watch cleanly, so the source resumes at once; an unanswered one fails', async () => {
    const quiet = new KubePodListWatch(loadKubeConfig(kubeconfig), 'quiet-node', { idleTimeoutMs: 300 });
    const { resourceVersion } = await quiet.list();
    // The server sends nothing for this node (bookmarks come once a minute): client-node times out.
    await expect(quiet.watch(resourceVersion, () => {}).done).resolves.toBeUndefined();

    const kc = loadKubeConfig(kubeconfig);
    const cluster = kc.getCurrentCluster();
    // A server that accepts the connection and never answers.
    const { createServer } = await import('node:net');
    const silent = createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    kc.clusters = kc.clusters.map((c) =>
      c.name === cluster?.name ? { ...c, server: `https://127.0.0.1:${port}` } : c,
    );
    const unanswered = new KubePodListWatch(kc, 'quiet-node', { idleTimeoutMs: 300 });
    await expect(unanswered.watch(resourceVersion, () => {}).done).rejects.toThrow(/timeout/);
    silent.close();
  });
});
