// The history grid: one row per cell (or case), one column per run, newest first, TestGrid-style.
// The header rows carry each run's date, commit and the visible runtimes' versions; a row's head
// carries its verdicts (flaky, failing for N runs since a commit, quarantined); each square links
// to that run's report, opened at the cell. One tab stop, arrow keys (report/client/grid-nav.ts).
import { byId, h, hiddenText } from '../../report/client/dom.js';
import {
  formatMs,
  quarantineBadge,
  quarantineText,
  STATUS,
  statusBadge,
} from '../../report/client/format.js';
import { type Grid, gridKeydown } from '../../report/client/grid-nav.js';
import type { HistoryModel, HistoryResult, HistoryRow, HistoryRun } from '../model.js';
import { describeSince, runDate, runLabel, shortCommit } from '../wording.js';
import { failingNow, type HistoryViewState, runtimesOf, visibleRows } from './state.js';

export class HistoryGrid {
  private grid: Grid = [];

  constructor(private readonly model: HistoryModel) {}

  render(state: HistoryViewState): void {
    const model = this.model;
    const rows = visibleRows(model, state);
    const container = byId('grid');
    const failing = rows.filter(failingNow).length;
    const flaky = rows.filter((r) => r.flaky.length > 0).length;
    byId('grid-status').textContent =
      model.runs.length === 0
        ? 'The history holds no runs.'
        : rows.length === 0
          ? 'No rows match the filters.'
          : `Showing ${rows.length} of ${model.rows.length} rows over ${model.runs.length} runs: ${failing} failing, ${flaky} flaky.`;
    this.grid = [];
    if (rows.length === 0 || model.runs.length === 0) {
      container.replaceChildren();
      return;
    }
    const head = h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col', class: 'row-head' }, 'Cell'),
        ...model.runs.map((run) => runHeader(run)),
      ),
      ...runtimesOf(rows).map((runtime) => versionRow(model.runs, runtime)),
    );
    const body = h('tbody');
    rows.forEach((row, rowIndex) => {
      const squares = row.results.map((result, col) => {
        const td = square(row, model.runs[col]!, result);
        td.dataset.row = String(rowIndex);
        td.dataset.col = String(col);
        return td;
      });
      this.grid.push(squares);
      body.append(h('tr', { 'data-row-id': row.id }, rowHead(row, model), ...squares));
    });
    const table = h(
      'table',
      { class: 'hgrid', role: 'grid', 'aria-labelledby': 'grid-heading', 'aria-describedby': 'grid-help' },
      head,
      body,
    );
    table.addEventListener('keydown', (ev) =>
      gridKeydown(ev, this.grid, (td) => td.querySelector<HTMLAnchorElement>('a')?.click()),
    );
    container.replaceChildren(table);
    // Roving tab stop: the newest failure if any, else the first square.
    const first =
      this.grid.find((r) => r[0]?.dataset.outcome === 'failed')?.[0] ?? this.grid[0]?.[0] ?? undefined;
    if (first) first.tabIndex = 0;
  }
}

function runHeader(run: HistoryRun): HTMLElement {
  const commit = shortCommit(run.commit);
  return h(
    'th',
    { scope: 'col', class: 'run', title: `run ${run.runId}, took ${formatMs(run.durationMs)}` },
    ...runDate(run.startedAt)
      .split(' ')
      .map((part, i) => h('span', { class: i === 0 ? 'run-date' : 'run-time' }, part)),
    h('span', { class: 'run-commit' }, run.url ? h('a', { href: run.url, tabindex: -1 }, commit) : commit),
    hiddenText(` run ${run.runId}`),
  );
}

/** A runtime's version in each run; a version that differs from the run before is in bold. */
function versionRow(runs: readonly HistoryRun[], runtime: string): HTMLElement {
  const versionIn = (run: HistoryRun | undefined) => run?.runtimes.find((r) => r.name === runtime);
  return h(
    'tr',
    { class: 'versions' },
    h('th', { scope: 'row', class: 'row-head' }, h('span', { class: 'row-name' }, runtime)),
    ...runs.map((run, i) => {
      const v = versionIn(run);
      const older = runs.slice(i + 1).find((r) => versionIn(r));
      const changed = v && older && versionIn(older)!.runtimeVersion !== v.runtimeVersion;
      return h(
        'td',
        {
          class: `ver${changed ? ' ver--changed' : ''}`,
          title: v ? `${v.runtimeName} ${v.runtimeVersion}` : undefined,
        },
        v ? v.runtimeVersion : '–',
        changed ? hiddenText(' (changed)') : null,
      );
    }),
  );
}

function rowHead(row: HistoryRow, model: HistoryModel): HTMLElement {
  const notes: (HTMLElement | null)[] = [];
  if (row.failingFor > 0 && row.failingSince)
    notes.push(h('span', { class: 'row-note row-note--failing' }, describeSince(row, model.runs)));
  if (row.flaky.length > 0) notes.push(h('span', { class: 'row-note' }, `flaky: ${row.flaky.join('; ')}`));
  if (row.quarantine) notes.push(h('span', { class: 'row-note' }, quarantineText(row.quarantine)));
  return h(
    'th',
    { scope: 'row', class: 'row-head', 'data-status': row.status },
    h('span', { class: 'row-name' }, row.case ? `${row.scenario} › ${row.case}` : row.scenario),
    h('span', { class: 'row-note' }, `on ${row.runtime}`),
    h(
      'span',
      {},
      row.flaky.length > 0
        ? h(
            'span',
            { class: 'badge badge--flaky', 'data-badge': 'flaky' },
            h('span', { 'aria-hidden': 'true' }, '⚑ '),
            'flaky',
          )
        : null,
      row.newFlake ? h('span', { class: 'badge badge--flaky' }, 'new flake') : null,
      row.status === 'new-failure' ? h('span', { class: 'badge badge--new-failure' }, 'new failure') : null,
      row.status === 'fixed' ? h('span', { class: 'badge badge--fixed' }, 'fixed') : null,
      quarantineBadge(row.quarantine),
    ),
    ...notes,
  );
}

function square(row: HistoryRow, run: HistoryRun, result: HistoryResult | null): HTMLTableCellElement {
  const where = `${row.case ? `${row.scenario} › ${row.case}` : row.scenario} on ${row.runtime} in ${runLabel(run)}: `;
  if (!result)
    return h('td', { role: 'gridcell', tabindex: -1, class: 'sq sq--none' }, hiddenText(where), 'not run');
  const context = [
    result.outcome !== 'passed' ? result.reason : undefined,
    result.attempts && result.attempts > 1 ? `passed on try ${result.attempts}` : undefined,
    result.quarantine ? quarantineText(result.quarantine) : undefined,
  ].filter(Boolean);
  const content = [
    hiddenText(where),
    statusBadge(result.outcome),
    result.outcome !== 'skipped' && result.durationMs !== undefined
      ? h('span', { class: 'duration' }, formatMs(result.durationMs))
      : null,
    result.attempts && result.attempts > 1 ? h('span', { class: 'retry' }, `try ${result.attempts}`) : null,
    context.length > 0 ? hiddenText(` (${context.join('; ')})`) : null,
  ];
  // That run's report at the cell; without one (past history --reports), the run's own page.
  const href = run.report
    ? `${run.report}#cell=${encodeURIComponent(row.cell).replace(/%2F/gi, '/')}`
    : run.url;
  return h(
    'td',
    {
      role: 'gridcell',
      tabindex: -1,
      class: `sq sq--${result.outcome}`,
      'data-outcome': result.outcome,
      title: `${STATUS[result.outcome].long}${result.reason ? `: ${result.reason}` : ''}`,
    },
    href ? h('a', { href, tabindex: -1 }, ...content) : h('span', {}, ...content),
  );
}
