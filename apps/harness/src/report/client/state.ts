// The view state (filters and the open cell) and its URL hash form, so a copied link reopens the
// same view: #runtime=containerd&scenario=probes&failures=1&cell=containerd/probes. Pure: the unit
// tests run it without a DOM.
import type { ReportModel } from '../model.js';

export interface ViewState {
  runtime?: string;
  scenario?: string;
  failuresOnly: boolean;
  /** Id (`runtime/scenario`) of the cell whose drill-down is open. */
  cell?: string;
}

type Axes = Pick<ReportModel, 'runtimes' | 'scenarios' | 'cells'>;

// Readable hashes: '/' in a cell id needs no escaping inside a fragment.
const encodeValue = (v: string) => encodeURIComponent(v).replace(/%2F/gi, '/');

export function encodeHash(state: ViewState): string {
  const parts: string[] = [];
  if (state.runtime) parts.push(`runtime=${encodeValue(state.runtime)}`);
  if (state.scenario) parts.push(`scenario=${encodeValue(state.scenario)}`);
  if (state.failuresOnly) parts.push('failures=1');
  if (state.cell) parts.push(`cell=${encodeValue(state.cell)}`);
  return parts.join('&');
}

export function decodeHash(hash: string): ViewState {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const state: ViewState = { failuresOnly: ['1', 'true'].includes(params.get('failures') ?? '') };
  const runtime = params.get('runtime');
  const scenario = params.get('scenario');
  const cell = params.get('cell');
  if (runtime) state.runtime = runtime;
  if (scenario) state.scenario = scenario;
  if (cell) state.cell = cell;
  return state;
}

/** Drops values the report does not know (a stale or hand-edited link), so they filter nothing out. */
export function normalizeState(state: ViewState, model: Axes): ViewState {
  const out: ViewState = { failuresOnly: state.failuresOnly };
  if (state.runtime && model.runtimes.some((r) => r.name === state.runtime)) out.runtime = state.runtime;
  if (state.scenario && model.scenarios.includes(state.scenario)) out.scenario = state.scenario;
  if (state.cell && model.cells.some((c) => c.id === state.cell)) out.cell = state.cell;
  return out;
}

/**
 * Rows and columns the matrix shows. "Failures only" keeps the rows and columns that hold at least
 * one failed cell, so a failure is always seen next to the same scenario on the other runtimes.
 */
export function visibleAxes(model: Axes, state: ViewState): { runtimes: string[]; scenarios: string[] } {
  let runtimes = model.runtimes.map((r) => r.name).filter((r) => !state.runtime || r === state.runtime);
  let scenarios = model.scenarios.filter((s) => !state.scenario || s === state.scenario);
  if (state.failuresOnly) {
    const failed = model.cells.filter(
      (c) => c.outcome === 'failed' && runtimes.includes(c.runtime) && scenarios.includes(c.scenario),
    );
    runtimes = runtimes.filter((r) => failed.some((c) => c.runtime === r));
    scenarios = scenarios.filter((s) => failed.some((c) => c.scenario === s));
  }
  return { runtimes, scenarios };
}
