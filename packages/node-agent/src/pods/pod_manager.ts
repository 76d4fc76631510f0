// The kubelet's pod manager: the pods the sources want on this node (by UID), and the ones the
// kubelet killed with the status they end with (evicted, or terminated for node shutdown). It
// also holds the pod workers' sync status of each pod (it extends their PodSyncStatuses), which
// the workers alone write: it exists before the runtime manager, which reads it as its
// PodStateProvider to decide which pods' containers, sandboxes and logs garbage collection may
// remove. The sync handler records here; the servers list the desired pods from here.
import type { V1Pod } from '@kubernetes/client-node';
import type { EvictionStatus } from '../eviction/types.js';
import { PodSyncStatuses } from './pod_workers.js';

export class PodManager extends PodSyncStatuses {
  private readonly pods = new Map<string, V1Pod>();
  private readonly evicted = new Map<string, EvictionStatus>();

  /** The desired pods, in the order the sources first listed them. */
  getPods(): V1Pod[] {
    return [...this.pods.values()];
  }

  getPod(uid: string): V1Pod | undefined {
    return this.pods.get(uid);
  }

  has(uid: string): boolean {
    return this.pods.has(uid);
  }

  uids(): Set<string> {
    return new Set(this.pods.keys());
  }

  /** Adds the pod, or replaces the one with its UID. */
  setPod(pod: V1Pod): void {
    this.pods.set(pod.metadata?.uid ?? '', pod);
  }

  /** No source lists the pod any more; an eviction of it is forgotten too. */
  removePod(uid: string): void {
    this.pods.delete(uid);
    this.evicted.delete(uid);
  }

  markEvicted(uid: string, status: EvictionStatus): void {
    this.evicted.set(uid, status);
  }

  /** The status an evicted pod ends with, or undefined when it was not evicted. */
  evictionStatus(uid: string): EvictionStatus | undefined {
    return this.evicted.get(uid);
  }
}
