// What the soak judges a leak by: the live heap after each major GC, read from the `--trace-gc`
// lines V8 prints on the process's stdout. RSS cannot tell a leak from garbage V8 has not collected
// yet; the heap a Mark-Compact leaves is what the process still references.

/** One Mark-Compact: V8's heap sizes (its "MB" are MiB) before and after, committed in brackets. */
export interface MarkCompact {
  /** Milliseconds since the isolate started, as V8 prints them. */
  ms: number;
  /** `(reduce)`: a collection that also shrinks the heap (memory reducer, heap snapshot, low memory). */
  reduce: boolean;
  beforeMiB: number;
  afterMiB: number;
  committedAfterMiB: number;
}

// `[pid:0xisolate]   239 ms: Mark-Compact (reduce) 65.9 (92.7) -> 21.1 (56.6) MB, pooled: ...`
const MARK_COMPACT =
  /^\[\d+:0x[0-9a-f]+\]\s+(\d+(?:\.\d+)?) ms: Mark-Compact( \(reduce\))? (\d+(?:\.\d+)?) \(\d+(?:\.\d+)?\) -> (\d+(?:\.\d+)?) \((\d+(?:\.\d+)?)\) MB\b/;

/** The Mark-Compact a `--trace-gc` line reports, or undefined for any other line (scavenges too). */
export function parseMarkCompact(line: string): MarkCompact | undefined {
  const m = MARK_COMPACT.exec(line);
  if (!m) return undefined;
  return {
    ms: Number(m[1]),
    reduce: m[2] !== undefined,
    beforeMiB: Number(m[3]),
    afterMiB: Number(m[4]),
    committedAfterMiB: Number(m[5]),
  };
}

/**
 * Flat: the median post-GC heap of the last window within this of the baseline's (the larger of
 * the two). The live heap at a Mark-Compact also holds what is in flight then (bodies, the watch
 * buffers of seven clients, a list being streamed): in a trial run, 162-164 MiB once the watch
 * cache was full, hence 8 MiB; 5 % for a larger heap (bigger objects in the cache). A leak of even
 * 100 bytes per admin request (some 40 000 a minute) adds 4 MiB a minute, 30 MiB over the run.
 */
export const HEAP_MARGIN = { miB: 8, percent: 5 };
/** Fewer Mark-Compacts than this in either window: no verdict. */
export const MIN_COLLECTIONS = 3;

/** A post-GC heap sample on the soak's clock (seconds since its traffic started). */
export interface HeapSample {
  t: number;
  afterMiB: number;
}

export interface HeapJudgement {
  /** `flat`, `growing`, or `too few Mark-Compacts` to say either. */
  verdict: 'flat' | 'growing' | 'too few Mark-Compacts';
  baseline: { from: number; to: number; collections: number; medianMiB?: number };
  last: { from: number; to: number; collections: number; medianMiB?: number };
  growthMiB?: number;
  margin: string;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const round = (x: number) => Math.round(x * 10) / 10;

/**
 * Compares the post-GC heap from the warm-up to the last minute with that of the last minute
 * (`end - 60` to `end`). A busy server runs a Mark-Compact only every 20 s or so once its heap is
 * large, so the baseline is the whole stretch between, not one minute, and the last window reaches
 * back to the last MIN_COLLECTIONS Mark-Compacts when its minute holds fewer.
 */
export function judgeHeap(
  series: HeapSample[],
  warmup: number,
  end: number,
  lastSeconds = 60,
): HeapJudgement {
  const afterWarmup = series.filter((s) => s.t >= warmup && s.t <= end);
  const lastFrom = Math.min(end - lastSeconds, afterWarmup.at(-MIN_COLLECTIONS)?.t ?? end - lastSeconds);
  const base = series.filter((s) => s.t >= warmup && s.t < lastFrom).map((s) => s.afterMiB);
  const last = series.filter((s) => s.t >= lastFrom && s.t <= end).map((s) => s.afterMiB);
  const margin = `${HEAP_MARGIN.miB} MiB or ${HEAP_MARGIN.percent} %`;
  const window = (from: number, to: number, xs: number[]) => ({
    from: round(from),
    to: round(to),
    collections: xs.length,
    ...(xs.length ? { medianMiB: round(median(xs)) } : {}),
  });
  const baseline = window(warmup, lastFrom, base);
  const lastWindow = window(lastFrom, end, last);
  if (base.length < MIN_COLLECTIONS || last.length < MIN_COLLECTIONS)
    return { verdict: 'too few Mark-Compacts', baseline, last: lastWindow, margin };
  const growth = median(last) - median(base);
  const flat = growth <= HEAP_MARGIN.miB || growth / median(base) <= HEAP_MARGIN.percent / 100;
  return {
    verdict: flat ? 'flat' : 'growing',
    baseline,
    last: lastWindow,
    growthMiB: round(growth),
    margin,
  };
}
