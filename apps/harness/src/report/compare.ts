import type { CellResult, RunResults } from '../results/model.js';
import type { CellComparison, CriRegression, RegressionThresholds } from './model.js';

/** Issue 18's gate: a cell 1.5× slower, a CRI method's p99 2× higher. */
export const DEFAULT_THRESHOLDS: RegressionThresholds = {
  durationPct: 50,
  durationMinMs: 500,
  criP99Ratio: 2,
  criMinMs: 5,
};

export function cellId(cell: Pick<CellResult, 'runtime' | 'scenario'>): string {
  return `${cell.runtime}/${cell.scenario}`;
}

/** Compares one cell with its baseline counterpart (undefined when the baseline lacks it). */
export function compareCell(
  current: CellResult,
  baseline: CellResult | undefined,
  thresholds: RegressionThresholds,
): CellComparison {
  if (!baseline) return { verdict: 'new' };
  const comparison: CellComparison = {
    verdict: 'unchanged',
    baselineOutcome: baseline.outcome,
    baselineDurationMs: baseline.durationMs,
  };
  if (baseline.durationMs > 0) {
    comparison.durationDeltaPct = ((current.durationMs - baseline.durationMs) / baseline.durationMs) * 100;
  }
  if (baseline.outcome === 'passed' && current.outcome === 'failed') {
    comparison.verdict = 'regressed';
  } else if (baseline.outcome === 'failed' && current.outcome === 'passed') {
    comparison.verdict = 'fixed';
  } else if (
    baseline.outcome === 'passed' &&
    current.outcome === 'passed' &&
    current.durationMs - baseline.durationMs >= thresholds.durationMinMs &&
    current.durationMs >= baseline.durationMs * (1 + thresholds.durationPct / 100)
  ) {
    // Durations of failed cells are not compared: a failure often ends on a timeout.
    comparison.verdict = 'slower';
  }
  return comparison;
}

export interface RunComparison {
  byCell: Map<string, CellComparison>;
  /** Baseline cells with no counterpart in the current run. */
  missing: string[];
  cri: CriRegression[];
}

export function compareRuns(
  current: RunResults,
  baseline: RunResults,
  thresholds: RegressionThresholds = DEFAULT_THRESHOLDS,
): RunComparison {
  const before = new Map(baseline.cells.map((c) => [cellId(c), c]));
  const byCell = new Map<string, CellComparison>();
  for (const cell of current.cells) {
    byCell.set(cellId(cell), compareCell(cell, before.get(cellId(cell)), thresholds));
  }
  const missing = [...before.keys()].filter((id) => !byCell.has(id));
  return { byCell, missing, cri: compareCriLatency(current, baseline, thresholds) };
}

/**
 * CRI methods (per runtime and caller, from `runtimes[].criCalls`, which count every call of the
 * run) whose p99 is at least `criP99Ratio` times the baseline's and `criMinMs` higher. Methods
 * either run lacks are not compared.
 */
export function compareCriLatency(
  current: RunResults,
  baseline: RunResults,
  thresholds: RegressionThresholds,
): CriRegression[] {
  const key = (runtime: string, source: string, method: string) => `${runtime}\u0000${source}\u0000${method}`;
  const before = new Map<string, number>();
  for (const r of baseline.runtimes)
    for (const c of r.criCalls ?? []) before.set(key(r.name, c.source, c.method), c.p99);
  const out: CriRegression[] = [];
  for (const r of current.runtimes) {
    for (const c of r.criCalls ?? []) {
      const baselineP99 = before.get(key(r.name, c.source, c.method));
      if (baselineP99 === undefined) continue;
      if (c.p99 >= baselineP99 * thresholds.criP99Ratio && c.p99 - baselineP99 >= thresholds.criMinMs)
        out.push({ runtime: r.name, source: c.source, method: c.method, p99: c.p99, baselineP99 });
    }
  }
  return out.sort(
    (a, b) =>
      a.method.localeCompare(b.method) ||
      a.runtime.localeCompare(b.runtime) ||
      a.source.localeCompare(b.source),
  );
}
