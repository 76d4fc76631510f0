// Time and cadence are injected everywhere so status cadence, lease renewal and backoff are
// testable without sleeping. Production code uses systemClock and IntervalTicker; tests use
// FakeClock, whose timers fire only when the test advances time.
import type { Clock } from '@kh/runtime-manager';

export type { Clock };

/** A clock that can also schedule work. */
export interface TimerClock extends Clock {
  /** Calls fn after ms; returns a cancel function. */
  setTimer(ms: number, fn: () => void): () => void;
}

export const realClock: TimerClock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return () => clearTimeout(t);
  },
};

/** Resolves after ms on the given clock (rejects with the signal's reason when aborted). */
export function sleep(clock: TimerClock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      cancel();
      reject(signal?.reason);
    };
    const cancel = clock.setTimer(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Manual time for tests. advance() moves time forward, firing due timers in order and letting
 * the promise chains they start settle before moving on, so async loops observe each tick.
 */
export class FakeClock implements TimerClock {
  private t: number;
  private seq = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.t = startMs;
  }

  now(): number {
    return this.t;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return () => this.timers.delete(id);
  }

  pendingTimers(): number {
    return this.timers.size;
  }

  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    await flushMicrotasks();
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= target && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
      await flushMicrotasks();
    }
    this.t = target;
    await flushMicrotasks();
  }
}

/** Lets pending promise continuations (including ones that hop through I/O-free awaits) run. */
export async function flushMicrotasks(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/**
 * The wait of a periodic loop that can be woken early: wait() resolves after its period, on
 * kick(), or on abort, and at once when kick() came while nobody was waiting.
 */
export class Waker {
  private wakeUp: (() => void) | undefined;
  private pending = false;

  kick(): void {
    this.pending = true;
    this.wakeUp?.();
  }

  wait(clock: TimerClock, ms: number, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        cancel();
        signal.removeEventListener('abort', done);
        this.wakeUp = undefined;
        this.pending = false;
        resolve();
      };
      const cancel = clock.setTimer(ms, done);
      signal.addEventListener('abort', done, { once: true });
      this.wakeUp = done;
    });
  }
}
