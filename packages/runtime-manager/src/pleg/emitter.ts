// Listener registry shared by both PLEG implementations.
import type { PodLifecycleEvent } from '../container/runtime.js';

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
