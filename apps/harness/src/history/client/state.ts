// The history page's view state (runtime filter, which rows) and its URL hash form, so a link
// reopens the same view: #runtime=docker-26&rows=flaky. Pure: unit-tested without a DOM.
import type { HistoryModel, HistoryRow } from '../model.js';

export const ROW_FILTERS = {
  all: 'All rows',
  failing: 'Failing now',
  flaky: 'Flaky',
  changed: 'Changed in the newest run',
} as const;
export type RowFilter = keyof typeof ROW_FILTERS;

export interface HistoryViewState {
  runtime?: string;
  rows: RowFilter;
}

export function encodeHistoryHash(state: HistoryViewState): string {
  const parts: string[] = [];
  if (state.runtime) parts.push(`runtime=${encodeURIComponent(state.runtime)}`);
  if (state.rows !== 'all') parts.push(`rows=${state.rows}`);
  return parts.join('&');
}

/** The state a hash names; unknown values (a stale or edited link) are dropped. */
export function decodeHistoryHash(hash: string, model: Pick<HistoryModel, 'rows'>): HistoryViewState {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const rows = params.get('rows') ?? 'all';
  const runtime = params.get('runtime');
  return {
    rows: rows in ROW_FILTERS ? (rows as RowFilter) : 'all',
    ...(runtime && model.rows.some((r) => r.runtime === runtime) ? { runtime } : {}),
  };
}

/** The row failed in the newest run. */
export const failingNow = (r: HistoryRow) => r.results[0]?.outcome === 'failed';

const KEEP: Record<RowFilter, (r: HistoryRow) => boolean> = {
  all: () => true,
  failing: failingNow,
  flaky: (r) => r.flaky.length > 0,
  changed: (r) => r.status === 'new-failure' || r.status === 'fixed' || r.newFlake,
};

export function visibleRows(model: Pick<HistoryModel, 'rows'>, state: HistoryViewState): HistoryRow[] {
  return model.rows.filter((r) => (!state.runtime || r.runtime === state.runtime) && KEEP[state.rows](r));
}

/** The runtimes the rows use, in row order (the filter's choices, the grid's version rows). */
export function runtimesOf(rows: readonly Pick<HistoryRow, 'runtime'>[]): string[] {
  return [...new Set(rows.map((r) => r.runtime))];
}
