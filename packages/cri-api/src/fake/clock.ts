/** Time source of the fake runtime: CRI timestamps (ns) and timers for scripted exits and delays. */
export interface Clock {
  /** Unix time in nanoseconds. */
  nowNs(): bigint;
  /** Calls `fn` after `ms`; returns a function that cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  nowNs: () => BigInt(Date.now()) * 1_000_000n,
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that only moves when told to, so tests can step through scripted container exits and
 * exec timeouts deterministically: `clock.advance(5_000)` fires every timer due in those 5 s.
 */
export class ManualClock implements Clock {
  #nowMs: number;
  #seq = 0;
  #timers: Timer[] = [];

  /** Starts at `startMs` (Unix ms), by default 2024-01-01T00:00:00Z. */
  constructor(startMs = Date.UTC(2024, 0, 1)) {
    this.#nowMs = startMs;
  }

  nowNs(): bigint {
    return BigInt(this.#nowMs) * 1_000_000n;
  }

  nowMs(): number {
    return this.#nowMs;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer: Timer = { at: this.#nowMs + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward, firing due timers in time order (timers they add are honoured too). */
  advance(ms: number): void {
    const target = this.#nowMs + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#nowMs = Math.max(this.#nowMs, due.at);
      due.fn();
    }
    this.#nowMs = target;
  }

  /** Number of timers not yet fired. */
  get pending(): number {
    return this.#timers.length;
  }
}
