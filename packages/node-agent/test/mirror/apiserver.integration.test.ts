// Mirror pods end to end on the fake apiserver: the real file and API sources wrapped by the
// MirrorPodManager, the status manager writing the static pod's status, and kubectl looking.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { realClock } from '@kh/apimachinery';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeNodeApi, loadKubeConfig } from '../../src/api/node_api.js';
import { KubeMirrorPodApi } from '../../src/mirror/mirror_client.js';
import { MirrorPodManager } from '../../src/mirror/mirror_pods.js';
import { ApiServerPodSource, KubePodListWatch } from '../../src/podconfig/apiserver_source.js';
import { FileStaticPodSource } from '../../src/podconfig/file_source.js';
import { PodStatusManager } from '../../src/status/status_manager.js';
import { ConfigMirrorAnnotation, type PodUpdate } from '../../src/types/pod_update.js';
import { startTestApiServer, type TestApiServer } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';

const NODE = 'mirror-node';
const dir = mkdtempSync(join(tmpdir(), 'kh-mirror-'));
const manifests = join(dir, 'manifests');
let apiserver: TestApiServer;
let kubeconfig: string;
let core: CoreV1Api;

beforeAll(async () => {
  apiserver = await startTestApiServer();
  kubeconfig = apiserver.kubeconfig;
  core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
  await core.createNode({ body: { metadata: { name: NODE } } });
  mkdirSync(manifests);
});
afterAll(() => apiserver?.stop());

const manifest = (image: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-proxy\n  namespace: kube-system\nspec:\n  containers:\n    - name: proxy\n      image: ${image}\n`;

async function eventually<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const readMirror = () =>
  core.readNamespacedPod({ namespace: 'kube-system', name: `kube-proxy-${NODE}` }).catch(() => undefined);

describe('mirror pods on the fake apiserver', () => {
  it('creates, restores, updates and removes the mirror of a static pod, carrying its status', async () => {
    const kc = loadKubeConfig(kubeconfig);
    const node = await core.readNode({ name: NODE });
    const mirrors = new MirrorPodManager({
      api: new KubeMirrorPodApi(kc),
      nodeName: NODE,
      clock: realClock,
      resyncMs: 100,
    });
    const statuses = new PodStatusManager({ api: new KubeNodeApi(kc), clock: realClock, syncPeriodMs: 50 });
    const delivered: PodUpdate[] = [];
    const deliver = (u: PodUpdate) => {
      delivered.push(u);
      // What the pod workers would report for a running static pod.
      if (u.source === 'file' && u.op === 'ADD')
        for (const p of u.pods) statuses.setPodStatus(p, { phase: 'Running', podIP: '10.9.0.1' });
    };
    writeFileSync(join(manifests, 'kube-proxy.yaml'), manifest('proxy:1'));
    const abort = new AbortController();
    const loops = [
      mirrors
        .wrap(new FileStaticPodSource({ path: manifests, nodeName: NODE, clock: realClock, periodMs: 50 }))
        .run(abort.signal, deliver),
      mirrors
        .wrap(new ApiServerPodSource({ lw: new KubePodListWatch(kc, NODE), clock: realClock }))
        .run(abort.signal, deliver),
      mirrors.run(abort.signal),
      statuses.run(abort.signal),
    ];
    try {
      const first = await eventually('the mirror pod with status', async () => {
        const m = await readMirror();
        return m?.status?.phase === 'Running' ? m : undefined;
      });
      const staticPod = delivered.find((u) => u.source === 'file')?.pods[0] as V1Pod;
      expect(first.metadata?.annotations?.[ConfigMirrorAnnotation]).toBe(staticPod.metadata?.uid);
      expect(first.metadata?.ownerReferences).toEqual([
        { apiVersion: 'v1', kind: 'Node', name: NODE, uid: node.metadata?.uid, controller: true },
      ]);
      expect(first.status?.podIP).toBe('10.9.0.1');
      // The sync loop never sees the mirror pod.
      expect(delivered.filter((u) => u.source === 'api').flatMap((u) => u.pods)).toEqual([]);

      // kubectl delete marks it (bound to a node); the agent deletes and recreates it, with status.
      await kubectl(kubeconfig, 'delete', 'pod', '-n', 'kube-system', `kube-proxy-${NODE}`, '--wait=false');
      const second = await eventually('a recreated mirror pod', async () => {
        const m = await readMirror();
        return m && m.metadata?.uid !== first.metadata?.uid && m.status?.phase === 'Running' ? m : undefined;
      });
      expect(second.metadata?.deletionTimestamp).toBeUndefined();

      // An edited manifest is a new static pod: the stale mirror is replaced.
      writeFileSync(join(manifests, 'kube-proxy.yaml'), manifest('proxy:2'));
      const third = await eventually('a mirror pod of the new manifest', async () => {
        const m = await readMirror();
        return m?.spec?.containers[0]?.image === 'proxy:2' ? m : undefined;
      });
      expect(third.metadata?.annotations?.[ConfigMirrorAnnotation]).not.toBe(
        first.metadata?.annotations?.[ConfigMirrorAnnotation],
      );
      const shown = await kubectl(kubeconfig, 'get', 'pods', '-n', 'kube-system', '-o', 'name');
      expect(shown.trim()).toBe(`pod/kube-proxy-${NODE}`);

      // Manifest gone: so is the mirror.
      rmSync(join(manifests, 'kube-proxy.yaml'));
      await eventually('the mirror pod removed', async () => ((await readMirror()) ? undefined : true));
    } finally {
      abort.abort();
      await Promise.all(loops);
    }
  });
});
