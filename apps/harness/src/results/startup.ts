// Pod start-up, stage by stage: the agent's record of each pod's steps (its GET /debug/startup)
// becomes one row per pod, the rows a cell's breakdown, and the run's pod start-up is held
// against the runtime's bare floor (issue 21's target). Used by the runner, `merge`, the report
// and the startup scenario, so all of them mean the same thing by each stage.
import { type PodStartupRecord, startupStages } from '@kh/node-agent';
import {
  type CellResult,
  type Percentiles,
  type PodStartupRow,
  type RuntimeInfo,
  STARTUP_STAGES,
  type StartupBreakdown,
  type StartupTarget,
} from './model.js';

/** One pod as the agent's GET /debug/startup lists it (Unix ms; absent: not reached). */
export type AgentStartupRecord = PodStartupRecord;

/** A cell keeps its per-pod rows up to this many pods. */
export const STARTUP_ROWS_KEPT = 100;
/** Issue 21: pod start-up p50 at most this many times the runtime's bare floor. */
export const STARTUP_TARGET_RATIO = 2;

/**
 * The pod's row, or undefined when the agent did not see every step. `createdAt` is when the pod
 * appeared in the API (the harness's first sight of it, or its create request); the agent's watch
 * can see it first, so the earlier of the two starts the clock.
 */
export function podStartupRow(r: AgentStartupRecord, createdAt?: number): PodStartupRow | undefined {
  const stages = startupStages(r, createdAt);
  return stages && { pod: `${r.namespace}/${r.name}`, ...stages };
}

/**
 * What is wrong with a row: a negative stage (steps out of order) or stages that do not add up to
 * the total. Empty when it is consistent.
 */
export function rowProblems(row: PodStartupRow): string[] {
  const problems = STARTUP_STAGES.flatMap((stage, i) =>
    (row.stagesMs[i] ?? Number.NaN) >= 0 ? [] : [`${row.pod}: ${stage} is ${row.stagesMs[i]} ms`],
  );
  const sum = row.stagesMs.reduce((a, b) => a + b, 0);
  if (row.stagesMs.length !== STARTUP_STAGES.length || Math.abs(sum - row.totalMs) > 0.5)
    problems.push(`${row.pod}: stages add up to ${sum} ms, the total is ${row.totalMs} ms`);
  return problems;
}

/** Nearest-rank percentiles (as the report's): always a value that was measured. */
export function percentiles(sample: readonly number[]): Percentiles {
  const sorted = [...sample].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
  return { p50: at(50), p90: at(90), p99: at(99) };
}

/** The breakdown of these rows; undefined when there are none and nothing was incomplete. */
export function startupBreakdown(
  rows: readonly PodStartupRow[],
  incomplete = 0,
): StartupBreakdown | undefined {
  if (rows.length === 0 && incomplete === 0) return undefined;
  return {
    pods: rows.length,
    incomplete,
    total: percentiles(rows.map((r) => r.totalMs)),
    stages: STARTUP_STAGES.map((stage, i) => ({ stage, ...percentiles(rows.map((r) => r.stagesMs[i]!)) })),
    ...(rows.length > 0 && rows.length <= STARTUP_ROWS_KEPT ? { perPod: [...rows] } : {}),
  };
}

/**
 * Issue 21's target per runtime: the p50 of every pod start-up the run's cells observed against
 * the single-pod floor its startup cell measured. Runtimes without a floor have none.
 */
export function startupTargets(cells: readonly CellResult[]): Map<string, StartupTarget> {
  const out = new Map<string, StartupTarget>();
  for (const runtime of new Set(cells.map((c) => c.runtime))) {
    const mine = cells.filter((c) => c.runtime === runtime);
    const floorMs = mine.find((c) => c.startupFloor)?.startupFloor?.singleMs;
    const sample = mine.flatMap((c) => c.podStartupMs ?? []);
    if (!floorMs || sample.length === 0) continue;
    const { p50 } = percentiles(sample);
    const ratio = Math.round((p50 / floorMs) * 100) / 100;
    out.set(runtime, {
      p50Ms: p50,
      floorMs,
      ratio,
      limit: STARTUP_TARGET_RATIO,
      met: ratio <= STARTUP_TARGET_RATIO,
    });
  }
  return out;
}

/** The runtimes with their targets (replacing any they had). */
export function withStartupTargets(
  runtimes: readonly RuntimeInfo[],
  cells: readonly CellResult[],
): RuntimeInfo[] {
  const targets = startupTargets(cells);
  return runtimes.map(({ startupTarget: _, ...r }) => {
    const t = targets.get(r.name);
    return t ? { ...r, startupTarget: t } : r;
  });
}
