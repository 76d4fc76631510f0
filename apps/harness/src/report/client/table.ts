// The results matrix: scenarios × runtimes as a keyboard-navigable grid (one tab stop, arrow keys,
// Home/End, Enter or Space to open a cell), with the status line above it.
import type { ReportCell, ReportModel } from '../model.js';
import { byId, h, hiddenText } from './dom.js';
import {
  comparisonBadge,
  comparisonText,
  cpuText,
  formatCpu,
  formatMs,
  quarantineBadge,
  quarantineText,
  statusBadge,
} from './format.js';
import { gridKeydown } from './grid-nav.js';
import { type ViewState, visibleAxes } from './state.js';

type GridCell = HTMLTableCellElement | null;

export class ResultsMatrix {
  private readonly cellElements = new Map<string, HTMLTableCellElement>();
  private grid: GridCell[][] = [];

  constructor(
    private readonly model: ReportModel,
    private readonly cellsById: Map<string, ReportCell>,
    /** Called with a cell's id when it is clicked or opened from the keyboard. */
    private readonly open: (cellId: string) => void,
  ) {}

  /** Gives focus back to a cell, e.g. after its drill-down closed. */
  focus(cellId: string): void {
    this.cellElements.get(cellId)?.focus();
  }

  render(state: ViewState): void {
    const { runtimes, scenarios } = visibleAxes(this.model, state);
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
      const gridRow: GridCell[] = [];
      runtimes.forEach((runtime, colIndex) => {
        const cell = this.cellsById.get(`${runtime}/${scenario}`);
        const td = cell ? this.resultCell(cell, state) : missingCell(runtime, scenario);
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
    table.addEventListener('keydown', (ev) =>
      gridKeydown(ev, this.grid, (td) => {
        if (td.dataset.cell) this.open(td.dataset.cell);
      }),
    );
    container.replaceChildren(table);
    // Roving tab stop: one cell in the tab order, the first failure if any.
    const first =
      this.grid.flat().find((td) => td && this.cellsById.get(td.dataset.cell ?? '')?.outcome === 'failed') ??
      this.grid[0]?.[0];
    if (first) first.tabIndex = 0;
  }

  private resultCell(cell: ReportCell, state: ViewState): HTMLTableCellElement {
    const muted = state.failuresOnly && cell.outcome !== 'failed';
    const regression = cell.comparison?.verdict === 'regressed' || cell.comparison?.verdict === 'slower';
    // The accessible name is the visible text plus hidden context around it (which cell; why it
    // was skipped; the baseline), so what is read out always contains what is shown.
    const after = [
      cell.outcome === 'skipped' ? cell.reason : undefined,
      comparisonText(cell),
      cell.quarantine ? quarantineText(cell.quarantine) : undefined,
    ].filter(Boolean);
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
      cell.cpu?.nodeSeconds === undefined
        ? null
        : h('span', { class: 'cpu', title: cpuText(cell.cpu) }, formatCpu(cell.cpu.nodeSeconds)),
      comparisonBadge(cell),
      quarantineBadge(cell.quarantine),
      after.length > 0 ? hiddenText(` (${after.join('; ')})`) : null,
    );
    td.addEventListener('click', () => this.open(cell.id));
    this.cellElements.set(cell.id, td);
    return td;
  }
}

function missingCell(runtime: string, scenario: string): HTMLTableCellElement {
  return h(
    'td',
    { role: 'gridcell', tabindex: -1, class: 'cell cell--missing' },
    hiddenText(`${scenario} on ${runtime}: `),
    'not run',
  );
}
