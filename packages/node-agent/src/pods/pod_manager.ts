// The kubelet's pod manager, with what the node decided about each pod: the pods the sources
// want on this node (by UID), the ones the eviction manager evicted (with the status they end
// with), and the ones whose termination the pod workers finished. It exists before the runtime
// manager, which reads it as its PodStateProvider to decide which pods' containers, sandboxes and
// logs garbage collection may remove. The sync handler and the workers record here; the servers
// list the desired pods from here.
import type { PodStateProvider } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { EVICTION_REASON, type EvictionStatus } from '../eviction/types.js';

export class PodManager implements PodStateProvider {
  private readonly pods = new Map<string, V1Pod>();
  private readonly evicted = new Map<string, EvictionStatus>();
  private readonly terminated = new Set<string>();

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

  markTerminated(uid: string): void {
    this.terminated.add(uid);
  }

  isTerminated(uid: string): boolean {
    return this.terminated.has(uid);
  }

  /** The workers forgot the pod (gone and terminated). */
  forgetTerminated(uid: string): void {
    this.terminated.delete(uid);
  }

  /**
   * A pod the sources no longer list is gone, with everything it left; so is the content of an
   * evicted pod (its API object stays, Failed), once its worker finished terminating it. Before
   * that, its exited containers are what the final status reads their exit codes from. A pod
   * killed for node shutdown keeps its content, as in the kubelet (only reason Evicted counts).
   */
  shouldPodContentBeRemoved(uid: string): boolean {
    const evicted = this.evicted.get(uid)?.reason === EVICTION_REASON;
    return !this.pods.has(uid) || (evicted && this.terminated.has(uid));
  }

  /** A terminated pod's containers and sandboxes may go, its API object stays. */
  shouldPodRuntimeBeRemoved(uid: string): boolean {
    return !this.pods.has(uid) || this.terminated.has(uid);
  }
}
