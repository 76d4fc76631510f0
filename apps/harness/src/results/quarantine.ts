// Quarantine (issue 31): kh.config.json names cells, or cases of a cell, whose failures are known
// and owned. They still run and are reported, failures included, but such a failure does not fail
// the run until the entry's expiry date has passed; from the next day on it fails the run again.
// An entry with a symptom holds only the failures that show it.
import type { QuarantineEntry } from '../support/project-config.js';
import type { CaseResult, CellResult, QuarantineRecord, RunResults } from './model.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** An entry holds through the whole of its expiry date, UTC. */
export function quarantineActive(entry: Pick<QuarantineEntry, 'expires'>, now: Date): boolean {
  return now.getTime() < Date.parse(`${entry.expires}T00:00:00Z`) + DAY_MS;
}

const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );

/** Whether the entry's `cell` pattern (runtime/scenario, `*` in either part) names this cell. */
export function namesCell(
  entry: Pick<QuarantineEntry, 'cell'>,
  cell: Pick<CellResult, 'runtime' | 'scenario'>,
) {
  return glob(entry.cell).test(`${cell.runtime}/${cell.scenario}`);
}

const record = ({ owner, expires, reason }: QuarantineEntry): QuarantineRecord => ({
  owner,
  expires,
  reason,
});

export interface QuarantineOutcome {
  results: RunResults;
  /** Entries past their expiry that named a failure of this run: the failures now fail the run. */
  expired: { entry: QuarantineEntry; failures: string[] }[];
}

/**
 * Marks the cells and cases that unexpired entries name (`quarantine` on the cell or case, passed
 * or not, so the report and the history show it) and lists the expired entries that named a failure.
 */
export function applyQuarantine(
  results: RunResults,
  entries: readonly QuarantineEntry[],
  now: Date,
): QuarantineOutcome {
  const expired = new Map<QuarantineEntry, string[]>();
  const pick = (cell: CellResult, item: CellResult | CaseResult, name: string | undefined, id: string) => {
    const failed = item.outcome === 'failed';
    let held: QuarantineRecord | undefined;
    for (const e of entries) {
      if (e.case !== name || !namesCell(e, cell)) continue;
      if (e.symptom !== undefined && !(failed && showsOnly(item, new RegExp(e.symptom)))) continue;

      if (quarantineActive(e, now)) held ??= record(e);
      else if (failed) expired.set(e, [...(expired.get(e) ?? []), id]);
    }
    return held;
  };
  const cells = results.cells.map((cell) => {
    const id = `${cell.runtime}/${cell.scenario}`;
    const { quarantine: _stale, ...rest } = cell;
    const held = pick(cell, cell, undefined, id);
    const cases = cell.cases?.map((c): CaseResult => {
      const { quarantine: _old, ...k } = c;
      const q = pick(cell, c, c.name, `${id} › ${c.name}`);
      return q ? { ...k, quarantine: q } : k;
    });
    return { ...rest, ...(cases ? { cases } : {}), ...(held ? { quarantine: held } : {}) };
  });
  return {
    results: { ...results, cells },
    expired: [...expired].map(([entry, failures]) => ({ entry, failures })),
  };
}

/**
 * Whether every failure of a cell or case shows the symptom: each failed assertion (its message
 * and what was seen, as JSON), or the reason when no assertion failed (a timeout, a crash).
 */
function showsOnly(item: CellResult | CaseResult, symptom: RegExp): boolean {
  const failed = (item.assertions ?? []).filter((a) => a.outcome === 'failed');
  const texts =
    failed.length > 0
      ? failed.map((a) => `${a.name}: ${a.message ?? ''} ${JSON.stringify(a.actual) ?? ''}`)
      : [item.reason ?? ''];
  return texts.every((t) => symptom.test(t));
}

/**
 * A failed cell that does not fail the run: the cell is quarantined, or it has failed cases and
 * every one of them is.
 */
export function heldByQuarantine(cell: Pick<CellResult, 'outcome' | 'quarantine' | 'cases'>): boolean {
  if (cell.outcome !== 'failed') return false;
  if (cell.quarantine) return true;
  const failed = cell.cases?.filter((c) => c.outcome === 'failed') ?? [];
  return failed.length > 0 && failed.every((c) => c.quarantine);
}

/** Whether this cell makes the run fail (`run`'s exit status, the e2e matrix test). */
export function failsRun(cell: Pick<CellResult, 'outcome' | 'quarantine' | 'cases'>): boolean {
  return cell.outcome === 'failed' && !heldByQuarantine(cell);
}
