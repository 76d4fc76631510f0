// The report page's script. scripts/bundle-client.mjs bundles this entry and the modules it imports
// into one file, which html.ts inlines into the generated HTML (the page's CSP lets nothing else
// run). It only renders the view model embedded in the page; every string from it reaches the DOM
// through textContent or setAttribute, never through HTML parsing.
//
// ReportPage owns the view state: every change goes through navigate(), into the URL hash, and out
// to the filter form, the matrix, the charts and the drill-down.
import type { ReportCell, ReportModel } from '../model.js';
import { renderCharts, runtimeColours } from './charts.js';
import { renderContract } from './contract.js';
import { CellDialog } from './drilldown.js';
import { FilterForm } from './filters.js';
import { decodeHash, encodeHash, normalizeState, type ViewState } from './state.js';
import { renderBenchmarks, renderHeader, renderSummary } from './summary.js';
import { ResultsMatrix } from './table.js';

class ReportPage {
  private state: ViewState = { failuresOnly: false };
  private rendered = false;
  private readonly cellsById: Map<string, ReportCell>;
  private readonly colours: Map<string, string>;
  private readonly filters: FilterForm;
  private readonly matrix: ResultsMatrix;
  private readonly dialog: CellDialog;

  constructor(private readonly model: ReportModel) {
    const open = (cell: string) => this.navigate({ ...this.state, cell });
    this.cellsById = new Map(model.cells.map((c) => [c.id, c]));
    this.colours = runtimeColours(model.runtimes);
    this.filters = new FilterForm(model, (update) => this.navigate({ ...this.state, ...update }));
    this.matrix = new ResultsMatrix(model, this.cellsById, open);
    // Escape, the close button, or a hash without a cell: keep the hash in step, give focus back.
    this.dialog = new CellDialog(() => {
      const closed = this.state.cell;
      if (!closed) return;
      this.navigate({ ...this.state, cell: undefined });
      this.matrix.focus(closed);
    });
    renderHeader(model);
    renderSummary(model, this.colours, open);
    renderContract(model);
    renderBenchmarks(model);
  }

  start() {
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
      !this.rendered ||
      next.runtime !== prev.runtime ||
      next.scenario !== prev.scenario ||
      next.failuresOnly !== prev.failuresOnly;
    this.state = next;
    if (filtersChanged) {
      this.rendered = true;
      this.filters.show(next);
      this.matrix.render(next);
      renderCharts(this.model, this.colours, next.runtime);
    }
    if (next.cell) {
      if (next.cell !== prev.cell || !this.dialog.isOpen) this.dialog.open(this.cellsById.get(next.cell)!);
    } else if (this.dialog.isOpen) {
      this.dialog.close();
    }
  }
}

const data = document.getElementById('report-data');
if (data?.textContent) new ReportPage(JSON.parse(data.textContent) as ReportModel).start();
