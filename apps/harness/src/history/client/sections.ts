// The parts of the history page no filter changes: the header, the alerts, the newest run's
// changes (new failures, new flakes, fixed, still failing) and the failures grouped by message.
import { byId, h, headRow } from '../../report/client/dom.js';
import type { HistoryModel, HistoryRow } from '../model.js';
import { describeSince, runDate, shortCommit } from '../wording.js';

export function renderHeader(model: HistoryModel): void {
  const newest = model.runs[0];
  const oldest = model.runs[model.runs.length - 1];
  document.title = `kubelet-harness history · ${model.runs.length} runs`;
  const meta = [
    h('span', {}, `${model.runs.length} runs`),
    newest && oldest
      ? h('span', {}, `${runDate(oldest.startedAt)} to ${runDate(newest.startedAt)} UTC`)
      : null,
    newest
      ? h('span', {}, 'newest ', h('code', {}, newest.runId), ` at ${shortCommit(newest.commit)}`)
      : null,
    h('span', {}, `flaky window: ${model.settings.flakyWindow} runs`),
  ];
  byId('history-meta').replaceChildren(...meta.filter((m) => m !== null));
  byId('generated-at').textContent = `Generated ${model.generatedAt}`;
}

const ALERT_TITLES: Record<HistoryModel['alerts'][number]['kind'], string> = {
  stale: 'Stale:',
  'fail-after': 'Failing too long:',
  'bench-regression': 'Bench regression:',
};

export function renderAlerts(model: HistoryModel): void {
  const { alerts, settings } = model;
  const checked = [
    settings.failAfter !== undefined ? `failing ${settings.failAfter} runs in a row` : null,
    settings.staleHours !== undefined ? `no run for ${settings.staleHours} hours` : null,
    settings.benchRegression !== undefined
      ? `bench figures ${Math.round(settings.benchRegression * 100)}% worse than their median`
      : null,
  ].filter(Boolean);
  byId('alerts').replaceChildren(
    ...(alerts.length > 0
      ? alerts.map((a) =>
          h('p', { class: 'alert', 'data-alert': a.kind }, h('strong', {}, ALERT_TITLES[a.kind]), a.message),
        )
      : checked.length > 0
        ? [h('p', { class: 'no-alerts' }, `No alerts (checked: ${checked.join(', ')}).`)]
        : []),
  );
}

export function renderSummary(model: HistoryModel): void {
  const rows = new Map(model.rows.map((r) => [r.id, r]));
  const group = (key: string, title: string, ids: string[], note: (r: HistoryRow) => string) =>
    h(
      'section',
      { 'data-summary': key, 'aria-labelledby': `summary-${key}` },
      h('h3', { id: `summary-${key}` }, `${title} (${ids.length})`),
      ids.length === 0
        ? h('p', { class: 'empty' }, 'None.')
        : h(
            'ul',
            {},
            ...ids.map((id) => {
              const r = rows.get(id)!;
              return h('li', {}, h('code', {}, id), h('span', { class: 'row-note' }, ` ${note(r)}`));
            }),
          ),
    );
  const { summary } = model;
  const reason = (r: HistoryRow) => r.results[0]?.reason ?? '';
  byId('summary').replaceChildren(
    model.runs.length === 0
      ? h('p', { class: 'empty' }, 'No runs yet.')
      : h(
          'div',
          { class: 'changes-grid' },
          group('new-failures', 'New failures', summary.newFailures, reason),
          group('new-flakes', 'New flakes', summary.newFlakes, (r) => r.flaky.join('; ')),
          group('fixed', 'Fixed', summary.fixed, () => 'passed in the newest run'),
          group('still-failing', 'Still failing', summary.stillFailing, (r) => describeSince(r, model.runs)),
        ),
  );
}

export function renderClusters(model: HistoryModel): void {
  const { clusters } = model;
  const listRows = (ids: string[]) =>
    ids.length <= 6 ? ids.join(', ') : `${ids.slice(0, 6).join(', ')} and ${ids.length - 6} more`;
  byId('clusters').replaceChildren(
    clusters.length === 0
      ? h('p', { class: 'empty' }, 'No failures in these runs.')
      : h(
          'table',
          { class: 'compact clusters' },
          headRow('Failures', 'Runs', 'Message, stripped', 'Rows', 'Newest message'),
          h(
            'tbody',
            {},
            ...clusters.map((c) =>
              h(
                'tr',
                { 'data-cluster': c.signature },
                h('td', { class: 'num' }, c.failures),
                h('td', { class: 'num' }, c.runs),
                h('td', { class: 'message' }, c.signature),
                h('td', {}, listRows(c.rows)),
                h('td', { class: 'example' }, c.example),
              ),
            ),
          ),
        ),
  );
}
