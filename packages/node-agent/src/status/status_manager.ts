// The status manager: the pod workers report each pod's computed status here, and it reaches the
// API server only when it differs from what was last written. Patches carry the complete
// kubelet-owned status and keep conditions other writers own (readiness gates); a conflict is
// retried at once on a fresh read, other failures on the next pass. Once a pod marked for
// deletion is finished (its worker's last pass called terminatePod, the kubelet's podIsFinished)
// and has nothing left running, the manager deletes it with grace 0 (UID-guarded), which
// finishes graceful deletion. A static pod's status goes to its mirror pod (same name, another
// UID, config.mirror = the static pod's UID), which is never deleted here: mirror/ owns it.
// A status someone else changed (the node lifecycle controller marks pods not Ready while the
// node is Unknown) is written again on the next pass, as the kubelet's needsReconcile does.

import type { TimerClock } from '@kh/apimachinery';
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { isConflict } from '../api/node_api.js';
import type { PodApi } from '../api/pod_api.js';
import { bareContainerId } from '../types/container_id.js';
import { ConfigMirrorAnnotation, ConfigSourceAnnotation } from '../types/pod_update.js';
import { canonicalJson } from '../util/canonical_json.js';
import { Waker } from '../util/clock.js';
import { type Logger, silentLogger } from '../util/log.js';
import { readinessCondition, unreadyContainers } from './generate.js';
import { withReadinessGates } from './readiness_gates.js';
import type { StatusManager } from './types.js';

/** Conditions the kubelet owns; any other condition type on the pod belongs to someone else. */
export const KUBELET_POD_CONDITIONS = [
  'PodScheduled',
  'PodReadyToStartContainers',
  'Initialized',
  'ContainersReady',
  'Ready',
  // In-place resize: present while a resize waits or is being applied, removed after.
  'PodResizePending',
  'PodResizeInProgress',
];

export const STATUS_SYNC_PERIOD_MS = 10_000;
const CONFLICT_RETRIES = 3;
const SYNC_CONCURRENCY = 8;

interface Entry {
  namespace: string;
  name: string;
  /** Frozen: getPodStatus hands it out as is. */
  status: V1PodStatus;
  /** canonicalJson(status), to tell a new status from the stored one. */
  json: string;
  version: number;
  syncedVersion: number;
  /** The pod has a deletionTimestamp and is waiting for its containers to be gone. */
  deletionPending: boolean;
  /** terminatePod was called: the pod's worker is done with it; only then may it be deleted. */
  finished: boolean;
  /** A static pod: written to its mirror pod once that exists. */
  static: boolean;
}

export class PodStatusManager implements StatusManager {
  private readonly entries = new Map<string, Entry>();
  private readonly waker = new Waker();
  /** While a sync pass runs: starts workers for newly due entries, up to the pass's concurrency. */
  private fillPass: (() => void) | undefined;

  constructor(
    private readonly opts: {
      api: PodApi;
      clock: TimerClock;
      syncPeriodMs?: number;
      log?: Logger;
      /** True when nothing of the pod runs any more; the default reads the container states. */
      podResourcesReclaimed?: (pod: V1Pod, status: V1PodStatus) => boolean;
      /**
       * The pod as the API server last showed it (the pod manager's copy, kept current by the
       * watch): an entry whose stored status another writer changed is synced again.
       */
      apiPod?: (uid: string) => V1Pod | undefined;
    },
  ) {}

  /**
   * The pod's latest status, frozen: handed out as stored rather than copied, because admission
   * asks for every active pod's status for each pod it admits (with 110 pods, copying was most of
   * the agent's CPU while they started). Copy it to change it.
   */
  getPodStatus(uid: string): V1PodStatus | undefined {
    return this.entries.get(uid)?.status;
  }

  setPodStatus(pod: V1Pod, status: V1PodStatus): void {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    const now = new Date(this.opts.clock.now());
    const existing = this.entries.get(uid);
    const previous = existing?.status ?? pod.status;
    const next = structuredClone(status);
    // Transition times move only when a condition's status flips.
    next.conditions = (next.conditions ?? []).map((c) => {
      const before = previous?.conditions?.find((p) => p.type === c.type);
      const keep = before && before.status === c.status && before.lastTransitionTime;
      return { ...c, lastTransitionTime: keep ? before.lastTransitionTime : (c.lastTransitionTime ?? now) };
    });
    if (previous?.startTime) next.startTime = previous.startTime;
    // A pod never leaves a terminal phase.
    if ((previous?.phase === 'Succeeded' || previous?.phase === 'Failed') && next.phase !== previous.phase) {
      (this.opts.log ?? silentLogger).error('Refusing to move a pod out of a terminal phase', {
        pod: pod.metadata?.name,
        from: previous.phase,
        to: next.phase,
      });
      next.phase = previous.phase;
    }
    const json = canonicalJson(next);
    if (existing && existing.json === json) return;
    this.entries.set(uid, {
      namespace: pod.metadata?.namespace ?? 'default',
      name: pod.metadata?.name ?? '',
      status: deepFreeze(next),
      json,
      version: (existing?.version ?? 0) + 1,
      syncedVersion: existing?.syncedVersion ?? 0,
      deletionPending: existing?.deletionPending ?? false,
      finished: existing?.finished ?? false,
      static: existing?.static || pod.metadata?.annotations?.[ConfigSourceAnnotation] === 'file',
    });
    this.kick();
  }

  /**
   * A readiness probe result: the container's ready flag (an app container's or a sidecar's), then
   * ContainersReady and Ready. The id may come with its runtime scheme (`containerd://abc`, the API
   * form) or without (the prober's). The pod's spec tells sidecars from other init containers.
   */
  setContainerReadiness(pod: V1Pod, containerId: string, ready: boolean): void {
    const uid = pod.metadata?.uid ?? '';
    const e = this.entries.get(uid);
    const id = bareContainerId(containerId);
    const matches = (c: V1ContainerStatus) => bareContainerId(c.containerID ?? '') === id;
    const lists = (s: V1PodStatus) => [...(s.containerStatuses ?? []), ...(s.initContainerStatuses ?? [])];
    const cs = e && lists(e.status).find(matches);
    if (!e || !cs || cs.ready === ready) return;
    const status = structuredClone(e.status);
    for (const c of lists(status)) if (matches(c)) c.ready = ready;
    const unready = unreadyContainers(
      pod,
      status.initContainerStatuses ?? [],
      status.containerStatuses ?? [],
    );
    const completed = status.phase === 'Succeeded';
    status.conditions = [
      ...(status.conditions ?? []).filter((c) => c.type !== 'ContainersReady' && c.type !== 'Ready'),
      readinessCondition('ContainersReady', unready, completed),
      withReadinessGates(pod, readinessCondition('Ready', unready, completed)),
    ];
    this.setPodStatus({ metadata: { uid, namespace: e.namespace, name: e.name } }, status);
  }

  /**
   * Forgets pods that no source lists any more: their API object is gone (or, for a static pod,
   * its mirror goes with it), so there is nothing left to write. Without this a removed static
   * pod would be looked up every pass for as long as the agent runs.
   */
  removeOrphanedStatuses(desired: ReadonlySet<string>): void {
    for (const uid of this.entries.keys()) if (!desired.has(uid)) this.entries.delete(uid);
  }

  /**
   * The pod's worker is done with it (the kubelet's TerminatePod): every container not terminated
   * yet is marked so, and a pod marked for deletion may now be deleted.
   */
  terminatePod(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    const e = uid ? this.entries.get(uid) : undefined;
    const status = structuredClone(e?.status ?? pod.status ?? {});
    for (const list of [
      status.initContainerStatuses,
      status.containerStatuses,
      status.ephemeralContainerStatuses,
    ]) {
      for (const c of list ?? []) {
        if (c.state?.terminated) continue;
        c.state = {
          terminated: {
            exitCode: 137,
            reason: 'ContainerStatusUnknown',
            message: 'The container could not be located when the pod was terminated',
          },
        };
        c.ready = false;
      }
    }
    this.setPodStatus(pod, status);
    const entry = uid ? this.entries.get(uid) : undefined;
    if (entry && !entry.finished) {
      entry.finished = true;
      this.kick();
    }
  }

  /**
   * Syncs every entry that changed since its last write or waits for its final deletion, a few
   * pods at a time: each write is a read and a patch, and a burst of new pods should not queue
   * behind one another. A worker takes the next due entry whenever it finishes one, so a status
   * set while others are being written goes out in the same pass rather than after all of them,
   * and an entry whose status changed again while it was being written is written again.
   */
  async syncBatch(): Promise<void> {
    /** The version of each entry this pass took up (an entry is taken once per version). */
    const taken = new Map<string, number>();
    const overwritten = this.overwrittenElsewhere();
    const inFlight = new Set<string>();
    const take = (): [string, Entry] | undefined => {
      for (const [uid, e] of this.entries) {
        if (inFlight.has(uid) || taken.get(uid) === e.version) continue;
        // Static pods are checked every pass: their mirror pod may have been recreated without status.
        if (e.version !== e.syncedVersion || e.deletionPending || e.static || overwritten.has(uid)) {
          taken.set(uid, e.version);
          inFlight.add(uid);
          return [uid, e];
        }
      }
      return undefined;
    };
    const workers: Promise<void>[] = [];
    let settled = 0;
    const work = async (first: [string, Entry]) => {
      for (let n: [string, Entry] | undefined = first; n; n = take()) {
        const [uid, e] = n;
        try {
          await this.syncPod(uid, e);
        } catch (err) {
          (this.opts.log ?? silentLogger).error('Failed to update pod status; will retry', {
            pod: e.name,
            err,
          });
        } finally {
          inFlight.delete(uid);
        }
      }
    };
    // Also called when a status is set during the pass: idle capacity takes it up at once.
    const fill = () => {
      while (workers.length - settled < SYNC_CONCURRENCY) {
        const n = take();
        if (!n) return;
        workers.push(work(n).finally(() => settled++));
      }
    };
    this.fillPass = fill;
    try {
      fill();
      for (let i = 0; i < workers.length; i++) await workers[i];
    } finally {
      this.fillPass = undefined;
    }
  }

  private async syncPod(uid: string, e: Entry): Promise<void> {
    const { api } = this.opts;
    for (let attempt = 1; ; attempt++) {
      const pod = await api.getPod(e.namespace, e.name);
      const ours = e.static
        ? pod?.metadata?.annotations?.[ConfigMirrorAnnotation] === uid
        : pod?.metadata?.uid === uid;
      // A static pod's mirror may not exist yet (or be outdated): keep the status until it does.
      if (e.static && !ours) return;
      if (!pod || !ours) {
        // Gone, or replaced by a new pod with the same name: nothing of ours to write.
        this.entries.delete(uid);
        return;
      }
      const version = e.version;
      const merged = mergePodStatus(pod.status, e.status);
      if (canonicalJson(merged) !== canonicalJson(pod.status)) {
        try {
          await api.patchPodStatus(e.namespace, e.name, merged, pod.status);
        } catch (err) {
          if (isConflict(err) && attempt < CONFLICT_RETRIES) continue;
          throw err;
        }
      }
      e.syncedVersion = version;
      e.deletionPending = !e.static && Boolean(pod.metadata?.deletionTimestamp);
      if (e.deletionPending && e.finished && this.reclaimed(pod, e.status)) {
        await api.deletePod(e.namespace, e.name, uid);
        this.entries.delete(uid);
      }
      return;
    }
  }

  /**
   * Synced entries whose status in the API no longer says what ours says (phase, the kubelet's
   * conditions, containers' readiness and restarts): someone else wrote over it.
   */
  private overwrittenElsewhere(): Set<string> {
    const out = new Set<string>();
    if (!this.opts.apiPod) return out;
    for (const [uid, e] of this.entries) {
      if (e.version !== e.syncedVersion || e.static) continue;
      const stored = this.opts.apiPod(uid)?.status;
      if (stored && statusGist(mergePodStatus(stored, e.status)) !== statusGist(stored)) out.add(uid);
    }
    return out;
  }

  private reclaimed(pod: V1Pod, status: V1PodStatus): boolean {
    if (this.opts.podResourcesReclaimed) return this.opts.podResourcesReclaimed(pod, status);
    const all = [
      ...(status.initContainerStatuses ?? []),
      ...(status.containerStatuses ?? []),
      ...(status.ephemeralContainerStatuses ?? []),
    ];
    return all.every((c) => !c.state?.running);
  }

  /** Requests a sync pass now instead of at the next period. */
  kick(): void {
    this.waker.kick();
    this.fillPass?.();
  }

  async run(signal: AbortSignal): Promise<void> {
    const period = this.opts.syncPeriodMs ?? STATUS_SYNC_PERIOD_MS;
    while (!signal.aborted) {
      await this.syncBatch();
      await this.waker.wait(this.opts.clock, period, signal);
    }
  }
}

/**
 * Conditions the kubelet writes when it has something to say but other writers may set too: the
 * eviction manager's DisruptionTarget, which the taint manager and preemption also use.
 */
export const SHARED_POD_CONDITIONS = ['DisruptionTarget'];

/** The status to write: ours, plus conditions other writers own on the stored pod. */
export function mergePodStatus(stored: V1PodStatus | undefined, ours: V1PodStatus): V1PodStatus {
  const mine = (ours.conditions ?? []).filter(
    (c) => KUBELET_POD_CONDITIONS.includes(c.type) || SHARED_POD_CONDITIONS.includes(c.type),
  );
  const foreign = (stored?.conditions ?? []).filter(
    (c) => !KUBELET_POD_CONDITIONS.includes(c.type) && !mine.some((m) => m.type === c.type),
  );
  // PodScheduled is the scheduler's until the kubelet reports it.
  const scheduled = stored?.conditions?.find((c) => c.type === 'PodScheduled');
  const keepScheduled = scheduled && !mine.some((c) => c.type === 'PodScheduled') ? [scheduled] : [];
  return { ...ours, conditions: [...keepScheduled, ...mine, ...foreign] };
}

/**
 * What a pod status says, without what only its form may change (time precision, field order):
 * a stored status that differs from ours here was written by someone else.
 */
function statusGist(s: V1PodStatus): string {
  return canonicalJson({
    phase: s.phase,
    conditions: (s.conditions ?? [])
      .filter((c) => KUBELET_POD_CONDITIONS.includes(c.type))
      .map((c) => `${c.type}=${c.status}`)
      .sort(),
    containers: [...(s.initContainerStatuses ?? []), ...(s.containerStatuses ?? [])]
      .map((c) => `${c.name}:${c.ready}:${c.restartCount}`)
      .sort(),
  });
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
