// Recent pod statuses, so a burst of reads of the same pod does not turn into a burst of CRI
// calls. Without it a new pod cost about eight full status reads (ListPodSandbox,
// ListContainers, PodSandboxStatus and ContainerStatus each): the worker reads before and after
// each sync, the PLEG reads when it sees the change the worker made, and the PLEG's events sync
// the pod again. The kubelet avoids the same with the PLEG's pod cache.
//
// A status is served only while nothing says it is out of date: it is younger than the TTL, the
// manager has not changed the pod since it was read (syncs, kills and GC invalidate), and the
// runtime's latest full listing agrees with it (same sandboxes and containers, same states).
import type { ContainerState, PodStatus, RunningPod } from '../container/runtime.js';

interface Entry {
  status: PodStatus;
  at: number;
  generation: number;
}

export class PodStatusCache {
  readonly #entries = new Map<string, Entry>();
  /**
   * Set from a counter that only grows by every invalidation, so a read that overlapped a change
   * is not cached, even when the pod's generation was forgotten and set again meanwhile.
   */
  readonly #generations = new Map<string, number>();
  #counter = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  get(uid: string): PodStatus | undefined {
    const e = this.#entries.get(uid);
    if (!e) return undefined;
    if (e.generation !== this.#generation(uid) || this.now() - e.at > this.ttlMs) {
      this.#entries.delete(uid);
      return undefined;
    }
    return e.status;
  }

  /** Reads through the cache: `read` runs on a miss, and its result is kept unless the pod changed meanwhile. */
  async getOrRead(uid: string, read: () => Promise<PodStatus>): Promise<PodStatus> {
    const cached = this.get(uid);
    if (cached) return cached;
    const generation = this.#generation(uid);
    const at = this.now();
    const status = await read();
    if (generation === this.#generation(uid)) this.#entries.set(uid, { status, at, generation });
    return status;
  }

  /** The pod was changed (or is about to be): its next read goes to the runtime. */
  invalidate(uid: string): void {
    this.#generations.set(uid, ++this.#counter);
    this.#entries.delete(uid);
  }

  invalidateAll(): void {
    for (const uid of new Set([...this.#generations.keys(), ...this.#entries.keys()])) this.invalidate(uid);
  }

  /**
   * A complete listing of the runtime's pods: drops every status it contradicts, and forgets
   * pods that are gone from the runtime.
   */
  reconcile(pods: RunningPod[]): void {
    const listed = new Map(pods.map((p) => [p.uid, p]));
    for (const [uid, e] of this.#entries) {
      const p = listed.get(uid);
      if (!p || !agrees(e.status, p)) this.invalidate(uid);
    }
    for (const uid of this.#generations.keys()) if (!listed.has(uid)) this.#generations.delete(uid);
  }

  #generation(uid: string): number {
    return this.#generations.get(uid) ?? 0;
  }
}

function agrees(status: PodStatus, pod: RunningPod): boolean {
  const sandboxes = new Map(status.sandboxStatuses.map((s) => [s.id, s.state]));
  const containers = new Map<string, ContainerState>(status.containerStatuses.map((c) => [c.id.id, c.state]));
  return (
    sandboxes.size === pod.sandboxes.length &&
    containers.size === pod.containers.length &&
    pod.sandboxes.every((s) => sandboxes.get(s.id) === s.state) &&
    pod.containers.every((c) => containers.get(c.id.id) === c.state)
  );
}
