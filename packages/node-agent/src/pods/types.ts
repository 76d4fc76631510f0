// Seams of the pod layer. The sync loop dispatches to a SyncHandler (PodLifecycle), which hands
// work to the per-pod PodWorkers, which run each pass through a PodSyncer (PodSync); the prober
// follows the pods through PodProber. Each is taken through its interface, so tests can stand in
// for any of them. Without a SyncHandler the Kubelet only keeps node status, lease and servers.

import type { PodLifecycleEvent, PodStatus } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';

/** What the sync loop calls, as the kubelet's SyncHandler. */
export interface SyncHandler {
  handlePodAdditions(pods: V1Pod[]): Promise<void>;
  handlePodUpdates(pods: V1Pod[]): Promise<void>;
  handlePodRemoves(pods: V1Pod[]): Promise<void>;
  handlePodReconcile(pods: V1Pod[]): Promise<void>;
  /** Pods due for a periodic sync (syncFrequency) or a retry after backoff. */
  handlePodSyncs(pods: V1Pod[]): Promise<void>;
  /** Housekeeping: kill orphans, drop state of deleted pods. */
  handlePodCleanups(): Promise<void>;
  /** A runtime event (PLEG) for one pod. */
  handlePlegEvent(event: PodLifecycleEvent): Promise<void>;
  /** Pods whose periodic sync is due at `now`. */
  podsToSync(now: number): V1Pod[];
}

/** Per-pod serialised work, parallel across pods (the kubelet's podWorkers). */
export interface PodWorkers {
  updatePod(update: {
    pod: V1Pod;
    op: 'create' | 'update' | 'sync' | 'kill';
    gracePeriodSeconds?: number;
  }): void;
  /** Kills the pod now and resolves once it is stopped; `evict` when the kill is an eviction. */
  killPodNow(pod: V1Pod, gracePeriodSeconds: number, evict: boolean): Promise<void>;
  isPodTerminationRequested(uid: string): boolean;
  /** The pod's containers and sandbox are stopped, and it will not start again. */
  isPodTerminated(uid: string): boolean;
  /** Every exited container of the pod may go (the kubelet's ShouldPodContentBeRemoved). */
  shouldPodContentBeRemoved(uid: string): boolean;
  /**
   * Forgets workers for pods that are gone and fully terminated, and for desired pods whose UID
   * was created again while terminating; returns the latter, to be started again.
   */
  syncKnownPods(desired: V1Pod[]): V1Pod[];
}

/**
 * One pass of one pod, called by its worker (the kubelet's SyncPod, SyncTerminatingPod and
 * SyncTerminatedPod). The worker hands in the pod's status from the pod cache, newer than its
 * last pass: a pass never reads the runtime's status itself.
 */
export interface PodSyncer {
  /**
   * Reports the status and brings the pod toward its spec; throws when the pass failed and
   * must be retried. Resolves to true when the pod reached a terminal phase: its worker then
   * terminates it. `signal` fires when the pod's termination is requested mid-pass: the pass
   * then kills and starts nothing more and resolves to false.
   */
  syncPod(pod: V1Pod, status: PodStatus, signal?: AbortSignal): Promise<boolean>;
  /**
   * Stops every container and the sandbox in `status`, then reports the final status from the
   * runtime's status read after the kill; throws if a container still runs.
   */
  syncTerminatingPod(pod: V1Pod, status: PodStatus, gracePeriodSeconds?: number): Promise<void>;
  /** Reports the final status, from a status newer than the kill. */
  syncTerminatedPod(pod: V1Pod, status: PodStatus): Promise<void>;
}

/**
 * A pass that left containers waiting out their CrashLoopBackOff: the worker syncs the pod again
 * once the first back-off expires, rather than after its fixed retry period.
 */
export class CrashLoopBackOffError extends Error {
  constructor(
    message: string,
    /** Milliseconds until the first of the containers may start again. */
    readonly retryAfterMs: number,
  ) {
    super(message);
    this.name = 'CrashLoopBackOffError';
  }
}

/** What the pod layer needs of the prober manager. */
export interface PodProber {
  addPod(pod: V1Pod): void;
  stopLivenessAndStartup(pod: V1Pod): void;
  removePod(uid: string): void;
  cleanupPods(desired: ReadonlySet<string>): void;
}
