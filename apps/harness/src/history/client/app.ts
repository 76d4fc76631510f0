// The history page's script, bundled by scripts/bundle-client.mjs into dist/client/history-page.js
// and inlined by history/html.ts (the page's CSP lets nothing else run). It renders the history
// model embedded in the page; every string reaches the DOM through textContent or setAttribute.
// The view state (runtime filter, which rows) lives in the URL hash, so a link reopens the view.
import { byId, h } from '../../report/client/dom.js';
import type { HistoryModel } from '../model.js';
import { renderBenches } from './benches.js';
import { HistoryGrid } from './grid.js';
import { renderAlerts, renderClusters, renderHeader, renderSummary } from './sections.js';
import {
  decodeHistoryHash,
  encodeHistoryHash,
  type HistoryViewState,
  ROW_FILTERS,
  type RowFilter,
  runtimesOf,
} from './state.js';

class HistoryPage {
  private state: HistoryViewState = { rows: 'all' };
  private readonly grid: HistoryGrid;
  private readonly runtime = byId<HTMLSelectElement>('filter-runtime');
  private readonly rows = byId<HTMLSelectElement>('filter-show');

  constructor(private readonly model: HistoryModel) {
    this.grid = new HistoryGrid(model);
    this.runtime.replaceChildren(
      h('option', { value: '' }, 'All runtimes'),
      ...runtimesOf(model.rows).map((r) => h('option', { value: r }, r)),
    );
    this.rows.replaceChildren(
      ...Object.entries(ROW_FILTERS).map(([value, label]) => h('option', { value }, label)),
    );
    this.runtime.addEventListener('change', () =>
      this.navigate({ ...this.state, runtime: this.runtime.value || undefined }),
    );
    this.rows.addEventListener('change', () =>
      this.navigate({ ...this.state, rows: this.rows.value as RowFilter }),
    );
    byId('filter-reset').addEventListener('click', () => this.navigate({ rows: 'all' }));
    renderHeader(model);
    renderAlerts(model);
    renderSummary(model);
    renderClusters(model);
    renderBenches(model.benches);
  }

  start() {
    window.addEventListener('hashchange', () => this.apply(decodeHistoryHash(location.hash, this.model)));
    this.apply(decodeHistoryHash(location.hash, this.model));
  }

  private navigate(next: HistoryViewState) {
    const hash = encodeHistoryHash(next);
    if (hash !== encodeHistoryHash(this.state)) location.replace(`#${hash}`);
    this.apply(next);
  }

  private apply(next: HistoryViewState) {
    this.state = next;
    this.runtime.value = next.runtime ?? '';
    this.rows.value = next.rows;
    this.grid.render(next);
  }
}

const data = document.getElementById('history-data');
if (data?.textContent) new HistoryPage(JSON.parse(data.textContent) as HistoryModel).start();
