// What the history says about each row: flaky or not (and why), failing for how many runs and
// since which commit, where it stands in the newest run, and the alerts TestGrid's job annotations
// raise. Pure: runs and squares in, verdicts out.
//
// The flakiness rule. Within the flaky window (the newest `flakyWindow` runs), a row is flaky when
//  1. it passed only on a retry (a result with attempts > 1), or
//  2. it passed and failed at the same commit: nothing in the code changed between the two, or
//  3. its outcome changed more than once (passed, failed, passed again; or the reverse). A change
//     of code explains one lasting change, a regression or a fix; an outcome that changes back
//     without one is the nightly's flake. A regression fixed within the window reads as flaky
//     until it leaves the window; the columns' commits tell the two apart.
// Skipped results and runs without the row are left out of every rule.
import type { QuarantineRecord } from '../results/model.js';
import type {
  FailingSince,
  HistoryAlert,
  HistoryModel,
  HistoryResult,
  HistoryRow,
  HistoryRun,
  RowStatus,
} from './model.js';
import { shortCommit } from './wording.js';

/** A row before classification: its identity and its squares. */
export type RawRow = Pick<HistoryRow, 'id' | 'runtime' | 'scenario' | 'case' | 'cell' | 'results'>;

interface Judged {
  run: HistoryRun;
  result: HistoryResult & { outcome: 'passed' | 'failed' };
}

/** The row's passed and failed results among `runs[from, to)`, newest first. */
function judged(row: RawRow, runs: readonly HistoryRun[], from: number, to: number): Judged[] {
  const out: Judged[] = [];
  for (let i = from; i < Math.min(to, runs.length); i++) {
    const r = row.results[i];
    if (r && r.outcome !== 'skipped') out.push({ run: runs[i]!, result: r as Judged['result'] });
  }
  return out;
}

/** Why the row is flaky within `runs[from, from + window)`; empty when it is not. */
export function flakyReasons(
  row: RawRow,
  runs: readonly HistoryRun[],
  from: number,
  window: number,
): string[] {
  const seen = judged(row, runs, from, from + window);
  const reasons: string[] = [];
  const retried = seen.filter((j) => j.result.outcome === 'passed' && (j.result.attempts ?? 1) > 1);
  for (const j of retried) reasons.push(`passed only on try ${j.result.attempts} in run ${j.run.runId}`);
  const byCommit = new Map<string, Set<string>>();
  for (const j of seen) {
    if (!j.run.commit) continue;
    const outcomes = byCommit.get(j.run.commit) ?? new Set<string>();
    outcomes.add(j.result.outcome);
    byCommit.set(j.run.commit, outcomes);
  }
  for (const [commit, outcomes] of byCommit)
    if (outcomes.size > 1) reasons.push(`passed and failed at the same commit ${shortCommit(commit)}`);
  const chronological = seen.map((j) => j.result.outcome).reverse();
  let changes = 0;
  for (let i = 1; i < chronological.length; i++) if (chronological[i] !== chronological[i - 1]) changes++;
  if (changes > 1) {
    const runsSeen = Math.min(window, runs.length - from);
    reasons.push(`changed outcome ${changes} times in the last ${runsSeen} runs`);
  }
  return reasons;
}

/** Failed results in a row from the newest, and the run the streak began in. */
export function failingStreak(
  row: RawRow,
  runs: readonly HistoryRun[],
): { failingFor: number; failingSince?: FailingSince } {
  const seen = judged(row, runs, 0, runs.length);
  let n = 0;
  while (n < seen.length && seen[n]!.result.outcome === 'failed') n++;
  if (n === 0) return { failingFor: 0 };
  const first = seen[n - 1]!.run;
  return {
    failingFor: n,
    failingSince: {
      runId: first.runId,
      startedAt: first.startedAt,
      ...(first.commit ? { commit: first.commit } : {}),
      beforeWindow: n === seen.length && first === runs[runs.length - 1],
    },
  };
}

/**
 * Where the row stands in the newest run, against its last passed or failed result before; a
 * flaky row that flipped there is `flaky`, not a new failure or a fix.
 */
export function rowStatus(row: RawRow, runs: readonly HistoryRun[], flaky: boolean): RowStatus {
  const newest = row.results[0];
  if (!newest) return 'absent';
  if (newest.outcome === 'skipped') return 'skipped';
  const before = judged(row, runs, 1, runs.length)[0]?.result.outcome;
  if (flaky && before && before !== newest.outcome) return 'flaky';
  if (newest.outcome === 'failed') return before === 'failed' ? 'still-failing' : 'new-failure';
  return before === 'failed' ? 'fixed' : 'passing';
}

/** Every verdict of one row. */
export function classifyRow(row: RawRow, runs: readonly HistoryRun[], flakyWindow: number): HistoryRow {
  const flaky = flakyReasons(row, runs, 0, flakyWindow);
  const before = runs.length > 1 ? flakyReasons(row, runs, 1, flakyWindow) : [];
  const newest = row.results.find((r) => r && r.outcome !== 'skipped');
  const quarantine: QuarantineRecord | undefined = newest?.quarantine;
  return {
    ...row,
    status: rowStatus(row, runs, flaky.length > 0),
    flaky,
    newFlake: flaky.length > 0 && before.length === 0,
    ...failingStreak(row, runs),
    ...(quarantine ? { quarantine } : {}),
  };
}

export function summarize(rows: readonly HistoryRow[]): HistoryModel['summary'] {
  const ids = (keep: (r: HistoryRow) => boolean) => rows.filter(keep).map((r) => r.id);
  return {
    newFailures: ids((r) => r.status === 'new-failure'),
    newFlakes: ids((r) => r.newFlake),
    fixed: ids((r) => r.status === 'fixed'),
    stillFailing: ids((r) => r.status === 'still-failing'),
  };
}

/**
 * TestGrid's job annotations: `failAfter` rows failed that many runs in a row (a row whose newest
 * failure a quarantine held is left out: it has an owner and an expiry); `staleHours`: the newest
 * run started longer ago than that (or there is no run at all).
 */
export function alerts(
  rows: readonly HistoryRow[],
  runs: readonly HistoryRun[],
  opts: { failAfter?: number; staleHours?: number; now: Date },
): HistoryAlert[] {
  const out: HistoryAlert[] = [];
  if (opts.failAfter !== undefined) {
    const n = opts.failAfter;
    const failing = rows.filter((r) => r.failingFor >= n && !r.quarantine);
    if (failing.length > 0)
      out.push({
        kind: 'fail-after',
        message: `${failing.length} ${failing.length === 1 ? 'row has' : 'rows have'} failed ${n} or more runs in a row: ${failing
          .map((r) => `${r.id} (${r.failingFor})`)
          .join(', ')}`,
        rows: failing.map((r) => r.id),
      });
  }
  if (opts.staleHours !== undefined) {
    const newest = runs[0];
    const ageHours = newest ? (opts.now.getTime() - Date.parse(newest.startedAt)) / 3_600_000 : Infinity;
    if (ageHours > opts.staleHours)
      out.push({
        kind: 'stale',
        message: newest
          ? `the newest run, ${newest.runId}, started ${ageHours.toFixed(1)} hours ago (more than ${opts.staleHours})`
          : `no run at all (a run is expected every ${opts.staleHours} hours)`,
      });
  }
  return out;
}
