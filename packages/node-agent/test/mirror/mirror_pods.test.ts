// Mirror pods on an in-memory API: creation, recreation on delete and on a stale hash, orphan
// removal, and mirror pods kept away from the sync loop.
import { randomUUID } from 'node:crypto';
import { FakeClock } from '@kh/apimachinery';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/node_api.js';
import type { MirrorPodApi } from '../../src/mirror/mirror_client.js';
import { MIRROR_RETRY_MS, MirrorPodManager } from '../../src/mirror/mirror_pods.js';
import { staticPodFromManifest } from '../../src/podconfig/file_source.js';
import { ConfigMirrorAnnotation, type PodSource, type PodUpdate } from '../../src/types/pod_update.js';

class MemoryMirrorApi implements MirrorPodApi {
  readonly pods = new Map<string, V1Pod>();
  readonly calls: string[] = [];
  node: V1Node | undefined = { metadata: { name: 'node-a', uid: 'node-uid-1' } };

  async getNode(name: string) {
    return this.node?.metadata?.name === name ? structuredClone(this.node) : undefined;
  }

  async createPod(pod: V1Pod) {
    const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    this.calls.push(`create ${key}`);
    if (this.pods.has(key))
      throw new ApiError(409, `pods "${pod.metadata?.name}" already exists`, 'AlreadyExists');
    const stored = structuredClone(pod);
    stored.metadata = { ...stored.metadata, uid: randomUUID() };
    this.pods.set(key, stored);
    return structuredClone(stored);
  }

  async deletePod(namespace: string, name: string, uid: string) {
    const key = `${namespace}/${name}`;
    this.calls.push(`delete ${key}`);
    const p = this.pods.get(key);
    if (!p) throw new ApiError(404, 'not found', 'NotFound');
    if (p.metadata?.uid !== uid) throw new ApiError(409, 'Precondition failed', 'Conflict');
    this.pods.delete(key);
  }
}

/** A source the test drives by hand. */
class ManualSource implements PodSource {
  deliver: ((u: PodUpdate) => void) | undefined;
  listed = false;
  ready() {
    return this.listed;
  }
  run(_signal: AbortSignal, deliver: (u: PodUpdate) => void) {
    this.deliver = deliver;
    return Promise.resolve();
  }
}

const manifest = (image: string) => `apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
  labels: { component: etcd }
spec:
  containers:
    - name: etcd
      image: ${image}
`;
const staticPod = (image = 'etcd:3.5') =>
  staticPodFromManifest(manifest(image), '/etc/kubernetes/manifests/etcd.yaml', 'node-a');

function setup() {
  const api = new MemoryMirrorApi();
  const created: string[] = [];
  const mgr = new MirrorPodManager({
    api,
    nodeName: 'node-a',
    clock: new FakeClock(),
    onMirrorCreated: (m) => created.push(m.metadata?.uid ?? ''),
  });
  const file = new ManualSource();
  const apiSource = new ManualSource();
  const delivered: PodUpdate[] = [];
  const signal = new AbortController().signal;
  void mgr.wrap(file).run(signal, (u) => delivered.push(u));
  void mgr.wrap(apiSource).run(signal, (u) => delivered.push(u));
  file.listed = true;
  apiSource.listed = true;
  const fromFile = (op: PodUpdate['op'], pods: V1Pod[]) => file.deliver?.({ op, pods, source: 'file' });
  const fromApi = (op: PodUpdate['op'], pods: V1Pod[]) => apiSource.deliver?.({ op, pods, source: 'api' });
  const mirror = () => api.pods.get('kube-system/etcd-node-a');
  return { api, mgr, file, apiSource, delivered, fromFile, fromApi, mirror, created };
}

describe('MirrorPodManager', () => {
  it('creates a mirror pod: the static pod with the config.mirror hash, owned by the Node', async () => {
    const { api, mgr, fromFile, mirror, created } = setup();
    const sp = staticPod();
    fromFile('ADD', [sp]);
    await mgr.reconcile();
    const m = mirror();
    expect(m?.metadata).toMatchObject({
      name: 'etcd-node-a',
      namespace: 'kube-system',
      labels: { component: 'etcd' },
      annotations: {
        [ConfigMirrorAnnotation]: sp.metadata?.uid,
        'kubernetes.io/config.hash': sp.metadata?.uid,
        'kubernetes.io/config.source': 'file',
      },
      ownerReferences: [
        { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-uid-1', controller: true },
      ],
    });
    expect(m?.metadata?.uid).not.toBe(sp.metadata?.uid);
    expect(m?.spec).toEqual(sp.spec);
    expect(m?.status).toBeUndefined();
    expect(mgr.getMirrorPodByPod(sp)?.metadata?.uid).toBe(m?.metadata?.uid);
    // In sync: another pass writes nothing.
    await mgr.reconcile();
    expect(api.calls).toEqual(['create kube-system/etcd-node-a']);
    expect(created).toEqual([m?.metadata?.uid]);
  });

  it('waits for every source to list, and for a Node that is not being deleted', async () => {
    const { api, mgr, file, fromFile, mirror } = setup();
    file.listed = false;
    fromFile('ADD', [staticPod()]);
    expect(await mgr.reconcile()).toBe(false);
    expect(api.calls).toEqual([]);
    file.listed = true;
    api.node = undefined;
    expect(await mgr.reconcile()).toBe(false);
    expect(mirror()).toBeUndefined();
    api.node = { metadata: { name: 'node-a', uid: 'n', deletionTimestamp: new Date() } };
    expect(await mgr.reconcile()).toBe(false);
    expect(mirror()).toBeUndefined();
    api.node = { metadata: { name: 'node-a', uid: 'n' } };
    expect(await mgr.reconcile()).toBe(true);
    expect(mirror()?.metadata?.ownerReferences?.[0]?.uid).toBe('n');
  });

  it('retries soon while it cannot start, without waiting for the resync period', async () => {
    const clock = new FakeClock();
    const api = new MemoryMirrorApi();
    api.node = undefined;
    const mgr = new MirrorPodManager({ api, nodeName: 'node-a', clock, resyncMs: 60_000 });
    const file = new ManualSource();
    const abort = new AbortController();
    void mgr.wrap(file).run(abort.signal, () => {});
    const running = mgr.run(abort.signal);
    file.deliver?.({ op: 'ADD', pods: [staticPod()], source: 'file' });
    await clock.advance(MIRROR_RETRY_MS); // not listed yet
    expect(api.calls).toEqual([]);
    file.listed = true;
    await clock.advance(MIRROR_RETRY_MS); // listed, but the Node is not registered yet
    expect(api.calls).toEqual([]);
    api.node = { metadata: { name: 'node-a', uid: 'n' } };
    await clock.advance(MIRROR_RETRY_MS);
    expect(api.calls).toEqual(['create kube-system/etcd-node-a']);
    abort.abort();
    await running;
  });

  it('keeps mirror pods from the API away from the sync loop, passing the rest on', async () => {
    const { mgr, fromFile, fromApi, delivered, mirror } = setup();
    fromFile('ADD', [staticPod()]);
    await mgr.reconcile();
    const web: V1Pod = {
      metadata: { name: 'web', namespace: 'default', uid: 'w' },
      spec: { containers: [] },
    };
    fromApi('ADD', [mirror() as V1Pod, web]);
    fromApi('RECONCILE', [mirror() as V1Pod]);
    expect(
      delivered.map((u) => `${u.source} ${u.op} ${u.pods.map((p) => p.metadata?.name).join(',')}`),
    ).toEqual(['file ADD etcd-node-a', 'api ADD web']);
  });

  it('recreates a mirror pod that was deleted, or marked for deletion', async () => {
    const { api, mgr, fromFile, fromApi, mirror } = setup();
    fromFile('ADD', [staticPod()]);
    await mgr.reconcile();
    const first = mirror() as V1Pod;
    fromApi('ADD', [first]);
    // Someone deleted it outright.
    api.pods.clear();
    fromApi('REMOVE', [first]);
    await mgr.reconcile();
    const second = mirror() as V1Pod;
    expect(second.metadata?.uid).not.toBe(first.metadata?.uid);
    // kubectl delete on a node-bound pod sets deletionTimestamp: the agent deletes and recreates.
    fromApi('DELETE', [{ ...second, metadata: { ...second.metadata, deletionTimestamp: new Date() } }]);
    await mgr.reconcile();
    const third = mirror() as V1Pod;
    expect(third.metadata?.uid).not.toBe(second.metadata?.uid);
    expect(third.metadata?.deletionTimestamp).toBeUndefined();
    // The watch's late news of the old ones does not drop the new one.
    fromApi('REMOVE', [second]);
    await mgr.reconcile();
    expect(mirror()?.metadata?.uid).toBe(third.metadata?.uid);
    expect(api.calls).toEqual([
      'create kube-system/etcd-node-a',
      'create kube-system/etcd-node-a',
      'delete kube-system/etcd-node-a',
      'create kube-system/etcd-node-a',
    ]);
  });

  it('replaces a mirror whose hash is stale after the manifest changed', async () => {
    const { mgr, fromFile, fromApi, mirror } = setup();
    const v1 = staticPod('etcd:3.5');
    fromFile('ADD', [v1]);
    await mgr.reconcile();
    fromApi('ADD', [mirror() as V1Pod]);
    const v2 = staticPod('etcd:3.6');
    // The file source reports an edit as the old pod removed and a new one (new UID) added.
    fromFile('REMOVE', [v1]);
    fromFile('ADD', [v2]);
    expect(mgr.getMirrorPodByPod(v2)).toBeUndefined();
    await mgr.reconcile();
    expect(mirror()?.metadata?.annotations?.[ConfigMirrorAnnotation]).toBe(v2.metadata?.uid);
    expect(mirror()?.spec?.containers[0]?.image).toBe('etcd:3.6');
    expect(mgr.getMirrorPodByPod(v2)).toBeDefined();
  });

  it('deletes mirror pods whose static pod is gone, including ones left from before a restart', async () => {
    const { api, mgr, fromFile, fromApi, mirror } = setup();
    const sp = staticPod();
    fromFile('ADD', [sp]);
    await mgr.reconcile();
    fromApi('ADD', [mirror() as V1Pod]);
    fromFile('REMOVE', [sp]);
    await mgr.reconcile();
    expect(mirror()).toBeUndefined();

    const leftover = await api.createPod({
      metadata: { name: 'old-node-a', namespace: 'default', annotations: { [ConfigMirrorAnnotation]: 'h' } },
    });
    fromApi('ADD', [leftover]);
    await mgr.reconcile();
    expect(api.pods.has('default/old-node-a')).toBe(false);
  });
});
