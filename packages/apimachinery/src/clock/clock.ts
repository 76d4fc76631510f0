// The time source every loop and timestamp goes through, so that tests step time instead of
// sleeping: production code gets realClock, tests a FakeClock whose timers fire only when the
// test moves time on.

/** Reads the time. */
export interface Clock {
  /** Unix time in milliseconds. */
  now(): number;
}

/** A clock that can also schedule work. */
export interface TimerClock extends Clock {
  /** Calls fn after ms; returns a function that cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

/** The system clock. Its timers do not keep the process alive. */
export const realClock: TimerClock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref();
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

/** Lets pending promise continuations (including ones that hop through I/O-free awaits) run. */
export async function flushMicrotasks(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * Manual time for tests. step() moves time forward synchronously, firing due timers in time
 * order (same-time timers in the order they were set, timers they set are honoured too);
 * advance() does the same but lets the promise chains each timer starts settle before moving
 * on, so async loops observe every tick.
 */
export class FakeClock implements TimerClock {
  #now: number;
  #seq = 0;
  #timers: Timer[] = [];

  /** Starts at `startMs` (Unix ms), by default 2026-01-01T00:00:00Z. */
  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer: Timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  /** Timers set and not yet fired or cancelled. */
  pendingTimers(): number {
    return this.#timers.length;
  }

  step(ms: number): void {
    const target = this.#now + ms;
    while (this.#fireNext(target));
    this.#now = target;
  }

  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await flushMicrotasks();
    while (this.#fireNext(target)) await flushMicrotasks();
    this.#now = target;
    await flushMicrotasks();
  }

  /** Fires the earliest timer due by `target`; false when there is none. */
  #fireNext(target: number): boolean {
    let due: Timer | undefined;
    for (const t of this.#timers) {
      if (t.at <= target && (!due || t.at < due.at || (t.at === due.at && t.seq < due.seq))) due = t;
    }
    if (!due) return false;
    this.#timers = this.#timers.filter((t) => t !== due);
    this.#now = Math.max(this.#now, due.at);
    due.fn();
    return true;
  }
}
