// How runs and streaks read: the same words on the history page (grid, summary) and in the
// Markdown summary. Pure, so both the page's script and the command use it.
import type { HistoryRow, HistoryRun } from './model.js';

export const shortCommit = (commit: string | undefined) => (commit ? commit.slice(0, 7) : 'no commit');

/** `2026-11-28 03:17` (UTC). */
export const runDate = (iso: string) => new Date(iso).toISOString().replace('T', ' ').slice(0, 16);

export const runLabel = (run: HistoryRun) => `run ${run.runId} of ${runDate(run.startedAt)} UTC`;

/** `failing for 4 runs, since 1a2b3c4 (2026-11-25 03:17)`, or `…at least 10 runs, since before …`. */
export function describeSince(
  row: Pick<HistoryRow, 'failingFor' | 'failingSince'>,
  runs: readonly HistoryRun[],
): string {
  const since = row.failingSince;
  if (!since) return '';
  const n = row.failingFor;
  const runsText = `${n} run${n === 1 ? '' : 's'}`;
  const at = `${shortCommit(since.commit)} (${runDate(since.startedAt)})`;
  return since.beforeWindow && runs.length > 0
    ? `failing for at least ${runsText}, since before ${at}`
    : `failing for ${runsText}, since ${at}`;
}
