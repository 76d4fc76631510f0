// `run --shard i/n`: one of n parts of the runtime × scenario matrix, so CI jobs (or several
// Docker hosts) run the matrix side by side and `merge` puts the parts back together. Every shard
// computes the same split from the same inputs, so no coordinator is needed: the cells are
// assigned longest first to the least loaded shard, with durations from earlier results.json
// files, static estimates where those have none.

import { missingNeeds } from '../backends/started-node.js';
import type { RuntimeBackend } from '../backends/types.js';
import type { Scenario } from '../framework/scenario.js';
import { readResultsFile, resultsFilesUnder } from '../results/load.js';
import type { ShardInfo } from '../results/model.js';

export interface CellRef {
  runtime: string;
  scenario: string;
}

export const cellKey = (c: CellRef): string => `${c.runtime}/${c.scenario}`;

/** Parses `i/n` (1 ≤ i ≤ n). */
export function parseShard(spec: string): Pick<ShardInfo, 'index' | 'total'> {
  const m = /^(\d+)\/(\d+)$/.exec(spec.trim());
  const index = Number(m?.[1]);
  const total = Number(m?.[2]);
  if (!m || total < 1 || index < 1 || index > total)
    throw new Error(`--shard must be i/n with 1 ≤ i ≤ n, got "${spec}"`);
  return { index, total };
}

/** A scenario that states no estimate counts as a minute; the first run that has it times it for the next. */
export const UNKNOWN_SCENARIO_MS = 60_000;
/** What it costs a shard to bring up a runtime's node (about 5 s to Ready), so shards keep a runtime together. */
export const NODE_STARTUP_ESTIMATE_MS = 5_000;

export interface Durations {
  /** Cell duration by `runtime/scenario`, from the most recent results file that ran the cell. */
  cells: Map<string, number>;
  /** Node start-up by runtime. */
  startup: Map<string, number>;
}

/**
 * Reads durations from results files: each path is a results.json or a directory searched for
 * them (recursively, as CI artifacts unpack). Skipped cells are ignored (a skip says nothing of
 * the time a run takes); a later run (startedAt) wins over an earlier one.
 */
export async function loadDurations(paths: readonly string[]): Promise<Durations> {
  const files: string[] = [];
  for (const p of paths) files.push(...(await resultsFilesUnder(p)));
  const runs = await Promise.all(files.map((f) => readResultsFile(f)));
  runs.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  const durations: Durations = { cells: new Map(), startup: new Map() };
  for (const run of runs) {
    for (const c of run.cells) if (c.outcome !== 'skipped') durations.cells.set(cellKey(c), c.durationMs);
    for (const r of run.runtimes) if (r.startupMs !== undefined) durations.startup.set(r.name, r.startupMs);
  }
  return durations;
}

/** Every cell of the selection, runtimes in registry order, scenarios in suite order. */
export function matrixCells(backends: readonly RuntimeBackend[], scenarios: readonly Scenario[]): CellRef[] {
  return backends.flatMap((b) => scenarios.map((s) => ({ runtime: b.name, scenario: s.name })));
}

/**
 * The estimated time of each cell: a measured duration, else 0 for a cell that will be skipped
 * for a missing capability, else the scenario's static estimate.
 */
export function estimateCells(
  backends: readonly RuntimeBackend[],
  scenarios: readonly Scenario[],
  durations: Durations,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const b of backends) {
    for (const s of scenarios) {
      const key = cellKey({ runtime: b.name, scenario: s.name });
      const skips = missingNeeds(b, s).length > 0;
      out.set(key, durations.cells.get(key) ?? (skips ? 0 : (s.estimateMs ?? UNKNOWN_SCENARIO_MS)));
    }
  }
  return out;
}

/**
 * Splits `cells` into `total` shards. A shard's load is its cells' estimates plus one node start-up
 * per runtime it runs. Longest cell first (ties by key), each goes to the shard whose load grows
 * least (ties: lowest index); then moves and swaps out of the most loaded shard are made while they
 * lower it, which keeps a runtime's cells together when start-ups would otherwise be paid twice.
 * Every cell lands in exactly one shard; the result depends only on the arguments.
 */
export function splitCells(
  cells: readonly CellRef[],
  total: number,
  estimateMs: ReadonlyMap<string, number>,
  startupMs: ReadonlyMap<string, number> = new Map(),
): CellRef[][] {
  const est = (c: CellRef) => estimateMs.get(cellKey(c)) ?? UNKNOWN_SCENARIO_MS;
  const load = (shard: readonly CellRef[]) =>
    shard.reduce((sum, c) => sum + est(c), 0) +
    [...new Set(shard.map((c) => c.runtime))].reduce(
      (sum, r) => sum + (startupMs.get(r) ?? NODE_STARTUP_ESTIMATE_MS),
      0,
    );
  const shards: CellRef[][] = Array.from({ length: total }, () => []);
  const order = [...cells].sort((a, b) => est(b) - est(a) || cellKey(a).localeCompare(cellKey(b)));
  for (const cell of order) {
    let best = 0;
    for (let i = 1; i < total; i++)
      if (load([...shards[i]!, cell]) < load([...shards[best]!, cell])) best = i;
    shards[best]!.push(cell);
  }
  // Each accepted change lowers the pair's larger load, so the sorted loads fall and this ends;
  // the bound only caps the work on a large matrix.
  for (let round = 0; round < 1_000 && improve(shards, load); round++);
  // Within a shard, the matrix order, so results read like an unsharded run's.
  const rank = new Map(cells.map((c, i) => [cellKey(c), i]));
  return shards.map((s) => s.sort((a, b) => rank.get(cellKey(a))! - rank.get(cellKey(b))!));
}

/** One move or swap between the most loaded shard and another that lowers the pair's maximum. */
function improve(shards: CellRef[][], load: (s: readonly CellRef[]) => number): boolean {
  const loads = shards.map(load);
  const top = loads.indexOf(Math.max(...loads));
  const from = shards[top]!;
  for (const [j, to] of shards.entries()) {
    if (j === top) continue;
    const before = Math.max(loads[top]!, loads[j]!);
    for (const [a, cell] of from.entries()) {
      const rest = from.filter((_, k) => k !== a);
      if (Math.max(load(rest), load([...to, cell])) < before) {
        shards[top] = rest;
        shards[j] = [...to, cell];
        return true;
      }
      for (const [b, other] of to.entries()) {
        const next = [...to.filter((_, k) => k !== b), cell];
        if (Math.max(load([...rest, other]), load(next)) < before) {
          shards[top] = [...rest, other];
          shards[j] = next;
          return true;
        }
      }
    }
  }
  return false;
}

/** The shard `index/total` of the selection, with the whole matrix recorded for `merge`. */
export function selectShard(
  spec: Pick<ShardInfo, 'index' | 'total'>,
  backends: readonly RuntimeBackend[],
  scenarios: readonly Scenario[],
  durations: Durations,
): ShardInfo {
  const cells = matrixCells(backends, scenarios);
  const shards = splitCells(
    cells,
    spec.total,
    estimateCells(backends, scenarios, durations),
    durations.startup,
  );
  return {
    ...spec,
    cells: shards[spec.index - 1]!.map(cellKey),
    matrix: cells.map(cellKey),
  };
}
