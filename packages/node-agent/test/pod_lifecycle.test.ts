import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import {
  type ContainerID,
  type ContainerStatus,
  newCrashLoopBackoff,
  type PodStatus,
  type RunningPod,
  SyncStepError,
} from '@kh/runtime-manager';
import type { V1Node, V1Pod, V1Secret } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PredicateAdmitHandler } from '../src/admission/predicate.js';
import type { PodCgroups } from '../src/cm/container_manager.js';
import { KubeletEventRecorder } from '../src/events/recorder.js';
import { terminationByKubeletStatus } from '../src/eviction/messages.js';
import { newPodLayer } from '../src/main_kubelet.js';
import { killPodTimeoutMs, PodLifecycle } from '../src/pods/pod_lifecycle.js';
import { PodManager } from '../src/pods/pod_manager.js';
import { PodStartupTracker } from '../src/pods/startup_tracker.js';
import { ReasonCache } from '../src/status/reason_cache.js';
import { UsernsManager } from '../src/userns/userns_manager.js';
import { OrphanedPodDirs } from '../src/volumemanager/orphaned_pod_dirs.js';
import { MemoryNodeApi } from './helpers/memory_api.js';
import { relistingPodCache } from './helpers/pleg.js';

const node: V1Node = {
  metadata: { name: 'node-a', labels: {} },
  status: { allocatable: { cpu: '2', memory: '4Gi', pods: '110' } },
};

/** Records what the lifecycle asks of the runtime; pods "run" once synced. */
class RecordingRuntime {
  calls: string[] = [];
  running: RunningPod[] = [];
  status(uid: string, name: string, namespace: string): PodStatus {
    return {
      uid,
      name,
      namespace,
      ips: [],
      sandboxStatuses: [],
      containerStatuses: [],
      timestamp: new Date(0),
    };
  }
  secretsSeen: string[][] = [];
  syncPod = async (pod: V1Pod, _status: PodStatus, secrets: V1Secret[]) => {
    this.calls.push(`sync ${pod.metadata?.name}`);
    this.secretsSeen.push(secrets.map((s) => s.metadata?.name ?? ''));
    return { steps: [] };
  };
  /** Set to hold kills open (a container with a long grace period). */
  killGate: Promise<void> | undefined;
  killGraces: (number | undefined)[] = [];
  killPod = async (pod: V1Pod | undefined, rp: RunningPod, grace?: number) => {
    this.calls.push(`kill ${pod?.metadata?.name ?? `orphan:${rp.name}`}`);
    this.killGraces.push(grace);
    await this.killGate;
  };
  /** After a kill nothing runs: the status the terminating pass reads back. */
  getPodStatus = async (uid: string, name: string, namespace: string) => this.status(uid, name, namespace);
  getPods = async () => this.running;
  deleteContainer = async (id: ContainerID) => {
    this.calls.push(`delete ${id.id}`);
  };
}

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

function setup(
  opts: {
    startup?: PodStartupTracker;
    podCgroups?: PodCgroups;
    userNamespaces?: UsernsManager;
    podDirs?: OrphanedPodDirs;
    recorder?: KubeletEventRecorder;
  } = {},
) {
  const api = new MemoryNodeApi();
  const clock = new FakeClock();
  const runtime = new RecordingRuntime();
  const pods = new PodManager();
  const { cache: podCache, stop } = relistingPodCache(clock);
  stops.push(stop);
  const layer = newPodLayer({
    ...opts,
    api,
    pods,
    runtime,
    podCache,
    backoff: newCrashLoopBackoff(clock),
    clock,
    nodeIP: '10.0.0.5',
    admit: new PredicateAdmitHandler(() => node),
    resyncIntervalMs: 60_000,
  });
  /** Writes the pod's runtime status as the PLEG does when it sees the pod change. */
  const relisted = (uid: string, containerStatuses: ContainerStatus[]) =>
    podCache.set({ ...runtime.status(uid, uid, 'default'), containerStatuses }, podCache.now());
  return { api, clock, runtime, pods, podCache, relisted, ...layer };
}

const pod = (name: string, cpu?: string): V1Pod => ({
  metadata: { name, namespace: 'default', uid: name },
  spec: {
    nodeName: 'node-a',
    containers: [{ name: 'c', image: 'x', ...(cpu ? { resources: { requests: { cpu } } } : {}) }],
  },
});

describe('PodLifecycle', () => {
  it('admits and syncs new pods, kills removed ones, and resyncs every syncFrequency', async () => {
    const { clock, runtime, lifecycle, workers, pods } = setup();
    await lifecycle.handlePodAdditions([pod('a'), pod('b')]);
    await workers.settle();
    expect(runtime.calls).toEqual(['sync a', 'sync b']);
    expect(lifecycle.podsToSync(clock.now())).toEqual([]);
    expect(lifecycle.podsToSync(clock.now() + 60_000).map((p) => p.metadata?.name)).toEqual(['a', 'b']);
    await lifecycle.handlePodRemoves([pod('b')]);
    await workers.settle();
    expect(runtime.calls).toEqual(['sync a', 'sync b', 'kill b']);
    expect(pods.getPods().map((p) => p.metadata?.name)).toEqual(['a']);
  });

  it("passes the pod's image pull secrets to every sync", async () => {
    const { api, runtime, lifecycle, workers } = setup();
    api.secrets.set('default/regcred', { metadata: { name: 'regcred', namespace: 'default' } });
    const p = pod('private');
    p.spec!.imagePullSecrets = [{ name: 'regcred' }];
    await lifecycle.handlePodAdditions([p]);
    await workers.settle();
    expect(runtime.secretsSeen).toEqual([['regcred']]);
  });

  it('fails a pod that does not fit, and updates do not start it', async () => {
    const { api, runtime, lifecycle, workers, statusManager } = setup();
    api.addPod(pod('big', '3'));
    await lifecycle.handlePodAdditions([pod('big', '3')]);
    await lifecycle.handlePodUpdates([pod('big', '3')]);
    await workers.settle();
    expect(runtime.calls).toEqual([]);
    expect(statusManager.getPodStatus('big')).toMatchObject({ phase: 'Failed', reason: 'OutOfcpu' });
    await statusManager.syncBatch();
    expect(api.pods.get('default/big')?.status?.reason).toBe('OutOfcpu');
  });

  it('tells the start-up tracker which pods were admitted and when their workers began', async () => {
    const startup = new PodStartupTracker({ clock: new FakeClock(5_000) });
    const { lifecycle, workers } = setup({ startup });
    for (const p of [pod('small'), pod('big', '3')]) startup.seen(p);
    await lifecycle.handlePodAdditions([pod('small'), pod('big', '3')]);
    await workers.settle();
    expect(startup.list().map((r) => [r.name, r.admittedAt, r.workerStartedAt])).toEqual([
      ['small', 5_000, 5_000],
      ['big', undefined, undefined], // refused: it never starts
    ]);
  });

  it('kills orphans (running pods nobody wants) during housekeeping', async () => {
    const { runtime, lifecycle, workers } = setup();
    await lifecycle.handlePodAdditions([pod('a')]);
    await workers.settle();
    runtime.running = [
      { uid: 'a', name: 'a', namespace: 'default', sandboxes: [], containers: [] },
      { uid: 'ghost', name: 'ghost', namespace: 'default', sandboxes: [], containers: [] },
    ];
    await lifecycle.handlePodCleanups();
    expect(runtime.calls).toEqual(['sync a', 'kill orphan:ghost']);
  });

  it('leaves a removed pod that its worker is still stopping to the worker', async () => {
    const { runtime, lifecycle, workers } = setup();
    await lifecycle.handlePodAdditions([pod('a')]);
    await workers.settle();
    let release = () => {};
    runtime.killGate = new Promise((r) => {
      release = r;
    });
    await lifecycle.handlePodRemoves([pod('a')]);
    const kills = () => runtime.calls.filter((c) => c.startsWith('kill'));
    await vi.waitFor(() => expect(kills()).toEqual(['kill a'])); // once the cache is refreshed
    runtime.running = [{ uid: 'a', name: 'a', namespace: 'default', sandboxes: [], containers: [] }];
    await lifecycle.handlePodCleanups();
    expect(kills()).toEqual(['kill a']);
    release();
    await workers.settle();
  });

  it('kills an orphan with 1 s of grace, once, without holding up housekeeping', async () => {
    const { runtime, lifecycle } = setup();
    let release = () => {};
    runtime.killGate = new Promise((r) => {
      release = r;
    });
    runtime.running = [{ uid: 'ghost', name: 'ghost', namespace: 'default', sandboxes: [], containers: [] }];
    // The kill is still in progress, yet housekeeping returns, and the next pass does not kill again.
    await lifecycle.handlePodCleanups();
    await lifecycle.handlePodCleanups();
    expect(runtime.calls).toEqual(['kill orphan:ghost']);
    expect(runtime.killGraces).toEqual([1]);
    release();
    await new Promise((r) => setTimeout(r, 0));
    await lifecycle.handlePodCleanups();
    expect(runtime.calls).toEqual(['kill orphan:ghost', 'kill orphan:ghost']);
  });

  it('starts a pod removed and added again with its UID afresh once housekeeping forgot the old run', async () => {
    const { runtime, lifecycle, workers, statusManager } = setup();
    await lifecycle.handlePodAdditions([pod('a')]);
    await workers.settle();
    await lifecycle.handlePodRemoves([pod('a')]);
    await lifecycle.handlePodAdditions([pod('a')]);
    await workers.settle();
    expect(runtime.calls).toEqual(['sync a', 'kill a']);
    // The old run ended as a killed pod whose containers exited 0 does.
    statusManager.setPodStatus(pod('a'), { phase: 'Succeeded' });
    await lifecycle.handlePodCleanups();
    await workers.settle();
    expect(runtime.calls).toEqual(['sync a', 'kill a', 'sync a']);
    // Not the terminal phase of the run before: the new run's own.
    expect(statusManager.getPodStatus('a')?.phase).toBe('Pending');
    // Running, it is not restarted again.
    await lifecycle.handlePodCleanups();
    await workers.settle();
    expect(runtime.calls).toHaveLength(3);
  });

  it('reports the generated status to the status manager', async () => {
    const { lifecycle, workers, statusManager } = setup();
    await lifecycle.handlePodAdditions([pod('a')]);
    await workers.settle();
    expect(statusManager.getPodStatus('a')).toMatchObject({
      phase: 'Pending',
      hostIP: '10.0.0.5',
      containerStatuses: [{ name: 'c', state: { waiting: { reason: 'ContainerCreating' } } }],
    });
  });
});

describe('PodLifecycle housekeeping and the reason cache', () => {
  it('forgets why the containers of removed pods failed to start', async () => {
    const { pods, workers, statusManager, runtime, podCache, clock } = setup();
    const reasons = new ReasonCache();
    const lifecycle = new PodLifecycle({
      pods,
      workers,
      statusManager,
      reasons,
      admit: { admit: () => ({ admit: true }) },
      runtime,
      podCache,
      clock,
      resyncIntervalMs: 60_000,
    });
    await lifecycle.handlePodAdditions([pod('a'), pod('b')]);
    await workers.settle();
    const pullFailed = new SyncStepError('ErrImagePull', 'failed to pull image "x"');
    for (const uid of ['a', 'b'])
      reasons.update(uid, {
        steps: [{ action: 'StartContainer', target: 'c', error: pullFailed, reason: 'ErrImagePull' }],
      });
    await lifecycle.handlePodRemoves([pod('b')]);
    await workers.settle();
    await lifecycle.handlePodCleanups();
    expect(reasons.get('a', 'c')?.reason).toBe('ErrImagePull');
    expect(reasons.get('b', 'c')).toBeUndefined();
  });
});

/** Container c of a pod, exited 0: what the runtime shows of a pod that ran to completion. */
const exited = (): ContainerStatus => ({
  id: { type: 'containerd', id: 'c1' },
  name: 'c',
  state: 'exited',
  exitCode: 0,
  createdAt: new Date(0),
  startedAt: new Date(1),
  finishedAt: new Date(2),
  image: 'x',
  imageRef: 'x',
  hash: 'h',
  restartCount: 0,
});

describe('PodLifecycle with a completed pod', () => {
  it('tears a pod down once it ran to completion and never starts it again', async () => {
    const { runtime, lifecycle, workers, statusManager, relisted } = setup();
    relisted('job', [exited()]);
    const done: V1Pod = { ...pod('job'), spec: { ...pod('job').spec!, restartPolicy: 'Never' } };
    await lifecycle.handlePodAdditions([done]);
    await workers.settle();
    expect(statusManager.getPodStatus('job')?.phase).toBe('Succeeded');
    expect(runtime.calls).toEqual(['kill job']); // no runtime sync: it must not restart
    await lifecycle.handlePodSyncs([done]);
    await workers.settle();
    expect(runtime.calls).toEqual(['kill job']); // no runtime sync: it must not restart
  });
});

describe('PodLifecycle after a restart, with a pod the API says finished', () => {
  const finished = (
    name: string,
    deleting: boolean,
    status: V1Pod['status'] = { phase: 'Succeeded' },
  ): V1Pod => ({
    ...pod(name),
    metadata: {
      ...pod(name).metadata,
      ...(deleting ? { deletionTimestamp: new Date(0), deletionGracePeriodSeconds: 30 } : {}),
    },
    spec: { ...pod(name).spec!, restartPolicy: 'Never' },
    status,
  });

  // kubernetes#116925: the kubelet stopped after the pod succeeded and before it deleted it.
  it('terminates it without starting it, and deletes it from the API once it is being deleted', async () => {
    const { api, runtime, lifecycle, workers, statusManager, relisted } = setup();
    relisted('done', [exited()]);
    const p = api.addPod(finished('done', true));
    await lifecycle.handlePodAdditions([p]);
    await workers.settle();
    expect(runtime.calls).toEqual(['kill done']);
    expect(workers.isPodTerminated('done')).toBe(true);
    await statusManager.syncBatch();
    expect(api.pods.has('default/done')).toBe(false);
  });

  it('keeps one that is not being deleted, with its phase, reason and message', async () => {
    const { api, runtime, lifecycle, workers, statusManager, relisted } = setup();
    relisted('rejected', []);
    const status = { phase: 'Failed', reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu" };
    const p = api.addPod(finished('rejected', false, status));
    await lifecycle.handlePodAdditions([p]);
    await workers.settle();
    await statusManager.syncBatch();
    expect(runtime.calls).toEqual(['kill rejected']);
    expect(api.pods.get('default/rejected')?.status).toMatchObject(status);
    expect(lifecycle.activePods()).toEqual([]);
  });
});

describe('PodLifecycle after a container dies (the pod container deletor)', () => {
  const instance = (id: string, name: string, createdAt: number, state: ContainerStatus['state']) =>
    ({
      id: { type: 'fake', id },
      name,
      state,
      createdAt: new Date(createdAt),
      image: 'x',
      imageRef: 'x',
      hash: '0',
      restartCount: 0,
    }) as ContainerStatus;

  function withContainers(containers: ContainerStatus[]) {
    const t = setup();
    t.relisted('a', containers);
    return t;
  }

  it('removes older exited instances of the dead container and keeps the newest', async () => {
    const t = withContainers([
      instance('c3', 'c', 3, 'running'),
      instance('c2', 'c', 2, 'exited'),
      instance('c1', 'c', 1, 'exited'),
      instance('s1', 'sidecar', 1, 'exited'),
    ]);
    await t.lifecycle.handlePodAdditions([pod('a')]);
    await t.workers.settle();
    await t.lifecycle.handlePlegEvent({ podUid: 'a', type: 'ContainerDied', data: 'c2' });
    await t.lifecycle.containerDeletor.idle();
    expect(t.runtime.calls.filter((c) => c.startsWith('delete'))).toEqual(['delete c1']);
  });

  it("removes every exited container of an evicted pod, and counts it reclaimed once they're gone", async () => {
    const t = withContainers([instance('c2', 'c', 2, 'exited'), instance('c1', 'c', 1, 'exited')]);
    const a = pod('a');
    await t.lifecycle.handlePodAdditions([a]);
    await t.workers.settle();
    await t.lifecycle.killPod(a, true, 1, {
      phase: 'Failed',
      reason: 'Evicted',
      message: 'low on disk',
      conditions: [],
    });
    expect(t.pods.shouldPodContentBeRemoved('a')).toBe(true);
    expect(await t.lifecycle.podResourcesAreReclaimed(a)).toBe(false);
    await t.lifecycle.handlePlegEvent({ podUid: 'a', type: 'ContainerDied', data: 'c2' });
    await t.lifecycle.containerDeletor.idle();
    expect(t.runtime.calls.filter((c) => c.startsWith('delete'))).toEqual(['delete c2', 'delete c1']);
    t.relisted('a', []); // the PLEG saw them go
    expect(await t.lifecycle.podResourcesAreReclaimed(a)).toBe(true);
  });

  it("keeps an evicted pod's exited container while the kill is in flight, for the final status", async () => {
    const t = withContainers([instance('c1', 'c', 1, 'exited')]);
    const a = pod('a');
    await t.lifecycle.handlePodAdditions([a]);
    await t.workers.settle();
    let release!: () => void;
    t.runtime.killGate = new Promise((r) => {
      release = r;
    });
    const evicted = t.lifecycle.killPod(a, true, 30, {
      phase: 'Failed',
      reason: 'Evicted',
      message: 'm',
      conditions: [],
    });
    await Promise.resolve();
    expect(t.pods.shouldPodContentBeRemoved('a')).toBe(false);
    await t.lifecycle.handlePlegEvent({ podUid: 'a', type: 'ContainerDied', data: 'c1' });
    await t.lifecycle.containerDeletor.idle();
    expect(t.runtime.calls.filter((c) => c.startsWith('delete'))).toEqual([]);
    release();
    await evicted;
    expect(t.pods.shouldPodContentBeRemoved('a')).toBe(true);
  });

  it('fails a kill the runtime has not finished by the grace period and half again (at least 10 s), with ExceededGracePeriod', async () => {
    const events = new MemoryNodeApi();
    const recorder = new KubeletEventRecorder(events, { host: 'node-a', clock: new FakeClock() });
    const t = setup({ recorder });
    t.relisted('a', [instance('c1', 'c', 1, 'running')]);
    const lifecycle = t.lifecycle;
    const a = pod('a');
    await lifecycle.handlePodAdditions([a]);
    await t.workers.settle();
    t.runtime.killGate = new Promise(() => {}); // a runtime that never stops it
    const status = { phase: 'Failed' as const, reason: 'Evicted', message: 'm', conditions: [] };
    const killed = lifecycle.killPod(a, true, 30, status).catch((err: Error) => err);
    await t.clock.advance(44_999);
    expect(events.events).toEqual([]);
    await t.clock.advance(1);
    expect(((await killed) as Error).message).toBe('timeout waiting to kill pod');
    await recorder.flush();
    expect(events.events.map((e) => [e.type, e.reason, e.message])).toEqual([
      [
        'Warning',
        'ExceededGracePeriod',
        'Container runtime did not kill the pod within specified grace period.',
      ],
    ]);
    expect(killPodTimeoutMs(5)).toBe(10_000);
    expect(killPodTimeoutMs(7)).toBe(10_000);
    expect(killPodTimeoutMs(9)).toBe(13_000);
  });

  it('keeps a running pod unreclaimed', async () => {
    const t = withContainers([instance('c1', 'c', 1, 'running')]);
    const a = pod('a');
    await t.lifecycle.handlePodAdditions([a]);
    await t.workers.settle();
    expect(await t.lifecycle.podResourcesAreReclaimed(a)).toBe(false);
  });
});

// What of a pod the node may remove follows the pod workers' sync status, as the kubelet's
// ShouldPodContentBeRemoved (pod_workers.go): a deleted pod's content once its worker terminated
// it; a pod the workers never saw, once housekeeping synced them.
describe("What of a pod may go: the pod workers' sync status", () => {
  const instance = (id: string): ContainerStatus =>
    ({
      id: { type: 'fake', id },
      name: 'c',
      state: 'exited',
      createdAt: new Date(1),
      image: 'x',
      imageRef: 'x',
      hash: '0',
      restartCount: 0,
    }) as ContainerStatus;

  /** A running pod `a` whose one exited container is c1, and whose kills wait for finish(). */
  async function terminating() {
    const t = setup();
    t.relisted('a', [instance('c1')]);
    await t.lifecycle.handlePodAdditions([pod('a')]);
    await t.workers.settle();
    let release!: () => void;
    t.runtime.killGate = new Promise((r) => {
      release = r;
    });
    const kills = () => t.runtime.calls.filter((c) => c.startsWith('kill'));
    /** The deletions a ContainerDied event of c1 leads to. */
    const deletedOnDeath = async () => {
      await t.lifecycle.handlePlegEvent({ podUid: 'a', type: 'ContainerDied', data: 'c1' });
      await t.lifecycle.containerDeletor.idle();
      return t.runtime.calls.filter((c) => c.startsWith('delete'));
    };
    const finish = async () => {
      release();
      await t.workers.settle();
    };
    return { ...t, kills, deletedOnDeath, finish };
  }

  it('keeps what a pod removed from its source left while its worker stops it, then lets it go', async () => {
    const t = await terminating();
    await t.lifecycle.handlePodRemoves([pod('a')]);
    await vi.waitFor(() => expect(t.kills()).toEqual(['kill a']));
    expect(t.pods.shouldPodContentBeRemoved('a')).toBe(false);
    expect(t.pods.shouldPodRuntimeBeRemoved('a')).toBe(false);
    expect(await t.deletedOnDeath()).toEqual([]); // the newest exited instance stays
    // Housekeeping finds it no longer desired (deleted), but its worker has not finished.
    await t.lifecycle.handlePodCleanups();
    expect(t.pods.shouldPodContentBeRemoved('a')).toBe(false);
    await t.finish();
    expect(t.pods.shouldPodContentBeRemoved('a')).toBe(true);
    expect(t.pods.shouldPodRuntimeBeRemoved('a')).toBe(true);
    expect(await t.deletedOnDeath()).toEqual(['delete c1']);
  });

  it('lets the content of a pod deleted through the API go once its worker terminated it', async () => {
    const t = await terminating();
    const deleting = {
      ...pod('a'),
      metadata: { ...pod('a').metadata, deletionTimestamp: new Date(0), deletionGracePeriodSeconds: 30 },
    };
    await t.lifecycle.handlePodUpdates([deleting]);
    await vi.waitFor(() => expect(t.kills()).toEqual(['kill a']));
    expect(t.pods.shouldPodContentBeRemoved('a')).toBe(false);
    expect(await t.deletedOnDeath()).toEqual([]);
    await t.finish();
    // Still listed by its source (the status manager has yet to delete it): deleted and terminated.
    expect(t.pods.has('a')).toBe(true);
    expect(t.pods.shouldPodContentBeRemoved('a')).toBe(true);
  });

  it('keeps the content of a pod killed for node shutdown (not an eviction), with its status', async () => {
    const t = await terminating();
    const status = terminationByKubeletStatus(
      'Terminated',
      'Pod was terminated in response to imminent node shutdown.',
    );
    const killed = t.lifecycle.killPod(pod('a'), false, 30, status);
    await t.finish();
    await killed;
    expect(t.pods.shouldPodContentBeRemoved('a')).toBe(false);
    expect(t.pods.shouldPodRuntimeBeRemoved('a')).toBe(true);
    expect(await t.deletedOnDeath()).toEqual([]);
    expect(t.pods.evictionStatus('a')).toEqual(status);
  });

  it('lets what a pod the workers never saw left go only once housekeeping synced them', async () => {
    const t = setup();
    expect(t.pods.shouldPodContentBeRemoved('ghost')).toBe(false);
    expect(t.pods.shouldPodRuntimeBeRemoved('ghost')).toBe(false);
    await t.lifecycle.handlePodCleanups();
    expect(t.pods.shouldPodContentBeRemoved('ghost')).toBe(true);
    expect(t.pods.shouldPodRuntimeBeRemoved('ghost')).toBe(true);
  });
});

describe('pod cgroups (the container manager)', () => {
  /** Writes its calls into `log` (point it at the runtime's calls to see the order). */
  class RecordingPodCgroups implements PodCgroups {
    log: string[] = [];
    kept: string[][] = [];
    constructor(private readonly failFor?: string) {}
    cgroupParent = (p: V1Pod) => `/kubepods/pod${p.metadata?.uid}`;
    ensureExists = async (p: V1Pod) => {
      this.log.push(`cgroup ${p.metadata?.name}`);
      if (p.metadata?.name === this.failFor)
        throw new Error('mkdir /sys/fs/cgroup/pids/kubepods: read-only file system');
    };
    update = async () => {};
    cleanupOrphaned = async (keep: ReadonlySet<string>) => {
      this.kept.push([...keep].sort());
    };
  }

  it("makes the pod's cgroup before the runtime syncs the pod", async () => {
    const podCgroups = new RecordingPodCgroups();
    const { runtime, lifecycle, workers } = setup({ podCgroups });
    podCgroups.log = runtime.calls;
    await lifecycle.handlePodAdditions([pod('a')]);
    await workers.settle();
    expect(runtime.calls).toEqual(['cgroup a', 'sync a']);
  });

  it('a pod whose cgroup cannot be made never reaches the runtime, and the pass fails with why', async () => {
    const podCgroups = new RecordingPodCgroups('a');
    const { runtime, lifecycle, workers } = setup({ podCgroups });
    podCgroups.log = runtime.calls;
    await lifecycle.handlePodAdditions([pod('a'), pod('b')]);
    await workers.settle();
    expect(runtime.calls).toEqual(['cgroup a', 'cgroup b', 'sync b']);
  });

  it('housekeeping keeps the cgroups of pods that may still run and lets the rest go', async () => {
    const podCgroups = new RecordingPodCgroups();
    const { runtime, lifecycle, workers } = setup({ podCgroups });
    await lifecycle.handlePodAdditions([pod('a'), pod('b')]);
    await workers.settle();
    // b is removed and its worker stops it; the runtime still lists a ghost nobody wants.
    await lifecycle.handlePodRemoves([pod('b')]);
    await workers.settle();
    runtime.running = [{ uid: 'ghost', name: 'ghost', namespace: 'default', sandboxes: [], containers: [] }];
    await lifecycle.handlePodCleanups();
    expect(podCgroups.kept.at(-1)).toEqual(['a', 'ghost']);
    await workers.settle();
    runtime.running = [];
    await new Promise((r) => setTimeout(r, 0));
    await lifecycle.handlePodCleanups();
    expect(podCgroups.kept.at(-1)).toEqual(['a']);
  });

  it('housekeeping frees the user namespaces of pods neither wanted nor running', async () => {
    const podsDir = await mkdtemp(join(tmpdir(), 'kh-userns-'));
    stops.push(() => void rm(podsDir, { recursive: true, force: true }));
    const userNamespaces = await UsernsManager.create({
      podsDir,
      maxPods: 110,
      runtimeHandlers: () => [
        { name: '', supportsRecursiveReadOnlyMounts: false, supportsUserNamespaces: true },
      ],
    });
    const { runtime, lifecycle, workers } = setup({ userNamespaces });
    const userns = (name: string): V1Pod => ({
      ...pod(name),
      spec: { ...pod(name).spec!, hostUsers: false },
    });
    for (const name of ['a', 'gone', 'ghost'])
      await userNamespaces.getOrCreateUserNamespaceMappings(userns(name), '');
    await lifecycle.handlePodAdditions([userns('a')]);
    await workers.settle();
    runtime.running = [{ uid: 'ghost', name: 'ghost', namespace: 'default', sandboxes: [], containers: [] }];
    await lifecycle.handlePodCleanups();
    expect(['a', 'gone', 'ghost'].map((uid) => userNamespaces.allocatedTo(uid) !== undefined)).toEqual([
      true,
      false,
      true,
    ]);
    runtime.running = [];
    await new Promise((r) => setTimeout(r, 0));
    await lifecycle.handlePodCleanups();
    expect(userNamespaces.allocatedTo('ghost')).toBeUndefined();
    expect(userNamespaces.allocatedTo('a')).toBeDefined();
  });
});

describe('pod directories (the kubelet cleanupOrphanedPodDirs)', () => {
  it('housekeeping removes the directories of pods neither wanted, running nor being stopped', async () => {
    const podsDir = await mkdtemp(join(tmpdir(), 'kh-pod-dirs-'));
    stops.push(() => void rm(podsDir, { recursive: true, force: true }));
    const released: string[] = [];
    const podDirs = new OrphanedPodDirs({
      podsDir,
      helper: {
        cleanupPod: async (uid) => {
          released.push(uid);
          return [];
        },
      },
      mountPoints: async () => [],
    });
    const { runtime, lifecycle, workers } = setup({ podDirs });
    // gone: deleted while the agent was down, nothing of it runs; ghost: an orphan still running.
    for (const uid of ['a', 'b', 'ghost', 'gone'])
      await mkdir(join(podsDir, uid, 'volume-subpaths'), { recursive: true });
    await lifecycle.handlePodAdditions([pod('a'), pod('b')]);
    await workers.settle();
    let release = () => {};
    runtime.killGate = new Promise((r) => {
      release = r;
    });
    // b's worker is stopping it: its directory is the worker's to clean.
    await lifecycle.handlePodRemoves([pod('b')]);
    await vi.waitFor(() => expect(runtime.calls).toContain('kill b'));
    runtime.running = [{ uid: 'ghost', name: 'ghost', namespace: 'default', sandboxes: [], containers: [] }];
    await lifecycle.handlePodCleanups();
    expect(released).toEqual(['gone']);
    expect((await readdir(podsDir)).sort()).toEqual(['a', 'b', 'ghost']);

    release();
    await workers.settle();
    runtime.running = [];
    await new Promise((r) => setTimeout(r, 0));
    await lifecycle.handlePodCleanups();
    expect(released.sort()).toEqual(['b', 'ghost', 'gone']);
    expect(await readdir(podsDir)).toEqual(['a']);
  });
});
