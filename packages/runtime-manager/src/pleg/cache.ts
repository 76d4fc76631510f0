// Latest PodStatus per pod uid, written by whichever PLEG is active.
import type { PodLifecycleEvent, PodStatus } from '../container/runtime.js';

export class PodStatusCache {
  readonly #statuses = new Map<string, PodStatus>();
  get(uid: string): PodStatus | undefined {
    return this.#statuses.get(uid);
  }
  set(status: PodStatus): void {
    this.#statuses.set(status.uid, status);
  }
  delete(uid: string): void {
    this.#statuses.delete(uid);
  }
}

/** Listener registry shared by both PLEG implementations. */
export class LifecycleEmitter {
  readonly #listeners = new Set<(e: PodLifecycleEvent) => void>();
  watch(listener: (e: PodLifecycleEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  emit(e: PodLifecycleEvent): void {
    for (const l of this.#listeners) {
      try {
        l(e);
      } catch {
        // One faulty listener must not starve the others of events.
      }
    }
  }
}
