// The drill-down: a modal dialog with one cell's details (failure reason, assertions with expected
// and actual values, timeline, CRI call statistics, pod start-up latencies, log excerpts).
import type { ReportCase, ReportCell } from '../model.js';
import { byId, type Child, h, headRow, s } from './dom.js';
import {
  comparisonBadge,
  comparisonText,
  cpuText,
  formatMs,
  type Outcome,
  quarantineBadge,
  quarantineText,
  statusBadge,
} from './format.js';

type TimelineEntry = ReportCell['timeline'][number];
type TimelineKind = TimelineEntry['kind'];

const KIND_LABEL: Record<TimelineKind, string> = {
  'pod-phase': 'Pod phase',
  'container-state': 'Container',
  'node-condition': 'Node condition',
  event: 'Event',
  'cri-call': 'CRI call',
  note: 'Harness',
};

export class CellDialog {
  private readonly dialog = byId<HTMLDialogElement>('cell-dialog');

  /** `onClose` runs however the dialog closed: Escape, the close button or close(). */
  constructor(onClose: () => void) {
    this.dialog.addEventListener('close', onClose);
    byId('cell-close').addEventListener('click', () => this.dialog.close());
  }

  get isOpen(): boolean {
    return this.dialog.open;
  }

  close(): void {
    this.dialog.close();
  }

  /** Shows `cell`, replacing what the dialog showed if it was open. */
  open(cell: ReportCell): void {
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
        cell.cpu ? h('span', { class: 'cpu' }, cpuText(cell.cpu)) : null,
        started ? h('span', {}, `started ${started} UTC`) : null,
        comparisonBadge(cell),
        quarantineBadge(cell.quarantine),
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
      cell.quarantine
        ? h(
            'p',
            { class: 'compare' },
            `${quarantineText(cell.quarantine)} (a failure does not fail the run).`,
          )
        : null,
      casesSection(cell),
      assertionsSection(cell),
      timelineSection(cell),
      criCallsSection(cell),
      cell.podStartupMs?.length
        ? h(
            'section',
            { 'aria-labelledby': 'dd-startup' },
            h('h3', { id: 'dd-startup' }, 'Pod start-up latency'),
            h('p', {}, cell.podStartupMs.map((v) => formatMs(v)).join(', ')),
          )
        : null,
      startupSection(cell),
      logsSection(cell),
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
}

/** The cell's start-up breakdown (percentiles per stage) and the bare floor it measured, if any. */
function startupSection(cell: ReportCell): HTMLElement | null {
  const b = cell.startupBreakdown;
  const floor = cell.startupFloor;
  if (!b && !floor) return null;
  const row = (label: string, p: { p50: number; p90: number; p99: number }) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, label),
      ...[p.p50, p.p90, p.p99].map((v) => h('td', {}, formatMs(v))),
    );
  const rows = [
    ...(b && b.pods > 0 ? [...b.stages.map((st) => row(st.stage, st)), row('total', b.total)] : []),
    ...(floor
      ? [row('bare floor, one pod', { p50: floor.singleMs, p90: floor.singleMs, p99: floor.singleMs })]
      : []),
    ...(floor?.burst ? [row(`bare floor, ${floor.burst.pods} at once`, floor.burst)] : []),
  ];
  return h(
    'section',
    { 'aria-labelledby': 'dd-breakdown' },
    h('h3', { id: 'dd-breakdown' }, 'Pod start-up by stage'),
    b
      ? h(
          'p',
          {},
          `${b.pods} pods through every step (API create to status written)${b.incomplete ? `, ${b.incomplete} not (adopted, failed or exited)` : ''}.`,
        )
      : null,
    h('table', { class: 'compact' }, headRow('Stage', 'p50', 'p90', 'p99'), h('tbody', {}, ...rows)),
  );
}

const value = (v: unknown) =>
  v === undefined ? '—' : h('pre', { class: 'value' }, JSON.stringify(v, null, 2));

/** What a failed eventually check went through, each value with when it was first seen. */
const seenList = (seen: NonNullable<ReportCell['assertions'][number]['seen']>) =>
  h(
    'ol',
    { class: 'seen', 'aria-label': 'Values seen while waiting' },
    ...seen.map((v) => h('li', {}, `+${formatMs(v.atMs)} `, h('code', {}, JSON.stringify(v.value)))),
  );

/**
 * The cell's named cases in declaration order, each with its result and duration; a failed one
 * also with its failed assertions and the events of its pods, which is where to look first.
 */
function casesSection(cell: ReportCell): HTMLElement | null {
  const cases = cell.cases;
  if (!cases?.length) return null;
  const count = (o: Outcome) => cases.filter((k) => k.outcome === o).length;
  const failure = (k: ReportCase) =>
    k.outcome !== 'failed'
      ? null
      : h(
          'div',
          { class: 'case-failure' },
          ...(k.assertions ?? [])
            .filter((a) => a.outcome === 'failed')
            .map((a) =>
              h(
                'div',
                { class: 'case-assertion' },
                h('div', { class: 'message' }, a.message ?? a.name),
                h('div', {}, 'Expected: ', value(a.expected)),
                h('div', {}, 'Actual: ', value(a.actual)),
                a.seen ? seenList(a.seen) : null,
              ),
            ),
          k.events.length
            ? h(
                'ul',
                { class: 'case-events', 'aria-label': 'Events of its pods' },
                ...k.events.map((e) =>
                  h('li', {}, `${formatMs(e.t)} ${String(e.detail?.object ?? '')} ${e.summary}`),
                ),
              )
            : null,
        );
  return h(
    'section',
    { 'aria-labelledby': 'dd-cases' },
    h(
      'h3',
      { id: 'dd-cases' },
      `Cases (${cases.length}: ${count('passed')} passed, ${count('failed')} failed, ${count('skipped')} skipped)`,
    ),
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        { class: 'compact cases' },
        headRow('Case', 'Result', 'Duration'),
        h(
          'tbody',
          {},
          ...cases.map((k) =>
            h(
              'tr',
              { class: `case case--${k.outcome}` },
              h(
                'th',
                { scope: 'row' },
                k.title,
                k.file ? h('div', { class: 'case-file' }, k.file) : null,
                k.reason ? h('div', { class: 'message' }, k.reason) : null,
                failure(k),
              ),
              h('td', {}, statusBadge(k.outcome), quarantineBadge(k.quarantine)),
              h('td', {}, k.durationMs === undefined ? '—' : formatMs(k.durationMs)),
            ),
          ),
        ),
      ),
    ),
  );
}

function assertionsSection(cell: ReportCell): HTMLElement {
  const order: Record<Outcome, number> = { failed: 0, skipped: 1, passed: 2 };
  const assertions = [...cell.assertions].sort((a, b) => order[a.outcome] - order[b.outcome]);
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
            headRow('Assertion', 'Result', 'Expected', 'Actual'),
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
                  h('td', { class: 'actual' }, value(a.actual), a.seen ? seenList(a.seen) : null),
                ),
              ),
            ),
          ),
        ),
  );
}

function timelineSection(cell: ReportCell): HTMLElement {
  const kinds = [...new Set(cell.timeline.map((e) => e.kind))];
  const maxCri = Math.max(1, ...cell.timeline.map((e) => (e.kind === 'cri-call' ? (e.durationMs ?? 0) : 0)));
  const rows = cell.timeline.map((e) => timelineRow(e, maxCri));
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
              headRow('Time', 'Kind', 'What happened', 'Latency'),
              tbody,
            ),
          ),
        ),
  );
}

function timelineRow(e: TimelineEntry, maxCri: number): HTMLTableRowElement {
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
function criCallsSection(cell: ReportCell): HTMLElement | null {
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
        headRow('Caller', 'Method', 'Calls', 'Errors', 'p50', 'p90', 'p99', 'max'),
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

function logsSection(cell: ReportCell): HTMLElement {
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
