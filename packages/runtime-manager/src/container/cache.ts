// The pod cache (the kubelet's kubecontainer.Cache): the one owner of pod status. The PLEG writes
// the status of every pod it sees change; the pod workers read it, and wait for it. A pod the
// cache does not hold has nothing in the runtime, so it reads as an empty status.
//
// The global timestamp says how fresh the whole cache is: each relist sets it to the time the
// relist started, once every pod it saw change has been written. So every entry is at least that
// new, and a worker asking for a status newer than its last sync gets one as soon as either its
// pod's entry or the whole cache was refreshed after that sync.
import type { Clock, PodStatus } from './runtime.js';

interface Entry {
  status: PodStatus | undefined;
  /** Set when reading the pod failed: a worker must not sync on an older status instead. */
  error: Error | undefined;
  modified: number;
}

interface Waiter {
  minTime: number;
  resolve: (status: PodStatus) => void;
  reject: (err: Error) => void;
}

/**
 * Steps of the stamps handed out within one millisecond of the clock: 2^-10 ms, which a double
 * near today's epoch milliseconds (about 2^41) still holds exactly.
 */
const STAMP_STEP_MS = 1 / 1024;

/** What the cache says of a pod it holds nothing of: no sandbox, no container. */
export function emptyPodStatus(uid: string, timestamp: number): PodStatus {
  return {
    uid,
    name: '',
    namespace: '',
    ips: [],
    sandboxStatuses: [],
    containerStatuses: [],
    timestamp: new Date(timestamp),
  };
}

export class PodCache {
  readonly #clock: Clock;
  readonly #pods = new Map<string, Entry>();
  /** Undefined until the first relist finished: before that the cache cannot answer. */
  #timestamp: number | undefined;
  readonly #waiters = new Map<string, Waiter[]>();
  #lastStamp = Number.NEGATIVE_INFINITY;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * The time on the cache's clock, strictly later than every time it gave before. The relist and
   * the pod workers stamp with it, so a relist that started after a sync ended is newer than that
   * sync even when both fall in the same millisecond (the kubelet's clock has nanoseconds).
   */
  now(): number {
    const t = this.#clock.now();
    this.#lastStamp = t > this.#lastStamp ? t : this.#lastStamp + STAMP_STEP_MS;
    return this.#lastStamp;
  }

  /** The pod's latest status, or an empty one when the runtime has nothing of it. */
  get(uid: string): PodStatus {
    const e = this.#pods.get(uid);
    if (e?.error) throw e.error;
    return e?.status ?? emptyPodStatus(uid, this.#timestamp ?? 0);
  }

  /**
   * Resolves with the pod's status once it is newer than `minTime`: its own entry was written
   * after it, or the whole cache was refreshed after it. Rejects with the error of a failed read.
   */
  getNewerThan(uid: string, minTime: number): Promise<PodStatus> {
    return new Promise((resolve, reject) => {
      const waiter = { minTime, resolve, reject };
      if (!this.#answer(uid, waiter)) this.#waiters.set(uid, [...(this.#waiters.get(uid) ?? []), waiter]);
    });
  }

  /**
   * Writes the pod's status as read at `timestamp` (taken before the read). An older write never
   * replaces a newer one (the evented PLEG's events may arrive after a relist); returns whether
   * it was written.
   */
  set(status: PodStatus, timestamp: number): boolean {
    return this.#write(status.uid, { status, error: undefined, modified: timestamp });
  }

  /** Records that reading the pod at `timestamp` failed: its waiters get the error. */
  setError(uid: string, error: Error, timestamp: number): boolean {
    return this.#write(uid, { status: undefined, error, modified: timestamp });
  }

  /** The pod is gone from the runtime. */
  delete(uid: string): void {
    this.#pods.delete(uid);
  }

  /** Every entry is at least as new as `timestamp` (it never moves back). Wakes the waiters it satisfies. */
  updateTime(timestamp: number): void {
    if (this.#timestamp !== undefined && timestamp <= this.#timestamp) return;
    this.#timestamp = timestamp;
    for (const uid of [...this.#waiters.keys()]) this.#notify(uid);
  }

  #write(uid: string, entry: Entry): boolean {
    const old = this.#pods.get(uid);
    if (old && old.modified > entry.modified) return false;
    this.#pods.set(uid, entry);
    this.#notify(uid);
    return true;
  }

  #notify(uid: string): void {
    const waiting = this.#waiters.get(uid);
    if (!waiting) return;
    const still = waiting.filter((w) => !this.#answer(uid, w));
    if (still.length) this.#waiters.set(uid, still);
    else this.#waiters.delete(uid);
  }

  /** Settles the waiter when the cache is new enough for it; false when it must wait on. */
  #answer(uid: string, w: Waiter): boolean {
    const e = this.#pods.get(uid);
    const fresh =
      (e !== undefined && e.modified > w.minTime) ||
      (this.#timestamp !== undefined && this.#timestamp > w.minTime);
    if (!fresh) return false;
    if (e?.error) w.reject(e.error);
    else w.resolve(e?.status ?? emptyPodStatus(uid, this.#timestamp ?? e?.modified ?? 0));
    return true;
  }
}
