// Seams of the pod layer: pod sources feed the sync loop, the sync loop dispatches to a
// SyncHandler, which hands work to per-pod workers, whose results go to the status manager.
// Without a SyncHandler the Kubelet only keeps node status, lease and servers alive.

import type { PodLifecycleEvent } from '@kh/runtime-manager';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';

/** The kubelet's pod config operations. */
export type PodOperation = 'ADD' | 'UPDATE' | 'REMOVE' | 'RECONCILE' | 'DELETE';

export interface PodUpdate {
  op: PodOperation;
  pods: V1Pod[];
  /** 'api' (watch on spec.nodeName) or 'file' (staticPodPath). */
  source: 'api' | 'file';
}

/** A source of pod updates: the API watch, the static pod directory. */
export interface PodSource {
  /** Starts delivering updates until the signal aborts. */
  run(signal: AbortSignal, deliver: (update: PodUpdate) => void): Promise<void>;
  /** True once the first full list was delivered (housekeeping waits for all sources). */
  ready(): boolean;
}

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

/** Caches pod statuses and patches the API only on change (the kubelet's status manager). */
export interface StatusManager {
  setPodStatus(pod: V1Pod, status: V1PodStatus): void;
  getPodStatus(uid: string): V1PodStatus | undefined;
  setContainerReadiness(podUid: string, containerId: string, ready: boolean): void;
  terminatePod(pod: V1Pod): void;
  /** Housekeeping: forgets the statuses of pods no source lists any more. */
  removeOrphanedStatuses(desired: ReadonlySet<string>): void;
  run(signal: AbortSignal): Promise<void>;
}

/** The eviction manager's view for node conditions and admission. */
export interface PressureSource {
  isUnderMemoryPressure(): boolean;
  isUnderDiskPressure(): boolean;
  isUnderPIDPressure(): boolean;
}

export const noPressure: PressureSource = {
  isUnderMemoryPressure: () => false,
  isUnderDiskPressure: () => false,
  isUnderPIDPressure: () => false,
};
