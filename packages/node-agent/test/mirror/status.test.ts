// A static pod's status goes to its mirror pod: same name, another UID, recognised by the
// config.mirror annotation; never deleted by the status manager.

import { FakeClock } from '@kh/apimachinery';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { staticPodFromManifest } from '../../src/podconfig/file_source.js';
import { PodStatusManager } from '../../src/status/status_manager.js';
import { ConfigMirrorAnnotation } from '../../src/types/pod_update.js';
import { MemoryNodeApi } from '../helpers/memory_api.js';

const staticPod = staticPodFromManifest(
  'apiVersion: v1\nkind: Pod\nmetadata: {name: etcd, namespace: kube-system}\nspec: {containers: [{name: etcd, image: etcd}]}\n',
  '/m/etcd.yaml',
  'node-a',
);
const running: V1PodStatus = {
  phase: 'Running',
  podIP: '10.0.0.9',
  conditions: [{ type: 'Ready', status: 'True' }],
};
const mirrorWith = (hash: string, extra: Partial<NonNullable<V1Pod['metadata']>> = {}): V1Pod => ({
  metadata: {
    name: staticPod.metadata?.name,
    namespace: 'kube-system',
    annotations: { [ConfigMirrorAnnotation]: hash },
    ...extra,
  },
  spec: staticPod.spec,
});

describe('status of static pods', () => {
  it('is written to the mirror pod once it exists, and again to a recreated mirror', async () => {
    const api = new MemoryNodeApi();
    const sm = new PodStatusManager({ api, clock: new FakeClock() });
    const uid = staticPod.metadata?.uid ?? '';
    sm.setPodStatus(staticPod, running);
    await sm.syncBatch();
    expect(api.podStatusPatches).toEqual([]);

    // A mirror of an older manifest version is not ours.
    api.addPod(mirrorWith('old-hash'));
    await sm.syncBatch();
    expect(api.podStatusPatches).toEqual([]);

    api.pods.clear();
    const mirror = api.addPod(mirrorWith(uid));
    expect(mirror.metadata?.uid).not.toBe(uid);
    await sm.syncBatch();
    expect(api.pods.get('kube-system/etcd-node-a')?.status).toMatchObject({
      phase: 'Running',
      podIP: '10.0.0.9',
    });
    expect(api.podStatusPatches).toHaveLength(1);
    await sm.syncBatch();
    expect(api.podStatusPatches).toHaveLength(1);

    // The mirror pod is deleted and recreated without status: the same status is written again.
    api.pods.clear();
    api.addPod(mirrorWith(uid));
    await sm.syncBatch();
    expect(api.pods.get('kube-system/etcd-node-a')?.status?.phase).toBe('Running');
    expect(sm.getPodStatus(uid)?.phase).toBe('Running');
  });

  it('never deletes a mirror pod marked for deletion (the mirror manager recreates it)', async () => {
    const api = new MemoryNodeApi();
    const sm = new PodStatusManager({ api, clock: new FakeClock() });
    const uid = staticPod.metadata?.uid ?? '';
    api.addPod(mirrorWith(uid, { deletionTimestamp: new Date() }));
    sm.setPodStatus(staticPod, { phase: 'Succeeded' });
    await sm.syncBatch();
    await sm.syncBatch();
    expect(api.calls).not.toContain('deletePod');
    expect(api.pods.has('kube-system/etcd-node-a')).toBe(true);
  });
});
