// The agent's CRI calls in a cell's results. A busy agent makes thousands of calls per scenario
// (the PLEG relists every second), so results.json keeps every call only in per-method statistics,
// and the timeline gets a bounded selection: the calls that explain a failure first. The calls are
// read from each node's log as its cells end, and counted per cell and per runtime.
import type { AgentCriCall } from '../node/cri-call-log.js';
import { summarize } from '../report/stats.js';
import type { CellResult, CriCallSource, CriCallStats, TimelineEntry } from '../results/model.js';
import { errorMessage } from '../support/errors.js';
import type { ReadyNode } from '../world/types.js';

/** Agent calls kept in one cell's timeline. */
export const AGENT_CALLS_IN_TIMELINE = 200;
/** A call this close to a failed assertion (or a failed cell's end) counts as near the failure. */
export const NEAR_FAILURE_MS = 5_000;
/** Of the read-only calls, the slowest this many are kept before the even sample. */
const SLOWEST_READS = 20;

/** Latencies per source and method; stats() summarises every call added. */
export class CriCallTally {
  private readonly byKey = new Map<
    string,
    { source: CriCallSource; method: string; ms: number[]; errors: number; codes: Record<string, number> }
  >();

  add(source: CriCallSource, call: { method: string; durationMs: number; code?: string }): void {
    const key = `${source}\u0000${call.method}`;
    let t = this.byKey.get(key);
    if (!t) {
      t = { source, method: call.method, ms: [], errors: 0, codes: {} };
      this.byKey.set(key, t);
    }
    t.ms.push(call.durationMs);
    if (call.code !== undefined && call.code !== 'OK') {
      t.errors++;
      t.codes[call.code] = (t.codes[call.code] ?? 0) + 1;
    }
  }

  get size(): number {
    return this.byKey.size;
  }

  stats(): CriCallStats[] {
    const out: CriCallStats[] = [];
    for (const t of this.byKey.values()) {
      const s = summarize(t.ms);
      if (s)
        out.push({
          source: t.source,
          method: t.method,
          errors: t.errors,
          ...(t.errors > 0 ? { codes: t.codes } : {}),
          ...s,
        });
    }
    return out.sort((a, b) => a.source.localeCompare(b.source) || a.method.localeCompare(b.method));
  }
}

/** Calls that only read state; everything else (RunPodSandbox, CreateContainer, PullImage...) changes it. */
export const isReadOnlyCall = (method: string): boolean =>
  /^(List|Version$|Status$|ImageFsInfo$)|(Status|Stats)$/.test(method);

/**
 * Picks at most `budget` of a cell's agent calls for its timeline, in this order until the budget
 * is spent: failed calls, calls within NEAR_FAILURE_MS of a failure, calls that change state, the
 * slowest read-only calls, then an even sample of the remaining ones. `failuresAt` are times in
 * ms since the cell started. Returned in time order.
 */
export function selectAgentCalls(
  calls: readonly AgentCriCall[],
  cellStart: number,
  failuresAt: readonly number[],
  budget = AGENT_CALLS_IN_TIMELINE,
): AgentCriCall[] {
  const near = (c: AgentCriCall) => failuresAt.some((f) => Math.abs(c.at - cellStart - f) <= NEAR_FAILURE_MS);
  const classes: AgentCriCall[][] = [[], [], [], []];
  for (const c of calls) {
    const cls = c.code !== 'OK' ? 0 : near(c) ? 1 : !isReadOnlyCall(c.method) ? 2 : 3;
    classes[cls]!.push(c);
  }
  const reads = classes[3]!;
  const slowest = [...reads].sort((a, b) => b.durationMs - a.durationMs).slice(0, SLOWEST_READS);
  const slowSet = new Set(slowest);
  const ordered = [...classes.slice(0, 3), slowest, reads.filter((c) => !slowSet.has(c))];
  const picked: AgentCriCall[] = [];
  for (const group of ordered) {
    const room = budget - picked.length;
    if (room <= 0) break;
    picked.push(...evenly(group, room));
  }
  return picked.sort((a, b) => a.at - b.at);
}

/** At most n items, spread evenly over the list (all of them when they fit). */
function evenly<T>(items: readonly T[], n: number): T[] {
  if (items.length <= n) return [...items];
  return Array.from({ length: n }, (_, i) => items[Math.floor((i * items.length) / n)]!);
}

export function agentCallEntry(c: AgentCriCall, cellStart: number): TimelineEntry {
  return {
    t: c.at - cellStart,
    kind: 'cri-call',
    source: 'agent',
    summary: `${c.method}${c.error ? ` failed: ${c.error}` : ''}`,
    method: c.method,
    durationMs: c.durationMs,
    code: c.code,
  };
}

/**
 * The agent's CRI call log of one node, read for every cell that ends on it. Cells may share the
 * node, so what was read stays until no open cell can want it, and each call is counted once in
 * the runtime's tally.
 */
export class NodeCriCalls {
  private calls: AgentCriCall[] = [];
  private readonly open: number[] = [];
  private reading: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly node: Pick<ReadyNode, 'agentCriCalls'>,
    readonly tally: CriCallTally,
  ) {}

  begin(start: number): void {
    this.open.push(start);
  }

  /** The calls since `start`, up to what the log holds now; ends the cell that began at `start`. */
  async end(start: number): Promise<AgentCriCall[]> {
    const read = this.reading.then(async () => {
      const fresh = await this.node.agentCriCalls();
      for (const c of fresh) this.tally.add('agent', c);
      this.calls.push(...fresh);
    });
    this.reading = read.catch(() => {});
    try {
      await read;
      return this.calls.filter((c) => c.at >= start);
    } finally {
      this.open.splice(this.open.indexOf(start), 1);
      const keepFrom = Math.min(...this.open);
      this.calls = this.calls.filter((c) => c.at >= keepFrom);
    }
  }
}

/**
 * Puts a bounded selection of the agent's CRI calls during this cell into its timeline (near
 * failures first), and counts every call, the harness's own too, in the cell's statistics and the
 * harness's in the runtime's (the agent's are counted there as they are read). Returns the cell's
 * statistics.
 */
export async function mergeAgentCriCalls(
  calls: NodeCriCalls,
  start: number,
  timeline: TimelineEntry[],
  failuresAt: number[],
): Promise<CellResult['criCalls'] & {}> {
  const cellTally = new CriCallTally();
  for (const e of timeline) {
    if (e.kind !== 'cri-call' || !e.method || e.durationMs === undefined || e.source === 'agent') continue;
    const call = { method: e.method, durationMs: e.durationMs, ...(e.code ? { code: e.code } : {}) };
    cellTally.add('harness', call);
    calls.tally.add('harness', call);
  }
  let inCell: AgentCriCall[] = [];
  try {
    inCell = await calls.end(start);
  } catch (err) {
    timeline.push({
      t: Date.now() - start,
      kind: 'note',
      summary: `agent CRI calls not read: ${errorMessage(err)}`,
    });
  }
  for (const c of inCell) cellTally.add('agent', c);
  const kept = selectAgentCalls(inCell, start, failuresAt).map((c) => agentCallEntry(c, start));
  if (kept.length > 0) {
    timeline.push(...kept);
    timeline.sort((a, b) => a.t - b.t);
  }
  return cellTally.stats();
}
