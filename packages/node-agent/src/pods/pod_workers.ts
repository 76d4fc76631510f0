// Pod workers: one serial lane per pod, lanes run in parallel. Updates that arrive while a pod
// is being synced are coalesced into one more pass with the newest pod object. Each pass first
// waits for the pod cache to hold a status newer than the end of the lane's last pass, so it
// sees what that pass did once the PLEG saw it (the kubelet's GetNewerThan), and hands that
// status to the pass. A pod whose termination was requested, or that reached a terminal phase,
// is killed once and never started again (a normal pass in flight when termination is requested
// is aborted, like the kubelet cancelling the sync's context, so it cannot restart or kill for a
// liveness failure afterwards); its final status is reported from a status newer than the kill.
// A failed sync is retried after a backoff, and a pod whose container waits out its
// CrashLoopBackOff is synced again when that back-off expires. Which pods finished terminating is
// recorded in the pod manager, where the runtime manager's garbage collection reads it.

import type { TimerClock } from '@kh/apimachinery';
import type { PodCache } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { type Logger, silentLogger } from '../util/log.js';
import type { PodManager } from './pod_manager.js';
import type { StartupEvents } from './startup_tracker.js';
import { CrashLoopBackOffError, type PodSyncer, type PodWorkers } from './types.js';

/** The kubelet retries a failed pod sync after about this long. */
export const POD_SYNC_RETRY_MS = 10_000;

/**
 * Added to a back-off's expiry: a timer may fire a little before the wall clock the back-off is
 * measured on gets there, and a pass that still finds the container backing off is wasted.
 */
export const BACKOFF_EXPIRY_SLACK_MS = 100;

interface Lane {
  pod: V1Pod;
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
  /** Callers of killPodNow waiting for the pod to be stopped. */
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
      terminated: Pick<PodManager, 'isTerminated' | 'markTerminated' | 'forgetTerminated'>;
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
        pending: false,
        busy: false,
        terminationRequested: false,
        idle: Promise.resolve(),
        onTerminated: [],
        lastSyncTime: Number.NEGATIVE_INFINITY,
      };
      this.lanes.set(uid, lane);
    }
    lane.pod = update.pod;
    const deleting = Boolean(update.pod.metadata?.deletionTimestamp);
    if (update.op === 'kill' || deleting) {
      lane.terminationRequested = true;
      lane.abortSync?.abort();
      const grace = update.gracePeriodSeconds ?? update.pod.metadata?.deletionGracePeriodSeconds;
      // A shorter grace period can only shorten a kill in progress, never lengthen it.
      if (grace !== undefined && (lane.gracePeriodSeconds === undefined || grace < lane.gracePeriodSeconds)) {
        lane.gracePeriodSeconds = grace;
      }
    }
    if (this.isPodTerminated(uid)) return;
    lane.pending = true;
    lane.cancelRetry?.();
    if (!lane.busy) lane.idle = this.drain(uid, lane);
  }

  /**
   * Kills the pod with the given grace period and resolves once its containers and sandbox are
   * stopped (the kubelet's killPodNow, used by the eviction manager).
   */
  killPodNow(pod: V1Pod, gracePeriodSeconds: number): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const done = new Promise<void>((resolve) => {
      this.updatePod({ pod, op: 'kill', gracePeriodSeconds });
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
    return this.opts.terminated.isTerminated(uid);
  }

  /**
   * Forgets lanes that finished terminating of pods that are no longer desired or whose restart
   * was requested; returns the desired pods forgotten so, which the caller starts again.
   */
  syncKnownPods(desired: V1Pod[]): V1Pod[] {
    const wanted = new Map(desired.map((p) => [p.metadata?.uid, p]));
    const restart: V1Pod[] = [];
    for (const [uid, lane] of this.lanes) {
      const pod = wanted.get(uid);
      if ((pod && !lane.restartRequested) || !this.isPodTerminated(uid) || lane.busy) continue;
      this.lanes.delete(uid);
      this.opts.terminated.forgetTerminated(uid);
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
      while (lane.pending && !this.isPodTerminated(uid)) {
        try {
          // Updates that arrive while the pass waits are this pass's: it takes the newest pod
          // object, and whether termination was requested meanwhile, once the wait is over.
          const status = await podCache.getNewerThan(uid, lane.lastSyncTime).finally(() => {
            lane.pending = false;
          });
          const pod = lane.pod;
          if (lane.terminationRequested) {
            await syncer
              .syncTerminatingPod(pod, status, lane.gracePeriodSeconds)
              .finally(() => this.passEnded(lane));
            await syncer.syncTerminatedPod(lane.pod, await podCache.getNewerThan(uid, lane.lastSyncTime));
            this.opts.terminated.markTerminated(uid);
            for (const notify of lane.onTerminated.splice(0)) notify();
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
