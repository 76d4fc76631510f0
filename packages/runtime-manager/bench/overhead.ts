// Agent-side overhead of a sync: wall time minus the time covered by CRI calls. Calls can
// overlap (getPodStatus fans out), so CRI time is the length of the union of call intervals.

export interface Interval {
  start: number;
  end: number;
}

export function unionLength(intervals: Interval[]): number {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  let total = 0;
  let curStart = Number.NEGATIVE_INFINITY;
  let curEnd = Number.NEGATIVE_INFINITY;
  for (const i of sorted) {
    if (i.start > curEnd) {
      if (curEnd > curStart) total += curEnd - curStart;
      curStart = i.start;
      curEnd = i.end;
    } else {
      curEnd = Math.max(curEnd, i.end);
    }
  }
  if (curEnd > curStart) total += curEnd - curStart;
  return total;
}

/** Nearest-rank percentile of `values` (p in 0..100). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export interface Sample {
  totalMs: number;
  /** Part of totalMs covered by CRI calls. */
  criMs: number;
  /** totalMs - criMs: what the agent adds, including time it waited to be scheduled. */
  overheadMs: number;
  /** CPU time this process used meanwhile (agent logic plus gRPC encoding/decoding). */
  cpuMs: number;
}

/** Collects CRI call intervals (fed from CriClient's onCall) and measures windows against them. */
export class CriTimeline {
  readonly #calls: Interval[] = [];

  /** Pass as `onCall`: the event arrives when the call ends, carrying its duration. */
  readonly onCall = (e: { durationMs: number }): void => {
    const end = performance.now();
    this.#calls.push({ start: end - e.durationMs, end });
  };

  /** Runs `fn` and returns its wall time and the part of it spent inside CRI calls. */
  async measure(fn: () => Promise<unknown>): Promise<Sample> {
    const from = this.#calls.length;
    const cpu = process.cpuUsage();
    const start = performance.now();
    await fn();
    const end = performance.now();
    const used = process.cpuUsage(cpu);
    const inWindow = this.#calls
      .slice(from)
      .map((c) => ({ start: Math.max(c.start, start), end: Math.min(c.end, end) }))
      .filter((c) => c.end > c.start);
    const criMs = unionLength(inWindow);
    return {
      totalMs: end - start,
      criMs,
      overheadMs: end - start - criMs,
      cpuMs: (used.user + used.system) / 1000,
    };
  }
}
