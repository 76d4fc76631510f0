// The report page's script. It is compiled on its own (tsconfig.client.build.json, DOM typings) and
// inlined into the generated HTML, so it must stay a single module with no runtime imports. It only renders the view
// model embedded in the page; every string from it reaches the DOM through textContent or
// setAttribute, never through HTML parsing.

import type { CriMethodLatency, OutcomeCounts, ReportCell, ReportModel, RuntimeLatency } from '../model.js';

type Outcome = ReportCell['outcome'];
type TimelineEntry = ReportCell['timeline'][number];
type TimelineKind = TimelineEntry['kind'];

// ---------------------------------------------------------------------------------------------
// View state and its URL hash form: #runtime=containerd&scenario=probes&failures=1&cell=containerd/probes

export interface ViewState {
  runtime?: string;
  scenario?: string;
  failuresOnly: boolean;
  /** Id (`runtime/scenario`) of the cell whose drill-down is open. */
  cell?: string;
}

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
export function normalizeState(
  state: ViewState,
  model: Pick<ReportModel, 'runtimes' | 'scenarios' | 'cells'>,
) {
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
export function visibleAxes(
  model: Pick<ReportModel, 'runtimes' | 'scenarios' | 'cells'>,
  state: ViewState,
): { runtimes: string[]; scenarios: string[] } {
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

// ---------------------------------------------------------------------------------------------
// Formatting

export function formatMs(ms: number): string {
  if (ms < 10) return `${Number(ms.toFixed(1))} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

const STATUS: Record<Outcome, { icon: string; word: string; long: string }> = {
  passed: { icon: '✓', word: 'pass', long: 'passed' },
  failed: { icon: '✗', word: 'fail', long: 'failed' },
  skipped: { icon: '–', word: 'skip', long: 'skipped' },
};

const KIND_LABEL: Record<TimelineKind, string> = {
  'pod-phase': 'Pod phase',
  'container-state': 'Container',
  'node-condition': 'Node condition',
  event: 'Event',
  'cri-call': 'CRI call',
  note: 'Harness',
};

/** Okabe–Ito colours: distinguishable with the common colour-vision deficiencies. */
const SERIES_COLOURS = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9'];

// ---------------------------------------------------------------------------------------------
// DOM helpers: data only ever becomes text nodes or attribute values.

type Child = Node | string | number | null | undefined | false;

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

function s(
  tag: string,
  attrs: Record<string, string | number | undefined> = {},
  ...children: Child[]
): SVGElement {
  const el = document.createElementNS(SVG_NS, tag) as SVGElement;
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el: Element, attrs: Record<string, string | number | boolean | undefined>) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? '' : String(value));
  }
}

function append(el: Element, children: Child[]) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
}

function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`report page is missing #${id}`);
  return el as T;
}

/** Read by screen readers, not shown. */
function hiddenText(text: string): HTMLElement {
  return h('span', { class: 'visually-hidden' }, text);
}

function statusBadge(outcome: Outcome): HTMLElement {
  const st = STATUS[outcome];
  return h(
    'span',
    { class: `status status--${outcome}` },
    h('span', { 'aria-hidden': 'true' }, st.icon),
    ` ${st.word}`,
  );
}

function comparisonBadge(cell: ReportCell): HTMLElement | null {
  const cmp = cell.comparison;
  if (!cmp) return null;
  switch (cmp.verdict) {
    case 'regressed':
      return h(
        'span',
        { class: 'badge badge--regressed' },
        h('span', { 'aria-hidden': 'true' }, '▲'),
        ' regressed',
      );
    case 'slower':
      return h(
        'span',
        { class: 'badge badge--slower' },
        h('span', { 'aria-hidden': 'true' }, '△'),
        ` +${Math.round(cmp.durationDeltaPct ?? 0)}% slower`,
      );
    case 'fixed':
      return h('span', { class: 'badge badge--fixed' }, 'fixed');
    default:
      return null;
  }
}

function comparisonText(cell: ReportCell): string {
  const cmp = cell.comparison;
  if (!cmp) return '';
  if (cmp.verdict === 'new') return 'not in baseline';
  if (cmp.baselineOutcome === 'skipped') return 'skipped in baseline';
  const before = `${STATUS[cmp.baselineOutcome ?? 'skipped'].long} in ${formatMs(cmp.baselineDurationMs ?? 0)} in baseline`;
  switch (cmp.verdict) {
    case 'regressed':
      return `regression: ${before}`;
    case 'slower':
      return `duration regression: ${before}, ${Math.round(cmp.durationDeltaPct ?? 0)}% slower now`;
    case 'fixed':
      return `fixed: ${before}`;
    default:
      return before;
  }
}

function countsText(c: OutcomeCounts): string {
  return `${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`;
}

// ---------------------------------------------------------------------------------------------
// Charts (inline SVG)

/** Axis ticks at 1, 2 or 5 times a power of ten, covering [0, max]. */
export function niceTicks(max: number, target = 5): number[] {
  if (!(max > 0)) return [0];
  const raw = max / target;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * pow >= raw) ?? 10) * pow;
  const ticks: number[] = [];
  for (let v = 0; v <= max + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks[ticks.length - 1]! < max) ticks.push(ticks[ticks.length - 1]! + step);
  return ticks;
}

interface BarRow {
  group: string;
  label: string;
  colour: string;
  /** Bar length. */
  value: number;
  /** Optional whisker end (e.g. p99 beyond a p50 bar) and tick (p90). */
  whisker?: number;
  tick?: number;
  text: string;
}

/** Powers of ten covering [min, max], for a logarithmic axis. */
export function logTicks(min: number, max: number): number[] {
  const lo = Math.floor(Math.log10(Math.max(min, 1e-3)));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(max, 1e-3))));
  const ticks: number[] = [];
  for (let e = lo; e <= hi; e++) ticks.push(Number((10 ** e).toPrecision(1)));
  return ticks;
}

/**
 * A horizontal bar chart with rows grouped under labels. A log axis suits latencies that span
 * microsecond fakes and multi-second timeouts in one chart.
 */
function barChart(
  title: string,
  desc: string,
  rows: BarRow[],
  axisLabel: string,
  scale: 'linear' | 'log' = 'linear',
): SVGElement {
  const labelW = 190;
  const textW = 200;
  const plotW = 460;
  const rowH = 20;
  const groupGap = 14;
  const top = 8;
  const groups = [...new Set(rows.map((r) => r.group))];
  const height = top + rows.length * rowH + groups.length * groupGap + 36;
  const max = Math.max(...rows.map((r) => r.whisker ?? r.value), 0);
  const ticks = scale === 'log' ? logTicks(Math.min(...rows.map((r) => r.value)), max) : niceTicks(max);
  const lo = ticks[0]!;
  const hi = ticks[ticks.length - 1]! || 1;
  const x =
    scale === 'log'
      ? (v: number) =>
          labelW +
          ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plotW
      : (v: number) => labelW + (v / hi) * plotW;
  const width = labelW + plotW + textW;
  const svg = s('svg', {
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    class: 'chart',
    'aria-label': `${title}. ${desc}`,
  });
  svg.append(s('title', {}, title));
  const plotBottom = height - 30;
  for (const t of ticks) {
    svg.append(s('line', { x1: x(t), x2: x(t), y1: top, y2: plotBottom, class: 'grid' }));
    svg.append(
      s('text', { x: x(t), y: plotBottom + 14, 'text-anchor': 'middle', class: 'tick' }, formatTick(t)),
    );
  }
  svg.append(
    s(
      'text',
      { x: labelW + plotW / 2, y: plotBottom + 28, 'text-anchor': 'middle', class: 'axis' },
      axisLabel,
    ),
  );
  let y = top;
  for (const group of groups) {
    y += groupGap / 2;
    const members = rows.filter((r) => r.group === group);
    svg.append(
      s('text', { x: 0, y: y + (members.length * rowH) / 2 + 4, class: 'group-label' }, truncate(group, 26)),
    );
    for (const r of members) {
      const cy = y + rowH / 2;
      svg.append(
        s('rect', {
          x: labelW,
          y: y + 3,
          width: Math.max(1, x(r.value) - labelW),
          height: rowH - 6,
          fill: r.colour,
          rx: 2,
        }),
      );
      if (r.whisker !== undefined) {
        svg.append(
          s('line', { x1: x(r.value), x2: x(r.whisker), y1: cy, y2: cy, stroke: r.colour, class: 'whisker' }),
        );
        svg.append(
          s('line', {
            x1: x(r.whisker),
            x2: x(r.whisker),
            y1: cy - 5,
            y2: cy + 5,
            stroke: r.colour,
            class: 'whisker',
          }),
        );
      }
      if (r.tick !== undefined) {
        svg.append(
          s('line', {
            x1: x(r.tick),
            x2: x(r.tick),
            y1: cy - 4,
            y2: cy + 4,
            stroke: r.colour,
            class: 'whisker',
          }),
        );
      }
      const end = Math.max(x(r.whisker ?? r.value), x(r.value));
      svg.append(s('text', { x: end + 6, y: cy + 4, class: 'value' }, `${r.label} ${r.text}`));
      y += rowH;
    }
    y += groupGap / 2;
  }
  return svg;
}

function formatTick(v: number): string {
  return v >= 1000 ? `${Number((v / 1000).toPrecision(3))} s` : `${Number(v.toPrecision(3))} ms`;
}

function truncate(text: string, n: number): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

function dataTable(caption: string, head: string[], rows: (string | number)[][]): HTMLElement {
  return h(
    'details',
    { class: 'data' },
    h('summary', {}, `${caption}: data table`),
    h(
      'table',
      { class: 'compact' },
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, h('tr', {}, ...head.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((v) => h('td', {}, v))))),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// The page

class ReportPage {
  private state: ViewState = { failuresOnly: false };
  private readonly cellsById: Map<string, ReportCell>;
  private readonly colourOf: Map<string, string>;
  private cellElements = new Map<string, HTMLTableCellElement>();
  private grid: (HTMLTableCellElement | null)[][] = [];
  private readonly dialog = byId<HTMLDialogElement>('cell-dialog');

  constructor(private readonly model: ReportModel) {
    this.cellsById = new Map(model.cells.map((c) => [c.id, c]));
    this.colourOf = new Map(
      model.runtimes.map((r, i) => [r.name, SERIES_COLOURS[i % SERIES_COLOURS.length]!]),
    );
  }

  start() {
    this.renderHeader();
    this.renderSummary();
    this.renderFilters();
    this.renderBenchmarks();
    this.dialog.addEventListener('close', () => {
      // Escape, the close button, or a hash without a cell: keep the hash in step, give focus back.
      const closed = this.state.cell;
      if (closed) this.navigate({ ...this.state, cell: undefined });
      if (closed) this.cellElements.get(closed)?.focus();
    });
    byId('cell-close').addEventListener('click', () => this.dialog.close());
    window.addEventListener('hashchange', () => this.apply(decodeHash(location.hash)));
    this.apply(decodeHash(location.hash));
  }

  /**
   * Every state change is written to the URL hash, so a copied link restores exactly this view.
   * The view is updated at once; the hashchange that follows finds nothing left to do.
   */
  private navigate(next: ViewState) {
    const hash = encodeHash(next);
    if (hash === encodeHash(this.state)) return;
    location.replace(`#${hash}`);
    this.apply(next);
  }

  private apply(raw: ViewState) {
    const next = normalizeState(raw, this.model);
    const prev = this.state;
    const filtersChanged =
      this.grid.length === 0 ||
      next.runtime !== prev.runtime ||
      next.scenario !== prev.scenario ||
      next.failuresOnly !== prev.failuresOnly;
    this.state = next;
    if (filtersChanged) {
      this.syncFilterControls();
      this.renderMatrix();
      this.renderCharts();
    }
    if (next.cell) {
      if (next.cell !== prev.cell || !this.dialog.open) this.openCell(this.cellsById.get(next.cell)!);
    } else if (this.dialog.open) {
      this.dialog.close();
    }
  }

  private renderHeader() {
    const { run } = this.model;
    document.title = `kubelet-harness report · ${run.runId}`;
    const meta = byId('run-meta');
    meta.replaceChildren(
      h('span', {}, 'Run ', h('code', {}, run.runId)),
      h('span', {}, `started ${new Date(run.startedAt).toISOString().replace('T', ' ').slice(0, 19)} UTC`),
      h('span', {}, `took ${formatMs(run.durationMs)}`),
      h('span', {}, `host ${run.host.node} (${run.host.platform}, ${run.host.cpus} CPUs)`),
    );
    byId('generated-at').textContent = `Generated ${this.model.generatedAt}`;
  }

  private renderSummary() {
    const { counts, baseline } = this.model;
    const tile = (kind: string, label: string, value: number, icon?: string) =>
      h(
        'div',
        { class: `tile tile--${kind}`, 'data-count': kind },
        h('span', { class: 'tile-value' }, value),
        h(
          'span',
          { class: 'tile-label' },
          icon ? h('span', { 'aria-hidden': 'true' }, `${icon} `) : null,
          label,
        ),
      );
    const tiles = h(
      'div',
      { class: 'tiles' },
      tile('total', 'cells', counts.total),
      tile('passed', 'passed', counts.passed, STATUS.passed.icon),
      tile('failed', 'failed', counts.failed, STATUS.failed.icon),
      tile('skipped', 'skipped', counts.skipped, STATUS.skipped.icon),
    );
    const runtimes = h(
      'ul',
      { class: 'runtimes' },
      ...this.model.runtimes.map((r) =>
        h(
          'li',
          {},
          h('span', { class: 'swatch', 'data-runtime': r.name, 'aria-hidden': 'true' }),
          h('strong', {}, r.name),
          ` ${r.runtimeName} ${r.runtimeVersion}`,
          r.startupMs !== undefined ? ` · ready in ${formatMs(r.startupMs)}` : '',
          ` · ${countsText(this.model.countsByRuntime[r.name]!)}`,
        ),
      ),
    );
    const children: Node[] = [tiles, runtimes];
    if (baseline) {
      const list = (ids: string[], label: string, cls: string) =>
        ids.length === 0
          ? null
          : h(
              'div',
              { class: `changes ${cls}` },
              h('h3', {}, `${label} (${ids.length})`),
              h(
                'ul',
                {},
                ...ids.map((id) => {
                  const cell = this.cellsById.get(id)!;
                  const open = h('button', { type: 'button', class: 'linklike' }, id);
                  open.addEventListener('click', () => this.navigate({ ...this.state, cell: id }));
                  return h('li', {}, open, ` — ${comparisonText(cell)}`);
                }),
              ),
            );
      const t = baseline.thresholds;
      children.push(
        h(
          'section',
          { class: 'baseline', id: 'baseline', 'aria-labelledby': 'baseline-heading' },
          h('h3', { id: 'baseline-heading' }, 'Compared with baseline'),
          h(
            'p',
            {},
            'Baseline run ',
            h('code', {}, baseline.runId),
            ` (${countsText(baseline.counts)}). Duration regressions: slower by more than ${t.durationPct}% and at least ${formatMs(t.durationMinMs)}.`,
          ),
          baseline.regressions.length === 0
            ? h(
                'p',
                { class: 'no-regressions' },
                h('span', { 'aria-hidden': 'true' }, '✓ '),
                'No regressions.',
              )
            : list(baseline.regressions, 'Regressions', 'changes--regressed'),
          list(baseline.fixed, 'Fixed', 'changes--fixed'),
          baseline.missing.length > 0
            ? h('p', {}, `Not run this time: ${baseline.missing.join(', ')}.`)
            : null,
        ),
      );
    }
    byId('summary').replaceChildren(...children);
    // Swatch colours are per runtime, set through CSSOM (allowed by the page's CSP, unlike style attributes).
    for (const sw of document.querySelectorAll<HTMLElement>('.swatch')) {
      sw.style.background = this.colourOf.get(sw.dataset.runtime ?? '') ?? '#888';
    }
  }

  private renderFilters() {
    const runtime = byId<HTMLSelectElement>('filter-runtime');
    const scenario = byId<HTMLSelectElement>('filter-scenario');
    const failures = byId<HTMLInputElement>('filter-failures');
    runtime.replaceChildren(
      h('option', { value: '' }, 'All runtimes'),
      ...this.model.runtimes.map((r) => h('option', { value: r.name }, r.name)),
    );
    scenario.replaceChildren(
      h('option', { value: '' }, 'All scenarios'),
      ...this.model.scenarios.map((sc) => h('option', { value: sc }, sc)),
    );
    runtime.addEventListener('change', () =>
      this.navigate({ ...this.state, runtime: runtime.value || undefined }),
    );
    scenario.addEventListener('change', () =>
      this.navigate({ ...this.state, scenario: scenario.value || undefined }),
    );
    failures.addEventListener('change', () =>
      this.navigate({ ...this.state, failuresOnly: failures.checked }),
    );
    byId('filter-reset').addEventListener('click', () => this.navigate({ failuresOnly: false }));
  }

  private syncFilterControls() {
    byId<HTMLSelectElement>('filter-runtime').value = this.state.runtime ?? '';
    byId<HTMLSelectElement>('filter-scenario').value = this.state.scenario ?? '';
    byId<HTMLInputElement>('filter-failures').checked = this.state.failuresOnly;
  }

  private renderMatrix() {
    const { runtimes, scenarios } = visibleAxes(this.model, this.state);
    const container = byId('matrix');
    this.cellElements.clear();
    this.grid = [];
    const shown = this.model.cells.filter(
      (c) => runtimes.includes(c.runtime) && scenarios.includes(c.scenario),
    );
    const failed = shown.filter((c) => c.outcome === 'failed').length;
    byId('matrix-status').textContent =
      this.model.cells.length === 0
        ? 'This run recorded no results.'
        : shown.length === 0
          ? 'No cells match the filters.'
          : `Showing ${shown.length} of ${this.model.cells.length} cells (${failed} failed).`;
    if (shown.length === 0) {
      container.replaceChildren();
      return;
    }
    const info = new Map(this.model.runtimes.map((r) => [r.name, r]));
    const thead = h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col', class: 'corner' }, 'Scenario'),
        ...runtimes.map((r) =>
          h(
            'th',
            { scope: 'col' },
            h('span', { class: 'rt-name' }, r),
            h(
              'span',
              { class: 'rt-version' },
              `${info.get(r)?.runtimeName ?? ''} ${info.get(r)?.runtimeVersion ?? ''}`,
            ),
          ),
        ),
      ),
    );
    const tbody = h('tbody');
    scenarios.forEach((scenario, rowIndex) => {
      const row = h('tr', {}, h('th', { scope: 'row' }, scenario));
      const gridRow: (HTMLTableCellElement | null)[] = [];
      runtimes.forEach((runtime, colIndex) => {
        const cell = this.cellsById.get(`${runtime}/${scenario}`);
        const td = cell ? this.matrixCell(cell) : this.missingCell(runtime, scenario);
        td.dataset.row = String(rowIndex);
        td.dataset.col = String(colIndex);
        row.append(td);
        gridRow.push(td);
      });
      tbody.append(row);
      this.grid.push(gridRow);
    });
    const tfoot = h(
      'tfoot',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'row' }, 'Total'),
        ...runtimes.map((r) => {
          const c = this.model.countsByRuntime[r]!;
          return h(
            'td',
            { class: 'total', 'data-runtime-total': r },
            `${c.passed}/${c.total} passed`,
            c.failed ? h('span', { class: 'total-failed' }, ` · ${c.failed} failed`) : null,
          );
        }),
      ),
    );
    const table = h(
      'table',
      {
        class: 'matrix',
        role: 'grid',
        'aria-labelledby': 'matrix-heading',
        'aria-describedby': 'matrix-help',
      },
      thead,
      tbody,
      tfoot,
    );
    table.addEventListener('keydown', (ev) => this.onMatrixKey(ev));
    container.replaceChildren(table);
    // Roving tab stop: one cell in the tab order, the first failure if any.
    const first =
      this.grid.flat().find((td) => td && this.cellsById.get(td.dataset.cell ?? '')?.outcome === 'failed') ??
      this.grid[0]?.[0];
    if (first) first.tabIndex = 0;
  }

  private matrixCell(cell: ReportCell): HTMLTableCellElement {
    const muted = this.state.failuresOnly && cell.outcome !== 'failed';
    const regression = cell.comparison?.verdict === 'regressed' || cell.comparison?.verdict === 'slower';
    // The accessible name is the visible text plus hidden context around it (which cell; why it
    // was skipped; the baseline), so what is read out always contains what is shown.
    const after = [cell.outcome === 'skipped' ? cell.reason : undefined, comparisonText(cell)].filter(
      Boolean,
    );
    const td = h(
      'td',
      {
        role: 'gridcell',
        tabindex: -1,
        class: `cell cell--${cell.outcome}${muted ? ' cell--muted' : ''}${regression ? ' cell--regression' : ''}`,
        'data-cell': cell.id,
        'data-outcome': cell.outcome,
        'aria-haspopup': 'dialog',
        title: cell.reason,
      },
      hiddenText(`${cell.scenario} on ${cell.runtime}: `),
      statusBadge(cell.outcome),
      cell.outcome === 'skipped' ? null : h('span', { class: 'duration' }, formatMs(cell.durationMs)),
      comparisonBadge(cell),
      after.length > 0 ? hiddenText(` (${after.join('; ')})`) : null,
    );
    td.addEventListener('click', () => this.navigate({ ...this.state, cell: cell.id }));
    this.cellElements.set(cell.id, td);
    return td;
  }

  private missingCell(runtime: string, scenario: string): HTMLTableCellElement {
    return h(
      'td',
      { role: 'gridcell', tabindex: -1, class: 'cell cell--missing' },
      hiddenText(`${scenario} on ${runtime}: `),
      'not run',
    );
  }

  private onMatrixKey(ev: KeyboardEvent) {
    const td = (ev.target as HTMLElement).closest('td');
    if (!td?.dataset.row) return;
    const row = Number(td.dataset.row);
    const col = Number(td.dataset.col);
    const lastRow = this.grid.length - 1;
    const lastCol = (this.grid[0]?.length ?? 1) - 1;
    let target: [number, number] | undefined;
    switch (ev.key) {
      case 'ArrowUp':
        target = [Math.max(0, row - 1), col];
        break;
      case 'ArrowDown':
        target = [Math.min(lastRow, row + 1), col];
        break;
      case 'ArrowLeft':
        target = [row, Math.max(0, col - 1)];
        break;
      case 'ArrowRight':
        target = [row, Math.min(lastCol, col + 1)];
        break;
      case 'Home':
        target = ev.ctrlKey ? [0, 0] : [row, 0];
        break;
      case 'End':
        target = ev.ctrlKey ? [lastRow, lastCol] : [row, lastCol];
        break;
      case 'Enter':
      case ' ': {
        ev.preventDefault();
        const id = td.dataset.cell;
        if (id) this.navigate({ ...this.state, cell: id });
        return;
      }
      default:
        return;
    }
    ev.preventDefault();
    const next = this.grid[target[0]]?.[target[1]];
    if (!next) return;
    for (const r of this.grid) for (const c of r) if (c) c.tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
  }

  private renderCharts() {
    const only = this.state.runtime;
    const keep = <T extends { runtime: string }>(rows: T[]) =>
      rows.filter((r) => !only || r.runtime === only);
    this.renderPodStartup(keep(this.model.podStartup));
    this.renderCriLatency(keep(this.model.criLatency));
  }

  private renderPodStartup(rows: RuntimeLatency[]) {
    const container = byId('chart-pod-startup');
    if (rows.length === 0) {
      container.replaceChildren(h('p', { class: 'empty' }, 'No pod start-up latencies were recorded.'));
      return;
    }
    const bars: BarRow[] = rows.flatMap((r) =>
      (['p50', 'p90', 'p99'] as const).map((p, i) => ({
        group: r.runtime,
        label: p,
        colour: shade(this.colourOf.get(r.runtime)!, i),
        value: r[p],
        text: formatMs(r[p]),
      })),
    );
    container.replaceChildren(
      barChart(
        'Pod start-up latency by runtime',
        rows
          .map((r) => `${r.runtime}: p50 ${formatMs(r.p50)}, p90 ${formatMs(r.p90)}, p99 ${formatMs(r.p99)}`)
          .join('; '),
        bars,
        'creation to all containers started',
      ),
      dataTable(
        'Pod start-up latency',
        ['Runtime', 'Pods', 'min', 'p50', 'p90', 'p99', 'max'],
        rows.map((r) => [
          r.runtime,
          r.count,
          formatMs(r.min),
          formatMs(r.p50),
          formatMs(r.p90),
          formatMs(r.p99),
          formatMs(r.max),
        ]),
      ),
    );
  }

  private renderCriLatency(rows: CriMethodLatency[]) {
    const container = byId('chart-cri');
    if (rows.length === 0) {
      container.replaceChildren(h('p', { class: 'empty' }, 'No CRI calls were recorded.'));
      return;
    }
    // The caller is in every label: colour (the runtime's, lighter for the harness) only repeats it.
    const bars: BarRow[] = rows.map((r) => ({
      group: r.method,
      label: `${r.runtime} · ${r.source}`,
      colour: shade(this.colourOf.get(r.runtime) ?? '#666666', r.source === 'harness' ? 0 : 2),
      value: r.p50,
      tick: r.p90,
      whisker: r.p99,
      text: `p50 ${formatMs(r.p50)} · p99 ${formatMs(r.p99)}`,
    }));
    const legend = h(
      'ul',
      { class: 'legend' },
      ...[...new Set(rows.map((r) => r.runtime))].map((rt) => {
        const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
        sw.style.background = this.colourOf.get(rt) ?? '#666';
        return h('li', {}, sw, rt);
      }),
      h('li', { class: 'legend-note' }, 'bar: p50 · tick: p90 · whisker end: p99'),
      h(
        'li',
        { class: 'legend-note' },
        'agent: our node agent’s calls to its runtime · harness: the harness’s own checks',
      ),
    );
    container.replaceChildren(
      legend,
      barChart(
        'CRI call latency by method and runtime',
        `${rows.length} method, runtime and caller rows; bars show p50, whiskers p99`,
        bars,
        'latency (log scale)',
        'log',
      ),
      dataTable(
        'CRI call latency',
        ['Method', 'Runtime', 'Caller', 'Calls', 'Errors', 'p50', 'p90', 'p99', 'max'],
        rows.map((r) => [
          r.method,
          r.runtime,
          r.source,
          r.count,
          r.errors,
          formatMs(r.p50),
          formatMs(r.p90),
          formatMs(r.p99),
          formatMs(r.max),
        ]),
      ),
    );
  }

  private renderBenchmarks() {
    const section = byId('benchmarks-section');
    const { benchmarks } = this.model;
    if (benchmarks.length === 0) {
      section.hidden = true;
      return;
    }
    const keys = [...new Set(benchmarks.flatMap((b) => Object.keys(b.metrics)))];
    byId('benchmarks').replaceChildren(
      h(
        'div',
        { class: 'scroll' },
        h(
          'table',
          { class: 'compact', 'aria-labelledby': 'benchmarks-heading' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', { scope: 'col' }, 'Benchmark'),
              ...keys.map((k) => h('th', { scope: 'col' }, k)),
            ),
          ),
          h(
            'tbody',
            {},
            ...benchmarks.map((b) =>
              h(
                'tr',
                {},
                h('th', { scope: 'row' }, b.name),
                ...keys.map((k) => {
                  const v = b.metrics[k];
                  return h(
                    'td',
                    { class: typeof v === 'number' ? 'num' : '' },
                    v === undefined ? '—' : String(v),
                  );
                }),
              ),
            ),
          ),
        ),
      ),
    );
  }

  // -------------------------------------------------------------------------------------------
  // Drill-down

  private openCell(cell: ReportCell) {
    byId('cell-title').textContent = `${cell.scenario} on ${cell.runtime}`;
    const started = cell.startedAt
      ? new Date(cell.startedAt).toISOString().replace('T', ' ').slice(0, 23)
      : '';
    const body: Child[] = [
      h(
        'p',
        { class: 'cell-meta' },
        statusBadge(cell.outcome),
        cell.outcome === 'skipped' ? null : h('span', {}, formatMs(cell.durationMs)),
        started ? h('span', {}, `started ${started} UTC`) : null,
        comparisonBadge(cell),
      ),
      cell.reason
        ? h(
            'p',
            { class: `reason reason--${cell.outcome}` },
            cell.outcome === 'skipped' ? 'Skipped: ' : '',
            cell.reason,
          )
        : null,
      cell.comparison ? h('p', { class: 'compare' }, `Baseline: ${comparisonText(cell)}.`) : null,
      this.assertionsSection(cell),
      this.timelineSection(cell),
      this.criCallsSection(cell),
      cell.podStartupMs?.length
        ? h(
            'section',
            { 'aria-labelledby': 'dd-startup' },
            h('h3', { id: 'dd-startup' }, 'Pod start-up latency'),
            h('p', {}, cell.podStartupMs.map((v) => formatMs(v)).join(', ')),
          )
        : null,
      this.logsSection(cell),
    ];
    const container = byId('cell-body');
    container.replaceChildren(...body.filter((c): c is Node => c instanceof Node));
    container.scrollTop = 0;
    if (!this.dialog.open) this.dialog.showModal();
    byId('cell-close').focus();
    // Start the timeline a few rows before the first failed assertion: that is where to look.
    const first = container.querySelector<HTMLElement>('tr.failure');
    const wrap = container.querySelector<HTMLElement>('.timeline-wrap');
    if (first && wrap) wrap.scrollTop = Math.max(0, first.offsetTop - 120);
  }

  private assertionsSection(cell: ReportCell): HTMLElement {
    const order: Record<Outcome, number> = { failed: 0, skipped: 1, passed: 2 };
    const assertions = [...cell.assertions].sort((a, b) => order[a.outcome] - order[b.outcome]);
    const value = (v: unknown) =>
      v === undefined ? '—' : h('pre', { class: 'value' }, JSON.stringify(v, null, 2));
    return h(
      'section',
      { 'aria-labelledby': 'dd-assertions' },
      h('h3', { id: 'dd-assertions' }, `Assertions (${assertions.length})`),
      assertions.length === 0
        ? h('p', { class: 'empty' }, 'No assertions were recorded.')
        : h(
            'div',
            { class: 'scroll' },
            h(
              'table',
              { class: 'compact assertions' },
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  h('th', { scope: 'col' }, 'Assertion'),
                  h('th', { scope: 'col' }, 'Result'),
                  h('th', { scope: 'col' }, 'Expected'),
                  h('th', { scope: 'col' }, 'Actual'),
                ),
              ),
              h(
                'tbody',
                {},
                ...assertions.map((a) =>
                  h(
                    'tr',
                    { class: `assertion assertion--${a.outcome}` },
                    h(
                      'th',
                      { scope: 'row' },
                      a.name,
                      a.message ? h('div', { class: 'message' }, a.message) : null,
                    ),
                    h('td', {}, statusBadge(a.outcome)),
                    h('td', { class: 'expected' }, value(a.expected)),
                    h('td', { class: 'actual' }, value(a.actual)),
                  ),
                ),
              ),
            ),
          ),
    );
  }

  private timelineSection(cell: ReportCell): HTMLElement {
    const kinds = [...new Set(cell.timeline.map((e) => e.kind))];
    const maxCri = Math.max(
      1,
      ...cell.timeline.map((e) => (e.kind === 'cri-call' ? (e.durationMs ?? 0) : 0)),
    );
    const rows = cell.timeline.map((e) => this.timelineRow(e, maxCri));
    const tbody = h('tbody', {}, ...rows);
    const toggles = h(
      'fieldset',
      { class: 'kinds' },
      h('legend', {}, 'Show'),
      ...kinds.map((kind) => {
        const box = h('input', { type: 'checkbox', checked: true, 'data-kind': kind });
        box.addEventListener('change', () => {
          for (const tr of tbody.querySelectorAll<HTMLTableRowElement>('tr')) {
            if (tr.dataset.kind === kind) tr.hidden = !box.checked;
          }
        });
        const n = cell.timeline.filter((e) => e.kind === kind).length;
        return h('label', {}, box, ` ${KIND_LABEL[kind]} (${n})`);
      }),
    );
    return h(
      'section',
      { 'aria-labelledby': 'dd-timeline' },
      h('h3', { id: 'dd-timeline' }, `Timeline (${cell.timeline.length} entries)`),
      cell.timeline.length === 0
        ? h('p', { class: 'empty' }, 'No timeline was recorded.')
        : h(
            'div',
            {},
            toggles,
            h(
              'div',
              // Scrolls on its own, so it must be reachable by keyboard too.
              {
                class: 'scroll timeline-wrap',
                tabindex: 0,
                role: 'region',
                'aria-label': 'Timeline entries',
              },
              h(
                'table',
                { class: 'compact timeline' },
                h(
                  'thead',
                  {},
                  h(
                    'tr',
                    {},
                    h('th', { scope: 'col' }, 'Time'),
                    h('th', { scope: 'col' }, 'Kind'),
                    h('th', { scope: 'col' }, 'What happened'),
                    h('th', { scope: 'col' }, 'Latency'),
                  ),
                ),
                tbody,
              ),
            ),
          ),
    );
  }

  private timelineRow(e: TimelineEntry, maxCri: number): HTMLTableRowElement {
    const failure = e.kind === 'note' && e.summary.startsWith('assertion failed');
    const warn =
      (e.kind === 'cri-call' && e.code !== undefined && e.code !== 'OK') ||
      (e.kind === 'event' && e.summary.startsWith('Warning '));
    const detail = e.detail && Object.keys(e.detail).length > 0 ? JSON.stringify(e.detail) : '';
    let latency: Child = null;
    if (e.kind === 'cri-call' && e.durationMs !== undefined) {
      const bar = s('rect', {
        x: 0,
        y: 2,
        height: 8,
        width: Math.max(1, (e.durationMs / maxCri) * 60),
        rx: 1,
      });
      latency = h(
        'span',
        { class: 'latency' },
        s('svg', { width: 60, height: 12, viewBox: '0 0 60 12', 'aria-hidden': 'true', class: 'spark' }, bar),
        ` ${formatMs(e.durationMs)}`,
      );
    }
    return h(
      'tr',
      { 'data-kind': e.kind, class: failure ? 'failure' : warn ? 'warn' : '' },
      h('td', { class: 'num' }, `+${formatMs(e.t)}`),
      h('td', {}, h('span', { class: `kind kind--${e.kind}` }, KIND_LABEL[e.kind] ?? e.kind)),
      h(
        'td',
        {},
        e.kind === 'cri-call' ? h('span', { class: 'caller' }, e.source ?? 'harness') : null,
        e.method ? h('code', {}, e.method) : null,
        e.method ? ' ' : null,
        e.summary,
        e.code && e.code !== 'OK' ? h('span', { class: 'code' }, ` ${e.code}`) : null,
        detail ? h('div', { class: 'detail' }, detail) : null,
      ),
      h('td', {}, latency),
    );
  }

  /** Every CRI call of the cell per method; the timeline above shows only a selection of them. */
  private criCallsSection(cell: ReportCell): HTMLElement | null {
    const stats = cell.criCalls ?? [];
    if (stats.length === 0) return null;
    const total = stats.filter((c) => c.source === 'agent').reduce((n, c) => n + c.count, 0);
    const shown = cell.timeline.filter((e) => e.kind === 'cri-call' && e.source === 'agent').length;
    return h(
      'section',
      { 'aria-labelledby': 'dd-cri' },
      h('h3', { id: 'dd-cri' }, 'CRI calls'),
      h(
        'p',
        { class: 'cri-sample' },
        shown < total
          ? `The timeline shows ${shown} of the agent’s ${total} calls: failed ones, those within 5 s of a failure, every call that changes state, the slowest reads and an even sample of the rest. This table counts them all.`
          : `The timeline shows all ${total} of the agent’s calls.`,
      ),
      h(
        'div',
        { class: 'scroll' },
        h(
          'table',
          { class: 'compact cri-stats' },
          h('caption', { class: 'visually-hidden' }, 'CRI calls in this cell by caller and method'),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ...['Caller', 'Method', 'Calls', 'Errors', 'p50', 'p90', 'p99', 'max'].map((c) =>
                h('th', { scope: 'col' }, c),
              ),
            ),
          ),
          h(
            'tbody',
            {},
            ...stats.map((c) =>
              h(
                'tr',
                { class: c.errors > 0 ? 'warn' : '' },
                h('td', {}, c.source),
                h('th', { scope: 'row' }, h('code', {}, c.method)),
                h('td', { class: 'num' }, String(c.count)),
                h('td', { class: 'num' }, String(c.errors)),
                ...[c.p50, c.p90, c.p99, c.max].map((v) => h('td', { class: 'num' }, formatMs(v))),
              ),
            ),
          ),
        ),
      ),
    );
  }

  private logsSection(cell: ReportCell): HTMLElement {
    return h(
      'section',
      { 'aria-labelledby': 'dd-logs' },
      h('h3', { id: 'dd-logs' }, 'Logs'),
      cell.logs.length === 0
        ? h('p', { class: 'empty' }, 'No log excerpt was recorded.')
        : h(
            'div',
            {},
            ...cell.logs.map((log) =>
              h(
                'div',
                { class: 'log' },
                h('h4', {}, `${log.source} (${log.lines.length} lines)`),
                h(
                  'pre',
                  { tabindex: 0, 'aria-label': `${log.source} log excerpt` },
                  ...log.lines.map((line) =>
                    h(
                      'span',
                      {
                        class: /^[EW]\d{4}|\b(error|fail(ed|ure)?|panic)\b/i.test(line) ? 'line hot' : 'line',
                      },
                      line,
                    ),
                  ),
                ),
              ),
            ),
          ),
    );
  }
}

/** p50/p90/p99 shades of one runtime colour: same hue, lighter to darker. */
function shade(hex: string, step: number): string {
  const mix = [0.45, 0.2, 0][step] ?? 0;
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(1 + i * 2, 3 + i * 2), 16);
    return Math.round(c + (255 - c) * mix)
      .toString(16)
      .padStart(2, '0');
  };
  return `#${channel(0)}${channel(1)}${channel(2)}`;
}

if (typeof document !== 'undefined') {
  const data = document.getElementById('report-data');
  if (data?.textContent) new ReportPage(JSON.parse(data.textContent) as ReportModel).start();
}
