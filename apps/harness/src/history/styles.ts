// The history page's own rules, appended to the report's stylesheet (same colours, same contrast:
// at least 4.5:1; status is never carried by colour alone).
export const HISTORY_CSS = `
.wrap { max-width: 1680px; }
table.hgrid { border-collapse: separate; border-spacing: 0; font-size: 0.85rem; }
.hgrid th, .hgrid td { border-bottom: 1px solid var(--line); border-right: 1px solid var(--line); padding: 4px 6px; text-align: left; vertical-align: top; }
.hgrid thead th, .hgrid thead td { background: var(--bg); font-weight: 500; white-space: nowrap; }
.hgrid thead th.run { min-width: 72px; font-weight: 600; }
.hgrid .run-date, .hgrid .run-time { display: block; }
.hgrid .run-time { font-weight: 400; }
.hgrid .run-commit { display: block; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-weight: 400; color: var(--muted); }
.hgrid .run-commit a { color: var(--info-fg); }
.hgrid td.ver { color: var(--muted); font-variant-numeric: tabular-nums; }
.hgrid td.ver--changed { color: var(--fg); font-weight: 650; }
.hgrid .row-head { position: sticky; left: 0; z-index: 1; background: var(--card); min-width: 240px; max-width: 320px; white-space: normal; }
.hgrid thead .row-head { background: var(--bg); }
.hgrid .row-name { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-weight: 600; word-break: break-word; }
.hgrid .row-note { display: block; color: var(--muted); font-weight: 400; font-size: 0.8rem; }
.hgrid .row-note--failing { color: var(--fail-fg); }
.hgrid .badge { margin: 2px 4px 0 0; }
.sq { min-width: 72px; font-variant-numeric: tabular-nums; cursor: default; }
.sq a { color: inherit; text-decoration: none; display: block; }
.sq a:hover .status { text-decoration: underline; }
.sq:has(a) { cursor: pointer; }
.sq:focus, .sq:focus-visible { outline: 3px solid var(--focus); outline-offset: -3px; }
.sq--passed { background: var(--pass-bg); }
.sq--failed { background: var(--fail-bg); }
.sq--skipped { background: var(--skip-bg); }
.sq--none { background: #ffffff; color: var(--muted); }
.sq .duration { display: block; color: var(--fg); }
.sq .retry { display: block; color: var(--warn-fg); font-size: 0.78rem; }
.badge--flaky { background: var(--warn-bg); color: var(--warn-fg); border: 1px solid #d4a72c; }
.badge--new-failure { background: var(--fail-bg); color: var(--fail-fg); border: 1px solid #ff8182; }
.alert { border-radius: 8px; padding: 10px 14px; margin: 8px 0; background: var(--fail-bg); color: var(--fail-fg); border: 1px solid #ffcecb; }
.alert strong { margin-right: 6px; }
.no-alerts { color: var(--pass-fg); margin: 8px 0; }
.changes-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); gap: 12px 24px; margin-top: 12px; }
.changes-grid h3 { margin: 0 0 4px; }
.changes-grid ul { margin: 0; padding-left: 18px; }
.changes-grid li { word-break: break-word; }
.changes-grid .row-note { color: var(--muted); font-size: 0.85rem; }
table.clusters td.message { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.82rem; word-break: break-word; }
table.clusters td.example { color: var(--muted); font-size: 0.82rem; word-break: break-word; }
svg.trend { width: 100%; max-width: 720px; height: auto; display: block; }
svg.trend text { font-size: 11px; fill: var(--muted); }
svg.trend .line { fill: none; stroke: #0072B2; stroke-width: 2; }
svg.trend .target { stroke: var(--fail-fg); stroke-dasharray: 5 4; }
svg.trend .point--met { fill: #0072B2; }
svg.trend .point--missed { fill: none; stroke: var(--fail-fg); stroke-width: 2; }
svg.trend .grid { stroke: #eaeef2; }
.bench-figure { margin: 8px 0 16px; }
.bench-figure h4 { color: var(--fg); font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
.bench-figure .latest { color: var(--muted); margin: 2px 0 4px; font-size: 0.88rem; }
`;
