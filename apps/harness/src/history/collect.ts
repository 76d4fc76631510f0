// Runs into the history model: each results.json becomes a column and its cells (or their named
// cases) squares; an earlier history.json gives back its columns and squares; then the newest
// runs are kept and every row is classified again.
import { readFile } from 'node:fs/promises';
import type { CellResult, RunResults } from '../results/model.js';
import { benchRegressionAlert } from './bench.js';
import { alerts, classifyRow, type RawRow, summarize } from './classify.js';
import { clusterFailures } from './clusters.js';
import {
  type BenchSeries,
  HISTORY_KIND,
  HISTORY_SCHEMA_VERSION,
  type HistoryModel,
  type HistoryResult,
  type HistoryRun,
  type HistorySettings,
} from './model.js';

/** A failure's message is kept this long in a square (the run's report has all of it). */
export const REASON_MAX = 500;

type RowIdentity = Omit<RawRow, 'results'>;

/** One run as the history holds it: its column and its squares by row id. */
export interface RunEntry {
  run: HistoryRun;
  squares: Map<string, { row: RowIdentity; result: HistoryResult }>;
}

const cut = (s: string | undefined) =>
  s === undefined ? undefined : s.length > REASON_MAX ? `${s.slice(0, REASON_MAX - 1)}…` : s;

function square(
  r: Pick<CellResult, 'outcome' | 'reason' | 'attempts' | 'quarantine'> & { durationMs?: number },
): HistoryResult {
  const reason = cut(r.reason);
  return {
    outcome: r.outcome,
    ...(r.durationMs !== undefined ? { durationMs: r.durationMs } : {}),
    ...(reason ? { reason } : {}),
    ...(r.attempts !== undefined ? { attempts: r.attempts } : {}),
    ...(r.quarantine ? { quarantine: r.quarantine } : {}),
  };
}

/** A results file's column and squares: a row per cell, or per case of a cell that has cases. */
export function runEntry(results: RunResults, link: { report?: string; url?: string } = {}): RunEntry {
  const run: HistoryRun = {
    runId: results.runId,
    startedAt: results.startedAt,
    durationMs: results.durationMs,
    ...(results.commit ? { commit: results.commit } : {}),
    runtimes: results.runtimes.map((r) => ({
      name: r.name,
      runtimeName: r.runtimeName,
      runtimeVersion: r.runtimeVersion,
      ...(r.nodeImage ? { release: r.nodeImage.release } : {}),
    })),
    ...(link.report ? { report: link.report } : {}),
    ...(link.url ? { url: link.url } : {}),
  };
  const squares: RunEntry['squares'] = new Map();
  for (const cell of results.cells) {
    const id = `${cell.runtime}/${cell.scenario}`;
    const base = { runtime: cell.runtime, scenario: cell.scenario, cell: id };
    if (!cell.cases?.length) {
      squares.set(id, { row: { id, ...base }, result: square(cell) });
      continue;
    }
    for (const c of cell.cases) {
      const caseId = `${id} › ${c.name}`;
      // A quarantine of the whole cell holds each of its cases.
      const quarantine = c.quarantine ?? cell.quarantine;
      squares.set(caseId, {
        row: { id: caseId, ...base, case: c.name },
        result: square({ ...c, ...(quarantine ? { quarantine } : {}) }),
      });
    }
  }
  return { run, squares };
}

/** The columns and squares back out of a history model (history.json). */
export function entriesOf(model: Pick<HistoryModel, 'runs' | 'rows'>): RunEntry[] {
  return model.runs.map((run, i) => {
    const squares: RunEntry['squares'] = new Map();
    for (const { results, ...row } of model.rows) {
      const result = results[i];
      if (result)
        squares.set(row.id, {
          row: {
            id: row.id,
            runtime: row.runtime,
            scenario: row.scenario,
            cell: row.cell,
            ...(row.case ? { case: row.case } : {}),
          },
          result,
        });
    }
    return { run, squares };
  });
}

export class HistoryFileError extends Error {
  override name = 'HistoryFileError';
}

/** A history.json, checked as far as `entriesOf` and the bench series rely on it. */
export async function readHistoryFile(
  path: string,
): Promise<Pick<HistoryModel, 'runs' | 'rows' | 'benches'>> {
  let data: unknown;
  try {
    data = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new HistoryFileError(`${path}: ${(err as Error).message}`);
  }
  const fail = (what: string): never => {
    throw new HistoryFileError(`${path}: ${what}`);
  };
  const m = data as Partial<HistoryModel>;
  if (m?.kind !== HISTORY_KIND) fail(`not a kubelet-harness history (kind ${JSON.stringify(m?.kind)})`);
  if (m.schemaVersion !== HISTORY_SCHEMA_VERSION)
    fail(`$.schemaVersion must be ${HISTORY_SCHEMA_VERSION}, got ${JSON.stringify(m.schemaVersion)}`);
  if (!Array.isArray(m.runs)) fail('$.runs must be an array');
  if (!Array.isArray(m.rows)) fail('$.rows must be an array');
  const runs = m.runs as HistoryRun[];
  runs.forEach((r, i) => {
    if (typeof r?.runId !== 'string' || typeof r.startedAt !== 'string' || !Array.isArray(r.runtimes))
      fail(`$.runs[${i}] needs runId, startedAt and runtimes`);
  });
  (m.rows as HistoryModel['rows']).forEach((row, i) => {
    if (typeof row?.id !== 'string' || typeof row.cell !== 'string' || !Array.isArray(row.results))
      fail(`$.rows[${i}] needs id, cell and results`);
    if (row.results.length !== runs.length)
      fail(`$.rows[${i}].results must have one entry per run (${runs.length})`);
  });
  return { runs, rows: m.rows as HistoryModel['rows'], benches: Array.isArray(m.benches) ? m.benches : [] };
}

/**
 * The model over the newest `settings.runs` runs (a run read twice counts once: the later entry
 * wins), rows in the newest run's matrix order, every row classified, failures clustered.
 */
export function buildHistory(
  entries: readonly RunEntry[],
  benches: BenchSeries[],
  settings: HistorySettings,
  now: Date,
): HistoryModel {
  const byId = new Map<string, RunEntry>();
  for (const e of entries) byId.set(e.run.runId, e);
  const kept = [...byId.values()]
    .sort(
      (a, b) =>
        Date.parse(b.run.startedAt) - Date.parse(a.run.startedAt) || b.run.runId.localeCompare(a.run.runId),
    )
    .slice(0, settings.runs);
  const runs = kept.map((e) => e.run);
  // Rows in the order the newest run that has them lists them: scenario by scenario, then runtime.
  const identities = new Map<string, RowIdentity>();
  for (const e of kept)
    for (const [id, { row }] of e.squares) if (!identities.has(id)) identities.set(id, row);
  const scenarioOrder = orderOf([...identities.values()].map((r) => r.scenario));
  const runtimeOrder = orderOf([...identities.values()].map((r) => r.runtime));
  const rows = [...identities.values()]
    .map((row, seen) => ({ row, seen }))
    .sort(
      (a, b) =>
        scenarioOrder.get(a.row.scenario)! - scenarioOrder.get(b.row.scenario)! ||
        runtimeOrder.get(a.row.runtime)! - runtimeOrder.get(b.row.runtime)! ||
        a.seen - b.seen,
    )
    .map(({ row }) =>
      classifyRow(
        { ...row, results: kept.map((e) => e.squares.get(row.id)?.result ?? null) },
        runs,
        settings.flakyWindow,
      ),
    );
  return {
    kind: HISTORY_KIND,
    schemaVersion: HISTORY_SCHEMA_VERSION,
    generatedAt: now.toISOString(),
    settings,
    runs,
    rows,
    clusters: clusterFailures(rows),
    benches,
    summary: summarize(rows),
    alerts: [
      ...alerts(rows, runs, {
        now,
        ...(settings.failAfter !== undefined ? { failAfter: settings.failAfter } : {}),
        ...(settings.staleHours !== undefined ? { staleHours: settings.staleHours } : {}),
      }),
      ...[benchRegressionAlert(benches, settings)].filter((a) => a !== undefined),
    ],
  };
}

function orderOf(values: readonly string[]): Map<string, number> {
  const order = new Map<string, number>();
  for (const v of values) if (!order.has(v)) order.set(v, order.size);
  return order;
}
