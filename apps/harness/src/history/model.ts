// The history of many runs (issue 31), as SIG Node's TestGrid shows a job: one row per cell (or
// per named case, when cells carry cases), one column per run, newest first. history.json is this
// model; `history --from` reads it back (runs and squares; the rest is derived again), and the
// page embeds it.
import type { Outcome, QuarantineRecord } from '../results/model.js';

export const HISTORY_SCHEMA_VERSION = 1;
export const HISTORY_KIND = 'kubelet-harness-history';

/** A column: one run, with what it ran on. */
export interface HistoryRun {
  runId: string;
  startedAt: string;
  durationMs: number;
  commit?: string;
  /** Each column of the run's matrix with its runtime's CRI name and version and node release. */
  runtimes: { name: string; runtimeName: string; runtimeVersion: string; release?: string }[];
  /** The run's report page: relative to the history page (runs/<file>.html), or a URL. */
  report?: string;
  /** Where the run came from, e.g. the CI run's page. */
  url?: string;
}

/** A square: one row's result in one run. */
export interface HistoryResult {
  outcome: Outcome;
  durationMs?: number;
  /** The failure's (or skip's) message, cut to REASON_MAX characters. */
  reason?: string;
  attempts?: number;
  quarantine?: QuarantineRecord;
}

/**
 * Where a row stands in the newest run, against its result before. A flaky row whose newest
 * outcome differs from the one before is `flaky`: that flip is neither a new failure nor a fix.
 */
export type RowStatus =
  | 'new-failure'
  | 'still-failing'
  | 'fixed'
  | 'flaky'
  | 'passing'
  | 'skipped'
  | 'absent';

export interface FailingSince {
  runId: string;
  startedAt: string;
  commit?: string;
  /** The streak reaches the oldest run read: it began earlier still. */
  beforeWindow: boolean;
}

export interface HistoryRow {
  /** `runtime/scenario`, or `runtime/scenario › case`. */
  id: string;
  runtime: string;
  scenario: string;
  case?: string;
  /** The report's cell id (`runtime/scenario`) its squares drill into. */
  cell: string;
  /** One per run, in `runs` order (newest first); null when the run did not have it. */
  results: (HistoryResult | null)[];
  // Derived (history/classify.ts):
  status: RowStatus;
  /** Why it is flaky within the flaky window; empty when it is not. */
  flaky: string[];
  /** Flaky now, and not in the window that ended one run earlier. */
  newFlake: boolean;
  /** Failed results in a row, counting back from its newest (skips and absences neither count nor break it). */
  failingFor: number;
  failingSince?: FailingSince;
  /** The quarantine of its newest result, when one held it. */
  quarantine?: QuarantineRecord;
}

/** Failures that share a message once numbers, ids and names are stripped (upstream's triage). */
export interface FailureCluster {
  signature: string;
  /** The newest failure's own message. */
  example: string;
  failures: number;
  /** Row ids, in row order. */
  rows: string[];
  runs: number;
}

export interface BenchPoint {
  at: string;
  value: number;
  target?: number;
  met?: boolean;
  commit?: string;
  /** The file the point was read from. */
  source: string;
}

/** One figure of one benchmark over time (history/bench.ts). */
export interface BenchSeries {
  benchmark: string;
  figure: string;
  unit?: string;
  points: BenchPoint[];
}

export interface HistoryAlert {
  kind: 'fail-after' | 'stale' | 'bench-regression';
  message: string;
  rows?: string[];
}

export interface HistorySettings {
  /** Runs kept, newest first. */
  runs: number;
  /** Runs the flakiness rule looks at. */
  flakyWindow: number;
  failAfter?: number;
  staleHours?: number;
  /** A bench figure's newest point this fraction worse than its window's median is an alert. */
  benchRegression?: number;
  /** Earlier points the median is taken over (default BENCH_WINDOW). */
  benchWindow?: number;
}

export interface HistoryModel {
  kind: typeof HISTORY_KIND;
  schemaVersion: typeof HISTORY_SCHEMA_VERSION;
  generatedAt: string;
  settings: HistorySettings;
  runs: HistoryRun[];
  rows: HistoryRow[];
  clusters: FailureCluster[];
  benches: BenchSeries[];
  /** Row ids by where they stand in the newest run (the nightly's job summary). */
  summary: { newFailures: string[]; newFlakes: string[]; fixed: string[]; stillFailing: string[] };
  alerts: HistoryAlert[];
}
