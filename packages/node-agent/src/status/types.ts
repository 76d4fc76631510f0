// What the rest of the agent needs of the status manager: a pod's sync and the sync handler
// report statuses here, the prober reads them and flips readiness.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';

/** Caches pod statuses and patches the API only on change (the kubelet's status manager). */
export interface StatusManager {
  setPodStatus(pod: V1Pod, status: V1PodStatus): void;
  getPodStatus(uid: string): V1PodStatus | undefined;
  setContainerReadiness(pod: V1Pod, containerId: string, ready: boolean): void;
  /** The pod's worker is done with it: its status is final and, once deleted, it may go. */
  terminatePod(pod: V1Pod): void;
  /** Housekeeping: forgets the statuses of pods no source lists any more. */
  removeOrphanedStatuses(desired: ReadonlySet<string>): void;
  run(signal: AbortSignal): Promise<void>;
}
