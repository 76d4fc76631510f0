// The report's view model: what the generator computes from results.json (and a baseline) and embeds
// in the page as JSON. The browser script only renders it, so every number it shows is computed
// here, in Node, where it is unit-tested.

import type {
  BenchmarkResult,
  CaseResult,
  CellResult,
  CriCallSource,
  CriContractStatus,
  Outcome,
  RunCpu,
  RunResults,
  RuntimeInfo,
  StartupBreakdown,
  StartupFloor,
  StartupTarget,
  TimelineEntry,
} from '../results/model.js';

export interface OutcomeCounts {
  total: number;
  passed: number;
  failed: number;
  skipped: number;
}

/** Nearest-rank percentiles of a sample, in milliseconds. */
export interface LatencySummary {
  count: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface RuntimeLatency extends LatencySummary {
  runtime: string;
}

/**
 * Where a runtime's pod start-ups went: every pod of every cell with per-pod rows, pooled; the
 * bare floor its startup cell measured and the target against it.
 */
export interface RuntimeStartupBreakdown extends Omit<StartupBreakdown, 'perPod' | 'incomplete'> {
  runtime: string;
  floor?: StartupFloor;
  target?: StartupTarget;
}

export interface CriMethodLatency extends LatencySummary {
  runtime: string;
  /** Who made the calls: our agent on the node, or the harness checking the runtime. */
  source: CriCallSource;
  method: string;
  /** Calls that returned a gRPC code other than OK. */
  errors: number;
}

/**
 * How a cell compares with the same cell in the baseline run:
 * - regressed: passed before, fails now;
 * - slower: passed both times, and the duration grew beyond the thresholds;
 * - fixed: failed before, passes now;
 * - new: the baseline has no such cell;
 * - unchanged: anything else.
 */
export type ComparisonVerdict = 'regressed' | 'slower' | 'fixed' | 'new' | 'unchanged';

export interface CellComparison {
  verdict: ComparisonVerdict;
  baselineOutcome?: Outcome;
  baselineDurationMs?: number;
  /** (current - baseline) / baseline * 100, when both durations are known. */
  durationDeltaPct?: number;
}

export interface RegressionThresholds {
  /** A passing cell is "slower" when its duration grew by at least this percentage... */
  durationPct: number;
  /** ...and by at least this many milliseconds (so jitter on short cells is not flagged). */
  durationMinMs: number;
  /** A CRI method regressed when its p99 is at least this many times the baseline's... */
  criP99Ratio: number;
  /** ...and at least this many milliseconds higher (sub-millisecond calls jitter by 2× and more). */
  criMinMs: number;
}

/** A runtime's CRI method, by one caller, whose p99 latency grew beyond the thresholds. */
export interface CriRegression {
  runtime: string;
  source: CriCallSource;
  method: string;
  p99: number;
  baselineP99: number;
}

/** One CRI method of the contract table, and what each runtime column made of it. */
export interface ContractTableRow {
  method: string;
  service?: string;
  /** When kubelet 1.33 calls it; absent for a method the agent called that the kubelet does not. */
  when?: string;
  /** Per runtime name; a runtime whose results have no contract has no entry. */
  runtimes: Record<string, { status: CriContractStatus; text: string }>;
}

export interface ReportCell extends Omit<CellResult, 'cases'> {
  /** `${runtime}/${scenario}`: the cell's key in the URL hash. */
  id: string;
  comparison?: CellComparison;
  cases?: ReportCase[];
}

/** A named case as the drill-down shows it. */
export interface ReportCase extends CaseResult {
  /** The name with its [labels], as Ginkgo's full text. */
  title: string;
  /** For a failed case: the events of the pods it created. */
  events: TimelineEntry[];
}

export interface BaselineSummary {
  runId: string;
  startedAt: string;
  counts: OutcomeCounts;
  thresholds: RegressionThresholds;
  /** Ids of cells whose verdict is regressed or slower, in matrix order. */
  regressions: string[];
  /** CRI methods whose p99 regressed (from `runtimes[].criCalls`), by method, runtime, caller. */
  criRegressions: CriRegression[];
  fixed: string[];
  /** Cells present in the baseline but absent from this run. */
  missing: string[];
}

/** The matrix's CPU-seconds (issue 32), from the run's record and its cells'. */
export interface CpuSummary {
  /** What the run recorded (RunResults.cpu): every container, the harness, the host. */
  run: RunCpu;
  /** Each runtime column's node containers over the run, summed. */
  byRuntime: { runtime: string; nodeSeconds: number }[];
  /** The cells' nodeSeconds summed (a node that cells shared counts once per cell). */
  cellNodeSeconds: number;
}

export interface ReportModel {
  generatedAt: string;
  run: Pick<RunResults, 'runId' | 'startedAt' | 'finishedAt' | 'durationMs' | 'host'>;
  runtimes: RuntimeInfo[];
  scenarios: string[];
  cells: ReportCell[];
  counts: OutcomeCounts;
  countsByRuntime: Record<string, OutcomeCounts>;
  baseline?: BaselineSummary;
  podStartup: RuntimeLatency[];
  startupBreakdown: RuntimeStartupBreakdown[];
  criLatency: CriMethodLatency[];
  /** The kubelet's CRI contract, method by method, per runtime (runtimes[].criContract). */
  criContract: ContractTableRow[];
  benchmarks: BenchmarkResult[];
  /** Absent for results recorded before CPU accounting. */
  cpu?: CpuSummary;
}
