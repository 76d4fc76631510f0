// The report's stylesheet, inlined into the page. Colours are chosen for at least 4.5:1 contrast;
// status is never carried by colour alone (every status also has an icon and a word).

export const REPORT_CSS = `
:root {
  --fg: #1f2328; --muted: #57606a; --bg: #f6f8fa; --card: #ffffff; --line: #d0d7de; --focus: #0969da;
  --pass-fg: #116329; --pass-bg: #dafbe1; --fail-fg: #a40e26; --fail-bg: #ffebe9;
  --skip-fg: #57606a; --skip-bg: #eaeef2; --warn-fg: #7d4e00; --warn-bg: #fff8c5;
  --info-fg: #0550ae; --info-bg: #ddf4ff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "Noto Sans", "DejaVu Sans", sans-serif;
  color: var(--fg); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.88em; }
h1, h2, h3, h4 { line-height: 1.25; margin: 0; }
h1 { font-size: 1.5rem; }
h2 { font-size: 1.2rem; }
h3 { font-size: 1rem; margin: 20px 0 8px; }
h4 { font-size: 0.9rem; margin: 12px 0 6px; color: var(--muted); }
.page-header { background: #24292f; color: #ffffff; padding: 20px 0; }
.page-header .wrap { display: flex; flex-wrap: wrap; align-items: baseline; gap: 8px 24px; }
.page-header code { color: #ffffff; }
.meta { margin: 0; color: #d0d7de; display: flex; flex-wrap: wrap; gap: 4px 18px; font-size: 0.9rem; }
.wrap { max-width: 1240px; margin: 0 auto; padding: 0 24px; }
main.wrap { padding-top: 20px; padding-bottom: 32px; display: grid; gap: 20px; }
main.wrap > * { min-width: 0; } /* wide tables scroll inside their card instead of widening the page */
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 20px 24px; }
.section-head { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 12px; margin-bottom: 12px; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }

.tiles { display: grid; grid-template-columns: repeat(4, minmax(120px, 1fr)); gap: 12px; margin: 12px 0 16px; }
.tile { border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; display: flex; flex-direction: column; }
.tile-value { font-size: 1.8rem; font-weight: 650; line-height: 1.1; }
.tile-label { color: var(--muted); }
.tile--passed { background: var(--pass-bg); border-color: #aceebb; } .tile--passed .tile-value, .tile--passed .tile-label { color: var(--pass-fg); }
.tile--failed { background: var(--fail-bg); border-color: #ffcecb; } .tile--failed .tile-value, .tile--failed .tile-label { color: var(--fail-fg); }
.tile--skipped { background: var(--skip-bg); }
.runtimes { list-style: none; padding: 0; margin: 0; display: grid; gap: 4px; color: var(--muted); }
.runtimes strong { color: var(--fg); margin-right: 4px; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 3px; margin-right: 8px; vertical-align: -1px; }
.baseline { border-top: 1px solid var(--line); margin-top: 16px; }
.baseline p { margin: 6px 0; }
.changes ul { margin: 4px 0; padding-left: 20px; }
.changes--regressed h3,
.changes--cri h3 { color: var(--fail-fg); }
.changes--fixed h3 { color: var(--pass-fg); }
.no-regressions { color: var(--pass-fg); }
.linklike { background: none; border: 0; padding: 0; font: inherit; font-family: ui-monospace, monospace; font-size: 0.9em; color: var(--info-fg); text-decoration: underline; cursor: pointer; }

form.filters { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px; margin: 0; }
form.filters label { display: inline-flex; align-items: center; gap: 6px; color: var(--muted); font-size: 0.92rem; }
select, button.reset { font: inherit; font-size: 0.92rem; padding: 5px 10px; border: 1px solid var(--line); border-radius: 6px; background: #ffffff; color: var(--fg); }
button.reset { cursor: pointer; }
input[type=checkbox] { width: 16px; height: 16px; accent-color: var(--focus); }
.status-line { color: var(--muted); margin: 0 0 10px; font-size: 0.92rem; }
.hint { color: var(--muted); font-size: 0.85rem; margin: 10px 0 0; }

.scroll { overflow-x: auto; }
table { border-collapse: collapse; }
table.matrix { width: 100%; table-layout: fixed; }
.matrix th, .matrix td { border: 1px solid var(--line); padding: 10px 12px; text-align: left; vertical-align: top; }
.matrix thead th { background: var(--bg); font-weight: 600; }
.matrix th.corner { width: 190px; color: var(--muted); font-weight: 500; }
.matrix tbody th { font-weight: 600; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9rem; }
.rt-name { display: block; }
.rt-version { display: block; font-weight: 400; color: var(--muted); font-size: 0.82rem; }
.cell { cursor: pointer; position: relative; }
.cell:hover { box-shadow: inset 0 0 0 2px #8c959f; }
.cell:focus-visible, .cell:focus { outline: 3px solid var(--focus); outline-offset: -3px; }
.cell--passed { background: var(--pass-bg); }
.cell--failed { background: var(--fail-bg); }
.cell--skipped { background: var(--skip-bg); }
.cell--missing { background: repeating-linear-gradient(45deg, #ffffff, #ffffff 6px, #f6f8fa 6px, #f6f8fa 12px); color: var(--muted); cursor: default; }
/* Context for a failure, not the subject: plain background, text still at full contrast. */
.cell.cell--muted { background: #ffffff; }
.cell--regression { box-shadow: inset 4px 0 0 #bf8700; }
.status { font-weight: 650; white-space: nowrap; }
.status--passed { color: var(--pass-fg); } .status--failed { color: var(--fail-fg); } .status--skipped { color: var(--skip-fg); }
.cell .duration { display: block; color: var(--fg); font-variant-numeric: tabular-nums; font-size: 0.9rem; }
.badge { display: inline-block; margin-top: 4px; padding: 0 8px; border-radius: 999px; font-size: 0.78rem; font-weight: 600; white-space: nowrap; }
.badge--regressed, .badge--slower { background: var(--warn-bg); color: var(--warn-fg); border: 1px solid #d4a72c; }
.badge--fixed { background: var(--info-bg); color: var(--info-fg); border: 1px solid #80ccff; }
.badge--quarantined { background: var(--skip-bg); color: var(--fg); border: 1px solid #8c959f; }
.matrix tfoot td, .matrix tfoot th { background: var(--bg); font-size: 0.88rem; color: var(--muted); }
.total-failed { color: var(--fail-fg); font-weight: 600; }

.charts { display: grid; gap: 8px; }
svg.chart { width: 100%; max-width: 860px; height: auto; display: block; }
svg.chart text { font-size: 12px; fill: var(--fg); }
svg.chart .tick, svg.chart .axis { fill: var(--muted); font-size: 11px; }
svg.chart .group-label { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
svg.chart .grid { stroke: #eaeef2; }
svg.chart .whisker { stroke-width: 2; }
svg.chart .value { fill: var(--muted); font-size: 11px; }
.legend { list-style: none; padding: 0; margin: 0 0 6px; display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 0.88rem; }
.legend-note { color: var(--muted); }
details.data { margin: 6px 0 12px; font-size: 0.88rem; }
details.data summary { cursor: pointer; color: var(--info-fg); }
table.compact { font-size: 0.88rem; width: 100%; }
table.compact th, table.compact td { border-bottom: 1px solid var(--line); padding: 6px 10px; text-align: left; vertical-align: top; }
table.compact thead th { color: var(--muted); font-weight: 600; background: var(--bg); }
td.num, .timeline td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
.empty { color: var(--muted); }
.contract--called { color: var(--pass-fg); } .contract--unimplemented { color: var(--warn-fg); background: var(--warn-bg); font-weight: 600; } .contract--not-called { color: var(--skip-fg); }

dialog#cell-dialog { margin: 0 0 0 auto; height: 100vh; max-height: 100vh; width: min(980px, 100vw); max-width: 100vw; border: 0; padding: 0; box-shadow: -8px 0 24px rgba(0,0,0,0.2); }
dialog#cell-dialog::backdrop { background: rgba(31, 35, 40, 0.45); }
.dialog-inner { display: flex; flex-direction: column; height: 100%; }
.dialog-head { display: flex; align-items: center; justify-content: space-between; gap: 12px; padding: 16px 24px; border-bottom: 1px solid var(--line); background: var(--bg); }
.dialog-head h2 { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 1.1rem; }
#cell-close { font: inherit; font-size: 0.9rem; padding: 4px 12px; border: 1px solid var(--line); border-radius: 6px; background: #ffffff; cursor: pointer; }
#cell-body { overflow-y: auto; padding: 8px 24px 32px; flex: 1; }
.cell-meta { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 16px; color: var(--muted); }
.cell-meta .badge { margin-top: 0; }
.reason { padding: 10px 14px; border-radius: 6px; margin: 8px 0; }
.reason--failed { background: var(--fail-bg); color: var(--fail-fg); }
.reason--skipped { background: var(--skip-bg); }
.compare { color: var(--muted); }
.assertions .message { color: var(--muted); font-weight: 400; margin-top: 2px; }
.assertion--failed th { color: var(--fail-fg); }
.cases .message, .cases .case-file { color: var(--muted); font-weight: 400; margin-top: 2px; }
.case--failed > th { color: var(--fail-fg); }
.case-failure { font-weight: 400; color: var(--fg); margin-top: 6px; }
.case-assertion pre.value { display: inline; }
.case-events { margin: 4px 0 0; padding-left: 18px; font-size: 0.88rem; }
pre.value { margin: 0; white-space: pre-wrap; word-break: break-word; }
.assertion--failed .expected pre { background: var(--pass-bg); padding: 4px 6px; border-radius: 4px; }
.assertion--failed .actual pre { background: var(--fail-bg); padding: 4px 6px; border-radius: 4px; }
fieldset.kinds { border: 0; padding: 0; margin: 0 0 8px; display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 0.88rem; }
fieldset.kinds legend { float: left; margin-right: 8px; color: var(--muted); }
fieldset.kinds label { display: inline-flex; align-items: center; gap: 4px; }
.timeline-wrap { max-height: 420px; overflow-y: auto; border: 1px solid var(--line); border-radius: 6px; }
.timeline thead th { position: sticky; top: 0; }
.timeline tr.warn td { background: var(--warn-bg); }
.timeline tr.failure td { background: var(--fail-bg); color: var(--fail-fg); font-weight: 600; }
table.assertions { table-layout: fixed; }
.assertions thead th:first-child { width: 28%; } .assertions thead th:nth-child(2) { width: 10%; }
.assertions thead th:nth-child(3), .assertions thead th:nth-child(4) { width: 31%; }
.timeline .detail { color: var(--muted); font-family: ui-monospace, monospace; font-size: 0.8rem; word-break: break-all; }
.timeline .code { color: var(--fail-fg); font-weight: 600; }
.kind { display: inline-block; padding: 0 6px; border-radius: 4px; font-size: 0.78rem; background: var(--skip-bg); white-space: nowrap; }
.kind--cri-call { background: var(--info-bg); color: var(--info-fg); }
.kind--event { background: var(--warn-bg); color: var(--warn-fg); }
.kind--pod-phase, .kind--container-state { background: var(--pass-bg); color: var(--pass-fg); }
.latency { white-space: nowrap; font-variant-numeric: tabular-nums; }
.timeline .caller { display: inline-block; min-width: 4.2em; margin-right: 6px; color: var(--muted); font-size: 0.78rem; }
.cri-stats td.num { text-align: right; font-variant-numeric: tabular-nums; }
.cri-stats tr.warn td, .cri-stats tr.warn th { background: var(--warn-bg); }
svg.spark { vertical-align: -1px; } svg.spark rect { fill: var(--info-fg); }
.log pre { background: #1f2328; color: #e6edf3; padding: 10px 12px; border-radius: 6px; overflow: auto; max-height: 320px; margin: 0; font-size: 0.8rem; line-height: 1.45; }
.log .line { display: block; white-space: pre; }
.log .line.hot { background: rgba(248, 81, 73, 0.25); color: #ffdcd7; }
footer.wrap { color: var(--muted); font-size: 0.82rem; padding-bottom: 24px; }
@media (max-width: 720px) { .tiles { grid-template-columns: repeat(2, 1fr); } .matrix th.corner { width: 120px; } }
`;
