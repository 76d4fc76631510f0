// Pod workers: one serial lane per pod, lanes run in parallel. Updates that arrive while a pod
// is being synced are coalesced into one more pass with the newest pod object. Each pass first
// waits for the pod cache to hold a status newer than the end of the lane's last pass, so it
// sees what that pass did once the PLEG saw it (the kubelet's GetNewerThan), and hands that
// status to the pass. A pod whose termination was requested, or that reached a terminal phase,
// is killed once and never started again (a normal pass in flight when termination is requested
// is aborted, like the kubelet cancelling the sync's context, so it cannot restart or kill for a
// liveness failure afterwards). Once its kill returned it is terminated (killPodNow's callers go
// on), and a last pass reports its status again from a status newer than the kill.
// A failed sync is retried after a backoff, and a pod whose container waits out its
// CrashLoopBackOff is synced again when that back-off expires. Each pod's sync status (how its
// termination began, whether it finished) decides what of it the rest of the node may remove.

import type { TimerClock } from '@kh/apimachinery';
import type { PodCache, PodStateProvider } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { type Logger, silentLogger } from '../util/log.js';
import type { StartupEvents } from './startup_tracker.js';
import { CrashLoopBackOffError, type PodSyncer, type PodWorkers } from './types.js';

/** The kubelet retries a failed pod sync after about this long. */
export const POD_SYNC_RETRY_MS = 10_000;

/**
 * Added to a back-off's expiry: a timer may fire a little before the wall clock the back-off is
 * measured on gets there, and a pass that still finds the container backing off is wasted.
 */
export const BACKOFF_EXPIRY_SLACK_MS = 100;

/** What the workers know of one pod they were sent (the kubelet's podSyncStatus). */
export interface PodSyncStatus {
  /**
   * It had a deletionTimestamp when its termination was requested, or housekeeping found it no
   * longer desired before its worker finished.
   */
  deleted: boolean;
  /** Its termination was requested by an eviction (the kubelet's KillPodOptions.Evict). */
  evicted: boolean;
  /**
   * Its containers and sandbox are stopped and the final status read then is reported (the
   * kubelet's terminatedAt, set when the terminating pass returns).
   */
  terminated: boolean;
}

/**
 * The workers' sync status of every pod they were sent, and whether housekeeping has synced them
 * with the desired pods yet (the kubelet's podSyncStatuses and podsSynced). Only the workers write
 * it. It answers, as the kubelet's pod workers do, what of a pod the container deletor and garbage
 * collection may remove, so it must exist before the runtime manager: the pod manager extends it.
 */
export class PodSyncStatuses implements PodStateProvider {
  private readonly statuses = new Map<string, PodSyncStatus>();
  private podsSynced = false;

  /** The pod's sync status, made when the workers are first sent it. */
  syncStatus(uid: string): PodSyncStatus {
    let status = this.statuses.get(uid);
    if (!status) {
      status = { deleted: false, evicted: false, terminated: false };
      this.statuses.set(uid, status);
    }
    return status;
  }

  forgetSyncStatus(uid: string): void {
    this.statuses.delete(uid);
  }

  /** Every pod that may still run has been sent to the workers (SyncKnownPods ran once). */
  setPodsSynced(): void {
    this.podsSynced = true;
  }

  /** The workers know the pod and finished terminating it (the kubelet's IsPodKnownTerminated). */
  isPodKnownTerminated(uid: string): boolean {
    return this.statuses.get(uid)?.terminated ?? false;
  }

  /**
   * Everything the pod left may go (exited containers, sandboxes, logs): for a deleted or evicted
   * pod once terminated (until then its exited containers are what its final status reads exit
   * codes from); for one the workers never saw, once they were synced. The kubelet lets an evicted
   * pod's content go at once, and its evicted pods then report ContainerStatusUnknown
   * (kubernetes#122160, an open bug): waiting for termination is the one deliberate difference.
   */
  shouldPodContentBeRemoved(uid: string): boolean {
    const status = this.statuses.get(uid);
    return status ? status.terminated && (status.deleted || status.evicted) : this.podsSynced;
  }

  /** The pod's runtime objects may go: nothing of it runs any more. */
  shouldPodRuntimeBeRemoved(uid: string): boolean {
    const status = this.statuses.get(uid);
    return status ? status.terminated : this.podsSynced;
  }
}

interface Lane {
  pod: V1Pod;
  status: PodSyncStatus;
  pending: boolean;
  busy: boolean;
  terminationRequested: boolean;
  /**
   * A create arrived for this UID after its termination was requested: the same UID is wanted
   * again (a static pod's manifest removed and written back). Once the lane finished, housekeeping
   * forgets it and starts the pod afresh.
   */
  restartRequested?: boolean;
  gracePeriodSeconds?: number;
  cancelRetry?: () => void;
  /** Aborts the normal pass in flight, if any. */
  abortSync?: AbortController;
  idle: Promise<void>;
  /** Its terminated pass ran too: the lane has nothing left to do (the kubelet's finished). */
  finished: boolean;
  /** Callers of killPodNow waiting for the pod to be terminated. */
  onTerminated: (() => void)[];
  /** When the lane's last pass ended, on the pod cache's clock: the next one needs a newer status. */
  lastSyncTime: number;
}

export class PodWorkerPool implements PodWorkers {
  private readonly lanes = new Map<string, Lane>();

  constructor(
    private readonly opts: {
      syncer: PodSyncer;
      /** The PLEG-fed pod cache the passes' statuses come from. */
      podCache: Pick<PodCache, 'getNewerThan' | 'now'>;
      /** Where the workers keep each pod's sync status (the pod manager, which extends it). */
      syncStatuses: PodSyncStatuses;
      clock: TimerClock;
      log?: Logger;
      retryMs?: number;
      /** Told when a pod's normal pass begins (the start-up breakdown). */
      startup?: Pick<StartupEvents, 'workerStarted'>;
    },
  ) {}

  updatePod(update: {
    pod: V1Pod;
    op: 'create' | 'update' | 'sync' | 'kill';
    gracePeriodSeconds?: number;
    /** A kill that is an eviction (the kubelet's KillPodOptions.Evict). */
    evict?: boolean;
  }): void {
    const uid = update.pod.metadata?.uid;
    if (!uid) return;
    let lane = this.lanes.get(uid);
    // As the kubelet: never for the first update of a UID (a lane just made has nothing to restart).
    if (lane?.terminationRequested && update.op === 'create') {
      lane.restartRequested = true;
      return;
    }
    if (!lane) {
      lane = {
        pod: update.pod,
        status: this.opts.syncStatuses.syncStatus(uid),
        pending: false,
        busy: false,
        terminationRequested: false,
        idle: Promise.resolve(),
        finished: false,
        onTerminated: [],
        lastSyncTime: Number.NEGATIVE_INFINITY,
      };
      this.lanes.set(uid, lane);
    }
    lane.pod = update.pod;
    const deleting = Boolean(update.pod.metadata?.deletionTimestamp);
    if (update.op === 'kill' || deleting) {
      // As the kubelet: the request that began the termination says whether it is a deletion or
      // an eviction; later ones change neither.
      if (!lane.terminationRequested) {
        if (deleting) lane.status.deleted = true;
        else if (update.evict) lane.status.evicted = true;
      }
      lane.terminationRequested = true;
      lane.abortSync?.abort();
      const grace = update.gracePeriodSeconds ?? update.pod.metadata?.deletionGracePeriodSeconds;
      // A shorter grace period can only shorten a kill in progress, never lengthen it.
      if (grace !== undefined && (lane.gracePeriodSeconds === undefined || grace < lane.gracePeriodSeconds)) {
        lane.gracePeriodSeconds = grace;
      }
    }
    if (lane.finished) return;
    lane.pending = true;
    lane.cancelRetry?.();
    if (!lane.busy) lane.idle = this.drain(uid, lane);
  }

  /**
   * Kills the pod with the given grace period and resolves once its containers and sandbox are
   * stopped (the kubelet's killPodNow, used by the eviction manager and node shutdown).
   */
  killPodNow(pod: V1Pod, gracePeriodSeconds: number, evict: boolean): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const done = new Promise<void>((resolve) => {
      this.updatePod({ pod, op: 'kill', gracePeriodSeconds, evict });
      const lane = this.lanes.get(uid);
      if (!lane || this.isPodTerminated(uid)) resolve();
      else lane.onTerminated.push(resolve);
    });
    return done;
  }

  isPodTerminationRequested(uid: string): boolean {
    return this.lanes.get(uid)?.terminationRequested ?? false;
  }

  isPodTerminated(uid: string): boolean {
    return this.opts.syncStatuses.isPodKnownTerminated(uid);
  }

  shouldPodContentBeRemoved(uid: string): boolean {
    return this.opts.syncStatuses.shouldPodContentBeRemoved(uid);
  }

  /**
   * Forgets lanes that finished terminating of pods that are no longer desired or whose restart
   * was requested; returns the desired pods forgotten so, which the caller starts again. A pod
   * no longer desired whose worker has not finished counts as deleted from now on.
   */
  syncKnownPods(desired: V1Pod[]): V1Pod[] {
    this.opts.syncStatuses.setPodsSynced();
    const wanted = new Map(desired.map((p) => [p.metadata?.uid, p]));
    const restart: V1Pod[] = [];
    for (const [uid, lane] of this.lanes) {
      const pod = wanted.get(uid);
      if (!pod) lane.status.deleted = true;
      if ((pod && !lane.restartRequested) || !lane.finished || lane.busy) continue;
      this.lanes.delete(uid);
      this.opts.syncStatuses.forgetSyncStatus(uid);
      if (pod) restart.push(pod);
    }
    return restart;
  }

  /** Resolves when every lane is idle (tests, shutdown). */
  async settle(): Promise<void> {
    await Promise.all([...this.lanes.values()].map((l) => l.idle));
  }

  private async drain(uid: string, lane: Lane): Promise<void> {
    const log = this.opts.log ?? silentLogger;
    const { syncer, podCache } = this.opts;
    lane.busy = true;
    try {
      while (lane.pending && !lane.finished) {
        try {
          // Updates that arrive while the pass waits are this pass's: it takes the newest pod
          // object, and whether termination was requested meanwhile, once the wait is over.
          const status = await podCache.getNewerThan(uid, lane.lastSyncTime).finally(() => {
            lane.pending = false;
          });
          const pod = lane.pod;
          if (lane.terminationRequested) {
            // A terminated pass that failed is retried alone: the pod is already stopped.
            if (!lane.status.terminated) {
              await syncer
                .syncTerminatingPod(pod, status, lane.gracePeriodSeconds)
                .finally(() => this.passEnded(lane));
              // The kubelet's completeTerminating: killPodNow's callers go on once it is stopped.
              lane.status.terminated = true;
              for (const notify of lane.onTerminated.splice(0)) notify();
            }
            await syncer.syncTerminatedPod(lane.pod, await podCache.getNewerThan(uid, lane.lastSyncTime));
            lane.finished = true;
          } else {
            const abort = new AbortController();
            lane.abortSync = abort;
            this.opts.startup?.workerStarted(uid);
            const finished = await syncer.syncPod(pod, status, abort.signal).finally(() => {
              lane.abortSync = undefined;
              this.passEnded(lane);
            });
            // Ran to completion: the next pass tears down what is left.
            if (finished) this.updatePod({ pod, op: 'kill' });
          }
        } catch (err) {
          log.error('Error syncing pod, skipping', { pod: lane.pod.metadata?.name, uid, err });
          if (!lane.pending)
            this.scheduleRetry(
              uid,
              lane,
              err instanceof CrashLoopBackOffError
                ? err.retryAfterMs + BACKOFF_EXPIRY_SLACK_MS
                : (this.opts.retryMs ?? POD_SYNC_RETRY_MS),
            );
        }
      }
    } finally {
      lane.busy = false;
    }
  }

  private passEnded(lane: Lane): void {
    lane.lastSyncTime = this.opts.podCache.now();
  }

  private scheduleRetry(uid: string, lane: Lane, afterMs: number): void {
    lane.cancelRetry = this.opts.clock.setTimer(afterMs, () => {
      lane.cancelRetry = undefined;
      if (this.lanes.get(uid) === lane) this.updatePod({ pod: lane.pod, op: 'sync' });
    });
  }
}
