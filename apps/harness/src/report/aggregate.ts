import { roundSeconds } from '../node/cpu.js';
import { caseEvents, caseTitle } from '../results/cases.js';
import { contractText, criContract, KUBELET_CRI_METHODS } from '../results/contract.js';
import type {
  CaseResult,
  CellResult,
  CriCallSource,
  Outcome,
  RunCpu,
  RunResults,
  RuntimeInfo,
} from '../results/model.js';
import { heldByQuarantine } from '../results/quarantine.js';
import { startupBreakdown, startupTargets } from '../results/startup.js';
import { cellId, compareRuns, DEFAULT_THRESHOLDS } from './compare.js';
import type {
  BaselineSummary,
  ContractTableRow,
  CpuSummary,
  CriMethodLatency,
  OutcomeCounts,
  RegressionThresholds,
  ReportCase,
  ReportCell,
  ReportModel,
  RuntimeLatency,
  RuntimeStartupBreakdown,
} from './model.js';
import { summarize } from './stats.js';

export function countCells(cells: readonly Pick<CellResult, 'outcome'>[]): OutcomeCounts {
  const counts: OutcomeCounts = { total: 0, passed: 0, failed: 0, skipped: 0 };
  for (const cell of cells) {
    counts.total++;
    counts[cell.outcome satisfies Outcome]++;
  }
  return counts;
}

/**
 * The matrix axes: declared runtimes and scenarios first, in the run's order, then any that only
 * appear in cells (a partial or hand-edited results file must still show every cell).
 */
export function matrixAxes(results: RunResults): { runtimes: RuntimeInfo[]; scenarios: string[] } {
  const runtimes = [...results.runtimes];
  const known = new Set(runtimes.map((r) => r.name));
  const scenarios = [...results.scenarios];
  const knownScenarios = new Set(scenarios);
  for (const cell of results.cells) {
    if (!known.has(cell.runtime)) {
      known.add(cell.runtime);
      runtimes.push({ name: cell.runtime, runtimeName: cell.runtime, runtimeVersion: 'unknown' });
    }
    if (!knownScenarios.has(cell.scenario)) {
      knownScenarios.add(cell.scenario);
      scenarios.push(cell.scenario);
    }
  }
  return { runtimes, scenarios };
}

/** Pod start-up latency per runtime, from every cell's podStartupMs. Runtimes with none are left out. */
export function podStartupByRuntime(results: RunResults, runtimes: readonly RuntimeInfo[]): RuntimeLatency[] {
  const out: RuntimeLatency[] = [];
  for (const { name } of runtimes) {
    const sample = results.cells.filter((c) => c.runtime === name).flatMap((c) => c.podStartupMs ?? []);
    const summary = summarize(sample);
    if (summary) out.push({ runtime: name, ...summary });
  }
  return out;
}

/** Each runtime's pooled start-up breakdown, with its floor and target. Runtimes with neither are left out. */
export function startupBreakdownByRuntime(
  results: RunResults,
  runtimes: readonly RuntimeInfo[],
): RuntimeStartupBreakdown[] {
  const targets = startupTargets(results.cells);
  return runtimes.flatMap(({ name }) => {
    const cells = results.cells.filter((c) => c.runtime === name);
    const rows = cells.flatMap((c) => c.startupBreakdown?.perPod ?? []);
    const floor = cells.find((c) => c.startupFloor)?.startupFloor;
    if (rows.length === 0 && !floor) return [];
    const pooled = startupBreakdown(rows);
    const target = targets.get(name);
    return [
      {
        runtime: name,
        pods: rows.length,
        total: pooled?.total ?? { p50: 0, p90: 0, p99: 0 },
        stages: pooled?.stages ?? [],
        ...(floor ? { floor } : {}),
        ...(target ? { target } : {}),
      },
    ];
  });
}

/**
 * CRI call latency per method, runtime and caller (our agent or the harness). A runtime's
 * `criCalls` counts every call of the run; results without it (older files) fall back to the
 * cri-call entries of its cells' timelines.
 */
export function criLatencyByMethod(
  results: RunResults,
  runtimes: readonly RuntimeInfo[],
): CriMethodLatency[] {
  const out: CriMethodLatency[] = [];
  for (const rt of runtimes) {
    if (rt.criCalls) {
      for (const { source, method, count, errors, min, p50, p90, p99, max } of rt.criCalls)
        out.push({ runtime: rt.name, source, method, errors, count, min, p50, p90, p99, max });
      continue;
    }
    const samples = new Map<
      string,
      { source: CriCallSource; method: string; ms: number[]; errors: number }
    >();
    for (const cell of results.cells) {
      if (cell.runtime !== rt.name) continue;
      for (const entry of cell.timeline) {
        if (entry.kind !== 'cri-call' || !entry.method || entry.durationMs === undefined) continue;
        const source = entry.source ?? 'harness';
        const key = `${source}\u0000${entry.method}`;
        let s = samples.get(key);
        if (!s) {
          s = { source, method: entry.method, ms: [], errors: 0 };
          samples.set(key, s);
        }
        s.ms.push(entry.durationMs);
        if (entry.code && entry.code !== 'OK') s.errors++;
      }
    }
    for (const s of samples.values()) {
      const summary = summarize(s.ms);
      if (summary)
        out.push({ runtime: rt.name, source: s.source, method: s.method, errors: s.errors, ...summary });
    }
  }
  const runtimeOrder = new Map(runtimes.map((r, i) => [r.name, i]));
  return out.sort(
    (a, b) =>
      a.method.localeCompare(b.method) ||
      (runtimeOrder.get(a.runtime) ?? 0) - (runtimeOrder.get(b.runtime) ?? 0) ||
      a.source.localeCompare(b.source),
  );
}

export interface BuildReportOptions {
  baseline?: RunResults;
  thresholds?: RegressionThresholds;
  /** Injected so tests produce stable output. */
  now?: Date;
}

/**
 * The contract table: a row per method of any runtime's contract, kubelet 1.33's methods first in
 * their order. Results written before the contract existed get one from their CRI statistics.
 */
export function contractTable(runtimes: readonly RuntimeInfo[]): ContractTableRow[] {
  const rows = new Map<string, ContractTableRow>();
  const when = new Map(KUBELET_CRI_METHODS.map((m) => [m.method, m.when]));
  for (const rt of runtimes) {
    const contract = rt.criContract ?? (rt.criCalls ? criContract(rt.criCalls) : []);
    for (const r of contract) {
      let row = rows.get(r.method);
      if (!row) {
        const w = when.get(r.method);
        row = {
          method: r.method,
          ...(r.service ? { service: r.service } : {}),
          ...(w ? { when: w } : {}),
          runtimes: {},
        };
        rows.set(r.method, row);
      }
      row.runtimes[rt.name] = { status: r.status, text: contractText(r) };
    }
  }
  const order = new Map(KUBELET_CRI_METHODS.map((m, i) => [m.method, i]));
  const rank = (m: string) => order.get(m) ?? order.size;
  return [...rows.values()].sort(
    (a, b) => rank(a.method) - rank(b.method) || a.method.localeCompare(b.method),
  );
}

export function buildReportModel(results: RunResults, options: BuildReportOptions = {}): ReportModel {
  const { runtimes, scenarios } = matrixAxes(results);
  const thresholds = options.thresholds ?? DEFAULT_THRESHOLDS;
  const comparison = options.baseline ? compareRuns(results, options.baseline, thresholds) : undefined;

  // Matrix order (scenario rows, runtime columns), so lists derived from cells read like the table.
  const runtimeOrder = new Map(runtimes.map((r, i) => [r.name, i]));
  const scenarioOrder = new Map(scenarios.map((s, i) => [s, i]));
  const cells: ReportCell[] = results.cells
    .map((cell) => {
      const id = cellId(cell);
      const cmp = comparison?.byCell.get(id);
      const { cases, ...rest } = cell;
      return {
        ...rest,
        id,
        ...(cmp ? { comparison: cmp } : {}),
        ...(cases ? { cases: cases.map((k) => reportCase(cell, k)) } : {}),
      };
    })
    .sort(
      (a, b) =>
        scenarioOrder.get(a.scenario)! - scenarioOrder.get(b.scenario)! ||
        runtimeOrder.get(a.runtime)! - runtimeOrder.get(b.runtime)!,
    );

  const countsByRuntime: Record<string, OutcomeCounts> = {};
  for (const { name } of runtimes)
    countsByRuntime[name] = countCells(cells.filter((c) => c.runtime === name));

  let baseline: BaselineSummary | undefined;
  if (options.baseline && comparison) {
    const verdictOf = (c: ReportCell) => c.comparison?.verdict;
    baseline = {
      runId: options.baseline.runId,
      startedAt: options.baseline.startedAt,
      counts: countCells(options.baseline.cells),
      thresholds,
      // A failure a quarantine holds is shown as regressed in the matrix but does not gate the run.
      regressions: cells
        .filter((c) => (verdictOf(c) === 'regressed' && !heldByQuarantine(c)) || verdictOf(c) === 'slower')
        .map((c) => c.id),
      criRegressions: comparison.cri,
      fixed: cells.filter((c) => verdictOf(c) === 'fixed').map((c) => c.id),
      missing: comparison.missing,
    };
  }

  const { runId, startedAt, finishedAt, durationMs, host } = results;
  return {
    generatedAt: (options.now ?? new Date()).toISOString(),
    run: { runId, startedAt, finishedAt, durationMs, host },
    runtimes,
    scenarios,
    cells,
    counts: countCells(cells),
    countsByRuntime,
    ...(baseline ? { baseline } : {}),
    podStartup: podStartupByRuntime(results, runtimes),
    startupBreakdown: startupBreakdownByRuntime(results, runtimes),
    criLatency: criLatencyByMethod(results, runtimes),
    criContract: contractTable(runtimes),
    benchmarks: results.benchmarks ?? [],
    ...(results.cpu ? { cpu: cpuSummary(results.cpu, results.cells) } : {}),
  };
}

export function cpuSummary(run: RunCpu, cells: readonly CellResult[]): CpuSummary {
  const byRuntime = new Map<string, number>();
  for (const n of run.nodes)
    byRuntime.set(n.runtime ?? n.name, (byRuntime.get(n.runtime ?? n.name) ?? 0) + n.seconds);
  return {
    run,
    byRuntime: [...byRuntime].map(([runtime, s]) => ({ runtime, nodeSeconds: roundSeconds(s) })),
    cellNodeSeconds: roundSeconds(cells.reduce((sum, c) => sum + (c.cpu?.nodeSeconds ?? 0), 0)),
  };
}

/** A case with its title and, when it failed, its pods' events (results/cases.ts). */
export const reportCase = (cell: CellResult, k: CaseResult): ReportCase => ({
  ...k,
  title: caseTitle(k),
  events: k.outcome === 'failed' ? caseEvents(cell, k) : [],
});
