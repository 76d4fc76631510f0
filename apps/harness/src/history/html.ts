// The history page: one self-contained HTML file like the report (renderPage: inline script and
// style pinned by hash, no network), its data the history model.
import { clientScriptPath, loadClientScript, renderPage } from '../report/html.js';
import { REPORT_CSS } from '../report/styles.js';
import type { HistoryModel } from './model.js';
import { HISTORY_CSS } from './styles.js';

export const loadHistoryScript = (path = clientScriptPath('history-page')) => loadClientScript(path);

export function renderHistoryHtml(model: HistoryModel, script: string): string {
  return renderPage({
    title: 'kubelet-harness history',
    css: `${REPORT_CSS}${HISTORY_CSS}`,
    script,
    data: model,
    dataId: 'history-data',
    body: HISTORY_BODY,
  });
}

const HISTORY_BODY = `
<header class="page-header">
  <div class="wrap">
    <h1>kubelet-harness history</h1>
    <p class="meta" id="history-meta"></p>
  </div>
</header>
<noscript><p class="wrap">This page is drawn by JavaScript; enable it to see the history.</p></noscript>
<main class="wrap">
  <section class="card" aria-labelledby="summary-heading">
    <h2 id="summary-heading">Newest run against the runs before it</h2>
    <div id="alerts"></div>
    <div id="summary"></div>
  </section>
  <section class="card" aria-labelledby="grid-heading">
    <div class="section-head">
      <h2 id="grid-heading">Results by run, newest first</h2>
      <form class="filters" id="filters" role="search" aria-label="Filter the rows">
        <label for="filter-runtime">Runtime</label><select id="filter-runtime"></select>
        <label for="filter-show">Rows</label><select id="filter-show"></select>
        <button type="button" class="reset" id="filter-reset">Reset filters</button>
      </form>
    </div>
    <p class="status-line" id="grid-status" role="status" aria-live="polite"></p>
    <div class="scroll" id="grid"></div>
    <p class="hint" id="grid-help">Arrow keys move between squares, Home and End jump to a row's ends; Enter opens that run's report at the cell.</p>
  </section>
  <section class="card" aria-labelledby="clusters-heading">
    <h2 id="clusters-heading">Failures by message</h2>
    <p class="hint">Numbers, ids and generated names are stripped from each message, so failures with one cause fall together.</p>
    <div id="clusters"></div>
  </section>
  <section class="card charts" aria-labelledby="benches-heading">
    <h2 id="benches-heading">Benchmarks over time</h2>
    <div id="benches"></div>
  </section>
</main>
<footer class="wrap"><p id="generated-at"></p></footer>
`;
