// One pod's passes (PodSync) on the status its worker hands in. The runtime here syncs, kills and,
// after a kill, answers with `afterKill`: every other status a pass reports comes from what it
// was handed.
import { FakeClock } from '@kh/apimachinery';
import {
  type ContainerStatus,
  newCrashLoopBackoff,
  type PodStatus,
  type RunningPod,
  SyncStepError,
} from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PodManager } from '../src/pods/pod_manager.js';
import { PodSync, type PodSyncDeps } from '../src/pods/pod_sync.js';
import { ReasonCache } from '../src/status/reason_cache.js';
import { PodStatusManager } from '../src/status/status_manager.js';
import { MemoryNodeApi } from './helpers/memory_api.js';

const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'uid-web' },
  spec: { nodeName: 'node-a', restartPolicy: 'Always', containers: [{ name: 'app', image: 'busybox' }] },
};

const app = (over: Partial<ContainerStatus>): ContainerStatus => ({
  id: { type: 'containerd', id: 'c1' },
  name: 'app',
  state: 'running',
  createdAt: new Date(1_000),
  startedAt: new Date(2_000),
  image: 'busybox',
  imageRef: 'sha256:b',
  hash: '1',
  restartCount: 0,
  ...over,
});

const podStatus = (containerStatuses: ContainerStatus[]): PodStatus => ({
  uid: 'uid-web',
  name: 'web',
  namespace: 'default',
  ips: ['10.88.0.7'],
  sandboxStatuses: [
    {
      id: 's1',
      state: 'ready',
      attempt: 0,
      createdAt: new Date(500),
      ip: '10.88.0.7',
      additionalIps: [],
      hostNetwork: false,
    },
  ],
  containerStatuses,
  timestamp: new Date(3_000),
});

function setup(steps: Awaited<ReturnType<PodSyncDeps['runtime']['syncPod']>>['steps'] = []) {
  const clock = new FakeClock();
  const synced: PodStatus[] = [];
  const killed: RunningPod[] = [];
  /** The runtime's status of the pod when the terminating pass reads it back. */
  const afterKill = {
    status: podStatus([app({ state: 'exited', exitCode: 143, finishedAt: new Date(9_000) })]),
  };
  /** What the pass did, in order: its preparation steps as told to the start-up tracker, and the calls. */
  const order: string[] = [];
  const runtime: PodSyncDeps['runtime'] = {
    syncPod: async (_pod, status) => {
      order.push('runtime.syncPod');
      synced.push(status);
      return { steps };
    },
    killPod: async (_pod, running) => {
      killed.push(running);
    },
    getPodStatus: async () => afterKill.status,
  };
  const statusManager = new PodStatusManager({ api: new MemoryNodeApi(), clock });
  const sync = new PodSync({
    runtime,
    statusManager,
    pods: new PodManager(),
    backoff: newCrashLoopBackoff(clock),
    reasons: new ReasonCache(),
    clock,
    nodeIP: '10.0.0.5',
    podCgroups: { ensureExists: async () => void order.push('ensureExists') },
    pullSecrets: async () => {
      order.push('pullSecrets');
      return [];
    },
    startup: { prepared: (uid, step) => void order.push(`${uid} ${step}`) },
  });
  const reported = () => statusManager.getPodStatus('uid-web');
  return { sync, synced, killed, afterKill, reported, statusManager, order };
}

describe('PodSync', () => {
  it('reports the status it is handed, and syncs the runtime from that same status', async () => {
    const t = setup();
    const handed = podStatus([app({})]);
    expect(await t.sync.syncPod(pod, handed)).toBe(false);
    expect(t.synced).toHaveLength(1);
    expect(t.synced[0]).toBe(handed);
    expect(t.reported()).toMatchObject({
      phase: 'Running',
      podIP: '10.88.0.7',
      containerStatuses: [{ name: 'app', containerID: 'containerd://c1', state: { running: {} } }],
    });
  });

  it('tells the start-up tracker where its preparation is, step by step, before the runtime', async () => {
    const t = setup();
    await t.sync.syncPod(pod, podStatus([]));
    expect(t.order).toEqual([
      'uid-web status',
      'ensureExists',
      'uid-web cgroups',
      'pullSecrets',
      'uid-web secrets',
      'runtime.syncPod',
    ]);
  });

  it("hands the runtime a hostNetwork pod's status with the node's IP, as the kubelet copies the API status's", async () => {
    const t = setup();
    const hostNet: V1Pod = { ...pod, spec: { ...pod.spec!, hostNetwork: true } };
    const handed = { ...podStatus([]), ips: [] };
    await t.sync.syncPod(hostNet, handed);
    expect(t.synced[0]?.ips).toEqual(['10.0.0.5']);
    // The status it was handed (the pod cache's) is left as the runtime reported it.
    expect(handed.ips).toEqual([]);
  });

  it('reports a failed start again at once, with its reason, on the status the pass began with', async () => {
    const pullFailed = new SyncStepError('ErrImagePull', 'failed to pull image "busybox": not found');
    const t = setup([{ action: 'StartContainer', target: 'app', error: pullFailed, reason: 'ErrImagePull' }]);
    await expect(t.sync.syncPod(pod, podStatus([]))).rejects.toBe(pullFailed);
    expect(t.reported()?.containerStatuses?.[0]?.state).toEqual({
      waiting: { reason: 'ErrImagePull', message: 'failed to pull image "busybox": not found' },
    });
  });

  it("kills what the handed status shows running, then reports the runtime's stopped status at once", async () => {
    const t = setup();
    await t.sync.syncPod(pod, podStatus([app({})]));
    await t.sync.syncTerminatingPod(pod, podStatus([app({})]), 5);
    expect(t.killed).toEqual([
      expect.objectContaining({ uid: 'uid-web', sandboxes: [{ id: 's1', state: 'ready' }] }),
    ]);
    expect(t.killed[0]?.containers.map((c) => c.id.id)).toEqual(['c1']);
    // As the kubelet's stoppedPodStatus: terminal without waiting for the next relist.
    expect(t.reported()).toMatchObject({ phase: 'Failed', podIP: '10.88.0.7' });
    expect(t.reported()?.containerStatuses?.[0]?.state?.terminated).toMatchObject({ exitCode: 143 });
    // The terminated pass reports again from the cache, which still shows the end state.
    await t.sync.syncTerminatedPod(pod, t.afterKill.status);
    expect(t.reported()?.containerStatuses?.[0]?.state?.terminated).toMatchObject({ exitCode: 143 });
  });

  it('fails the terminating pass when a container still runs after the kill (a CRI violation)', async () => {
    const t = setup();
    await t.sync.syncPod(pod, podStatus([app({})]));
    t.afterKill.status = podStatus([app({})]);
    await expect(t.sync.syncTerminatingPod(pod, podStatus([app({})]), 5)).rejects.toThrow(
      'detected running containers after a successful KillPod, CRI violation: app',
    );
    expect(t.reported()?.phase).not.toBe('Failed');
  });
});
