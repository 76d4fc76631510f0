import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { ReportModel } from './model.js';
import { REPORT_CSS } from './styles.js';

// The browser scripts are bundled by scripts/bundle-client.mjs into dist/client/. This module lives
// two levels below the package root both as src/report/*.ts and as dist/report/*.js, so one relative
// path finds a bundle in either case.
export const clientScriptPath = (page: 'report-page' | 'history-page') =>
  fileURLToPath(new URL(`../../dist/client/${page}.js`, import.meta.url));
export const CLIENT_SCRIPT_PATH = clientScriptPath('report-page');

export async function loadClientScript(path = CLIENT_SCRIPT_PATH): Promise<string> {
  try {
    const js = await readFile(path, 'utf8');
    return js.replace(/^\/\/# sourceMappingURL=.*$/m, '').trimEnd();
  } catch (err) {
    throw new Error(
      `report page script not found at ${path} (${(err as Error).message}); build the package first: npm run build -w @kh/harness`,
    );
  }
}

/**
 * JSON that is safe inside a <script> element: no '<' (so no "</script>" or "<!--"), no '>' or '&',
 * and no U+2028/U+2029 line separators. JSON.parse turns the escapes back into the same string.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

export interface PageParts {
  title: string;
  /** The stylesheet, inlined and allowed by its hash. */
  css: string;
  /** The bundled browser script (dist/client/*.js), inlined and allowed by its hash. */
  script: string;
  /** The markup inside <body>, before the data and the script; a fixed shell, never data. */
  body: string;
  /** The page's only data, as JSON in <script type="application/json" id=dataId>. */
  data: unknown;
  dataId: string;
}

/**
 * A self-contained HTML document: the page contains no data outside the JSON block, and its
 * Content-Security-Policy allows only its own inline script and style (by hash) and no network
 * access at all, so it works offline and cannot be made to fetch or run anything else. The report
 * and the history page are both built this way.
 */
export function renderPage(parts: PageParts): string {
  if (/<\/script|<!--/i.test(parts.script))
    throw new Error('page script must not contain "</script" or "<!--"');
  const csp = [
    "default-src 'none'",
    `script-src ${sha256(parts.script)}`,
    `style-src ${sha256(parts.css)}`,
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="color-scheme" content="light">
<title>${parts.title}</title>
<link rel="icon" href="data:,">
<style>${parts.css}</style>
</head>
<body>
${parts.body.trim()}
<script type="application/json" id="${parts.dataId}">${jsonForScript(parts.data)}</script>
<script type="module">${parts.script}</script>
</body>
</html>
`;
}

/** The whole report as one self-contained HTML document (renderPage). */
export function renderReportHtml(model: ReportModel, clientScript: string): string {
  return renderPage({
    title: 'kubelet-harness report',
    css: REPORT_CSS,
    script: clientScript,
    data: model,
    dataId: 'report-data',
    body: REPORT_BODY,
  });
}

const REPORT_BODY = `
<header class="page-header">
  <div class="wrap">
    <h1>kubelet-harness report</h1>
    <p class="meta" id="run-meta"></p>
  </div>
</header>
<noscript><p class="wrap">This report is drawn by JavaScript; enable it to see the results.</p></noscript>
<main class="wrap">
  <section class="card" aria-labelledby="summary-heading">
    <h2 id="summary-heading">Summary</h2>
    <div id="summary"></div>
  </section>
  <section class="card" aria-labelledby="matrix-heading">
    <div class="section-head">
      <h2 id="matrix-heading">Results by scenario and runtime</h2>
      <form class="filters" id="filters" role="search" aria-label="Filter the results">
        <label for="filter-runtime">Runtime</label><select id="filter-runtime"></select>
        <label for="filter-scenario">Scenario</label><select id="filter-scenario"></select>
        <label><input type="checkbox" id="filter-failures"> Failures only</label>
        <button type="button" class="reset" id="filter-reset">Reset filters</button>
      </form>
    </div>
    <p class="status-line" id="matrix-status" role="status" aria-live="polite"></p>
    <div class="scroll" id="matrix"></div>
    <p class="hint" id="matrix-help">Arrow keys move between cells, Home and End jump to a row's ends; Enter or Space opens the cell's details, Escape closes them.</p>
  </section>
  <section class="card charts" aria-labelledby="charts-heading">
    <h2 id="charts-heading">Latency</h2>
    <h3 id="pod-startup-heading">Pod start-up latency (p50, p90, p99)</h3>
    <div id="chart-pod-startup"></div>
    <h3 id="startup-breakdown-heading">Pod start-up by stage, against the bare floor</h3>
    <div id="chart-startup-breakdown"></div>
    <h3 id="cri-heading">CRI call latency by method</h3>
    <div id="chart-cri"></div>
  </section>
  <section class="card" id="contract-section" aria-labelledby="contract-heading">
    <h2 id="contract-heading">CRI contract (kubelet 1.33)</h2>
    <p class="hint">Every CRI method kubelet 1.33 can call, and what the agent's calls to each runtime came to in this run.</p>
    <div id="contract"></div>
  </section>
  <section class="card" id="benchmarks-section" aria-labelledby="benchmarks-heading">
    <h2 id="benchmarks-heading">Benchmarks</h2>
    <div id="benchmarks"></div>
  </section>
</main>
<footer class="wrap"><p id="generated-at"></p></footer>
<dialog id="cell-dialog" aria-labelledby="cell-title">
  <div class="dialog-inner">
    <div class="dialog-head">
      <h2 id="cell-title"></h2>
      <button type="button" id="cell-close">Close <span aria-hidden="true">(Esc)</span></button>
    </div>
    <div id="cell-body"></div>
  </div>
</dialog>
`;
