// Relisting PLEG: every relist period, list all pods and containers, diff each container's
// state against the previous relist, write the status of each pod that changed into the pod
// cache and emit its lifecycle events, then mark the whole cache as fresh as the relist. Health:
// a relist must have succeeded within the threshold (3m).

import { realClock } from '@kh/apimachinery';
import { PodCache } from '../container/cache.js';
import type {
  Clock,
  Pleg,
  PodLifecycleEvent,
  PodLifecycleEventType,
  PodStatus,
  RunningPod,
  Runtime,
} from '../container/runtime.js';
import { LifecycleEmitter } from './emitter.js';

export const DefaultRelistPeriodMs = 1000;
export const DefaultRelistThresholdMs = 180_000;

type PlegState = 'running' | 'exited' | 'unknown' | 'non-existent';

/** Lifecycle events for one container between two relists. */
export function generateEvents(
  podUid: string,
  id: string,
  oldState: PlegState,
  newState: PlegState,
): PodLifecycleEvent[] {
  if (oldState === newState) return [];
  const ev = (type: PodLifecycleEventType): PodLifecycleEvent => ({ podUid, type, data: id });
  switch (newState) {
    case 'running':
      return [ev('ContainerStarted')];
    case 'exited':
      return [ev('ContainerDied')];
    case 'unknown':
      return [ev('ContainerChanged')];
    case 'non-existent':
      // Gone without being seen dead: report the death too, so the agent records an exit.
      return oldState === 'exited' ? [ev('ContainerRemoved')] : [ev('ContainerDied'), ev('ContainerRemoved')];
  }
}

function podStates(pod: RunningPod): Map<string, PlegState> {
  const m = new Map<string, PlegState>();
  // Sandboxes count as containers: a dead sandbox must wake the pod worker too.
  for (const s of pod.sandboxes) m.set(s.id, s.state === 'ready' ? 'running' : 'exited');
  for (const c of pod.containers) {
    // A created container is not running yet; the kubelet folds it into "unknown".
    m.set(c.id.id, c.state === 'running' ? 'running' : c.state === 'exited' ? 'exited' : 'unknown');
  }
  return m;
}

function formatAge(ms: number): string {
  const s = ms / 1000;
  return s >= 60 ? `${Math.floor(s / 60)}m${(s % 60).toFixed(0)}s` : `${s.toFixed(1)}s`;
}

export interface GenericPlegOptions {
  relistPeriodMs?: number;
  relistThresholdMs?: number;
  clock?: Clock;
  /** The pod cache it feeds; by default its own, on `clock`. */
  cache?: PodCache;
  /** Called when a relist fails (the PLEG keeps going). */
  onError?: (err: Error) => void;
  /** Called after each relist, failed or not (the kubelet's PLEG relist metrics). */
  onRelist?: (r: RelistTiming) => void;
}

/** One relist as the kubelet's metrics see it, in ms. */
export interface RelistTiming {
  durationMs: number;
  /** Since the start of the last relist that listed the pods; undefined before the first. */
  intervalMs: number | undefined;
  /** When the last relist that listed the pods started (Unix ms); undefined before the first. */
  lastSeenMs: number | undefined;
}

export class GenericPLEG implements Pleg {
  readonly #runtime: Pick<Runtime, 'getPods' | 'getPodStatus'>;
  readonly #clock: Clock;
  readonly #emitter = new LifecycleEmitter();
  readonly cache: PodCache;
  readonly #thresholdMs: number;
  readonly #onError: ((err: Error) => void) | undefined;
  readonly #onRelist: ((r: RelistTiming) => void) | undefined;
  #periodMs: number;
  #old = new Map<string, { pod: RunningPod; states: Map<string, PlegState> }>();
  #lastRelist: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = true;

  constructor(runtime: Pick<Runtime, 'getPods' | 'getPodStatus'>, opts: GenericPlegOptions = {}) {
    this.#runtime = runtime;
    this.#clock = opts.clock ?? realClock;
    this.#periodMs = opts.relistPeriodMs ?? DefaultRelistPeriodMs;
    this.#thresholdMs = opts.relistThresholdMs ?? DefaultRelistThresholdMs;
    this.cache = opts.cache ?? new PodCache(this.#clock);
    this.#onError = opts.onError;
    this.#onRelist = opts.onRelist;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#loop();
  }

  #loop = (): void => {
    if (this.#stopped) return;
    this.#timer = undefined;
    this.#running = this.relist()
      .catch((err: Error) => this.#onError?.(err))
      .finally(() => {
        if (!this.#stopped) this.#timer = setTimeout(this.#loop, this.#periodMs);
      });
  };

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  get relistPeriodMs(): number {
    return this.#periodMs;
  }

  /**
   * Changes the relist period. A relist waiting out the old period is rescheduled on the new one,
   * so going from the evented PLEG's 5 minutes back to 1 s does not wait out the 5 minutes.
   */
  setRelistPeriod(ms: number): void {
    this.#periodMs = ms;
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(this.#loop, ms);
  }

  watch(listener: (event: PodLifecycleEvent) => void): () => void {
    return this.#emitter.watch(listener);
  }

  mode(): 'generic' {
    return 'generic';
  }

  healthy(): { ok: boolean; message: string } {
    if (this.#lastRelist === undefined) return { ok: false, message: 'pleg has yet to be successful' };
    const age = this.#clock.now() - this.#lastRelist;
    if (age > this.#thresholdMs) {
      return {
        ok: false,
        message: `pleg was last seen active ${formatAge(age)} ago; threshold is ${formatAge(this.#thresholdMs)}`,
      };
    }
    return { ok: true, message: `pleg last relisted ${formatAge(age)} ago` };
  }

  /** One relist. Public so tests and the evented PLEG can drive it without timers. */
  async relist(): Promise<void> {
    const started = this.#clock.now();
    const intervalMs = this.#lastRelist === undefined ? undefined : started - this.#lastRelist;
    try {
      await this.#relist(started);
    } finally {
      this.#onRelist?.({ durationMs: this.#clock.now() - started, intervalMs, lastSeenMs: this.#lastRelist });
    }
  }

  async #relist(started: number): Promise<void> {
    const timestamp = this.cache.now();
    const pods = await this.#runtime.getPods(true);
    this.#lastRelist = started;

    const current = new Map(pods.map((p) => [p.uid, { pod: p, states: podStates(p) }]));
    const next = new Map(current);
    for (const uid of new Set([...this.#old.keys(), ...current.keys()])) {
      const before = this.#old.get(uid);
      const now = current.get(uid);
      const podEvents: PodLifecycleEvent[] = [];
      for (const id of new Set([...(before?.states.keys() ?? []), ...(now?.states.keys() ?? [])])) {
        podEvents.push(
          ...generateEvents(
            uid,
            id,
            before?.states.get(id) ?? 'non-existent',
            now?.states.get(id) ?? 'non-existent',
          ),
        );
      }
      if (podEvents.length === 0) continue;
      if (now) {
        const status = await this.#inspect(now.pod);
        if (!status) {
          // Keep the old view of this pod so its events are generated again on the next relist.
          if (before) next.set(uid, before);
          else next.delete(uid);
          continue;
        }
        this.cache.set(status.status, status.timestamp);
      } else this.cache.delete(uid);
      // In the same turn as the write: a worker it woke takes these events into the pass it is
      // about to start, instead of running another one for them.
      for (const e of podEvents) this.#emitter.emit(e);
    }
    this.#old = next;
    // Only once every changed pod is written: the rest of the cache is as new as this relist.
    this.cache.updateTime(timestamp);
  }

  /**
   * Reads the pod's status, stamped with the time before the read. A failed read goes into the
   * cache, so no worker syncs on the pod's older status; it returns undefined.
   */
  async #inspect(pod: RunningPod): Promise<{ status: PodStatus; timestamp: number } | undefined> {
    const timestamp = this.cache.now();
    try {
      return { status: await this.#runtime.getPodStatus(pod.uid, pod.name, pod.namespace), timestamp };
    } catch (err) {
      this.cache.setError(pod.uid, err as Error, timestamp);
      this.#onError?.(err as Error);
      return undefined;
    }
  }
}
