// Arithmetic of the benchmark. A pod create costs the runtime three calls whoever makes them
// (RunPodSandbox, CreateContainer, StartContainer): those are the bare floor. Everything else in
// a syncPod window is the manager's overhead: its own CPU, file system work, waiting to be
// scheduled, and any other CRI call it makes (status reads, image checks) unless that call runs
// while an essential one is in flight.

export interface Interval {
  start: number;
  end: number;
}

export interface Call extends Interval {
  method: string;
}

/** The CRI calls a pod with one container cannot be created without. */
export const EssentialCreateCalls: readonly string[] = ['RunPodSandbox', 'CreateContainer', 'StartContainer'];

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
  /** Part of totalMs covered by the essential calls (EssentialCreateCalls). */
  essentialMs: number;
  /** totalMs - essentialMs: what a pod costs beyond the bare calls. */
  overheadMs: number;
  /** Part of totalMs covered by no CRI call at all: the agent's own work and scheduling waits. */
  outsideCriMs: number;
  /** CPU time this process used meanwhile (agent logic plus gRPC encoding/decoding). */
  cpuMs: number;
  /** Time inside each CRI method during the window (calls of one method summed). */
  callMs: Record<string, number>;
}

/** Clips calls to a window and splits the window's wall time into essential, other CRI and outside. */
export function splitWindow(
  start: number,
  end: number,
  calls: Call[],
  essential: readonly string[] = EssentialCreateCalls,
): Omit<Sample, 'cpuMs'> {
  const inWindow = calls
    .map((c) => ({ method: c.method, start: Math.max(c.start, start), end: Math.min(c.end, end) }))
    .filter((c) => c.end > c.start);
  const essentialMs = unionLength(inWindow.filter((c) => essential.includes(c.method)));
  const callMs: Record<string, number> = {};
  for (const c of inWindow) callMs[c.method] = (callMs[c.method] ?? 0) + (c.end - c.start);
  const totalMs = end - start;
  return {
    totalMs,
    essentialMs,
    overheadMs: totalMs - essentialMs,
    outsideCriMs: totalMs - unionLength(inWindow),
    callMs,
  };
}

/** Collects CRI call intervals (fed from CriClient's onCall) and measures windows against them. */
export class CriTimeline {
  readonly #calls: Call[] = [];

  /** Pass as `onCall`: the event arrives when the call ends, carrying its duration. */
  readonly onCall = (e: { method: string; durationMs: number }): void => {
    const end = performance.now();
    this.#calls.push({ method: e.method, start: end - e.durationMs, end });
  };

  /** Runs `fn` and splits its wall time against the CRI calls made meanwhile. */
  async measure(fn: () => Promise<unknown>, essential?: readonly string[]): Promise<Sample> {
    const from = this.#calls.length;
    const cpu = process.cpuUsage();
    const start = performance.now();
    await fn();
    const end = performance.now();
    const used = process.cpuUsage(cpu);
    const split = splitWindow(start, end, this.#calls.slice(from), essential);
    // Only the window's calls matter later; the rest would grow with every pod.
    this.#calls.length = 0;
    return { ...split, cpuMs: (used.user + used.system) / 1000 };
  }
}
