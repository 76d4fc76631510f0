// Seams of the pod layer: pod sources feed the sync loop, the sync loop dispatches to a
// SyncHandler, which hands work to per-pod workers, whose results go to the status manager.
// Without a SyncHandler the Kubelet only keeps node status, lease and servers alive.

import type { PodLifecycleEvent } from '@kh/runtime-manager';
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
  /** Kills the pod now and resolves once it is stopped. */
  killPodNow(pod: V1Pod, gracePeriodSeconds: number): Promise<void>;
  isPodTerminationRequested(uid: string): boolean;
  /** Forgets workers for pods that are gone and fully terminated. */
  syncKnownPods(desired: V1Pod[]): void;
}
