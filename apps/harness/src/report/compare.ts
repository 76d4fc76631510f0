import type { CellResult, RunResults } from '../results/model.js';
import type { CellComparison, RegressionThresholds } from './model.js';

export const DEFAULT_THRESHOLDS: RegressionThresholds = { durationPct: 20, durationMinMs: 500 };

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
    current.durationMs > baseline.durationMs * (1 + thresholds.durationPct / 100)
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
  return { byCell, missing };
}
