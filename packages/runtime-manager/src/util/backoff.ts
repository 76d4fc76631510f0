// Per-key exponential backoff with the semantics of the kubelet's flowcontrol.Backoff:
// the delay starts at `initialMs`, doubles on each failure up to `maxMs`, and an entry is
// forgotten once the event that triggers it (a container's finish time) comes more than
// 2 x maxMs after the last retry, so a container that ran for 10 minutes starts over at 10s.

import { realClock } from '@kh/apimachinery';
import type { Backoff, Clock } from '../container/runtime.js';

interface Entry {
  delayMs: number;
  lastUpdateMs: number;
}

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  clock?: Clock;
}

export class ExponentialBackoff implements Backoff {
  readonly #entries = new Map<string, Entry>();
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #clock: Clock;

  constructor(opts: BackoffOptions) {
    if (!(opts.initialMs > 0) || !(opts.maxMs >= opts.initialMs)) {
      throw new RangeError(`backoff needs 0 < initialMs <= maxMs, got ${opts.initialMs} and ${opts.maxMs}`);
    }
    this.#initialMs = opts.initialMs;
    this.#maxMs = opts.maxMs;
    this.#clock = opts.clock ?? realClock;
  }

  #expired(eventTimeMs: number, e: Entry): boolean {
    return eventTimeMs - e.lastUpdateMs > 2 * this.#maxMs;
  }

  isInBackOffSince(key: string, eventTimeMs: number): boolean {
    const e = this.#entries.get(key);
    if (!e || this.#expired(eventTimeMs, e)) return false;
    return this.#clock.now() - eventTimeMs < e.delayMs;
  }

  isInBackOffSinceUpdate(key: string): boolean {
    const e = this.#entries.get(key);
    if (!e) return false;
    const now = this.#clock.now();
    if (this.#expired(now, e)) return false;
    return now - e.lastUpdateMs < e.delayMs;
  }

  next(key: string, eventTimeMs: number): void {
    const e = this.#entries.get(key);
    const now = this.#clock.now();
    if (!e || this.#expired(eventTimeMs, e)) {
      this.#entries.set(key, { delayMs: this.#initialMs, lastUpdateMs: now });
      return;
    }
    e.delayMs = Math.min(e.delayMs * 2, this.#maxMs);
    e.lastUpdateMs = now;
  }

  get(key: string): number {
    return this.#entries.get(key)?.delayMs ?? 0;
  }

  reset(key: string): void {
    this.#entries.delete(key);
  }

  gc(): void {
    const now = this.#clock.now();
    for (const [key, e] of this.#entries) {
      if (this.#expired(now, e)) this.#entries.delete(key);
    }
  }
}

/** The kubelet's container restart backoff: 10s doubling to a 5 minute cap (MaxContainerBackOff). */
export function newCrashLoopBackoff(clock: Clock = realClock): ExponentialBackoff {
  return new ExponentialBackoff({ initialMs: 10_000, maxMs: 300_000, clock });
}

/** The image pull backoff (ImagePullBackOff) uses the same 10s..5m curve, keyed by pod and image. */
export const newImagePullBackoff = newCrashLoopBackoff;
