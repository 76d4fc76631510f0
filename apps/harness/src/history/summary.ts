// The history in a few lines of Markdown, for the nightly's job summary ($GITHUB_STEP_SUMMARY):
// the alerts, then what the newest run changed: new failures, new flakes, fixed, still failing.
import type { HistoryModel, HistoryRow } from './model.js';
import { describeSince, runDate, shortCommit } from './wording.js';

const MAX_LISTED = 20;

/** One line of text that Markdown shows as it is: no HTML, no table or code breaks. */
const plain = (text: string) =>
  text
    .replace(/\s+/g, ' ')
    .replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c]!)
    .replace(/([\\`*_[\]|])/g, '\\$1')
    .slice(0, 240);

export function markdownSummary(model: HistoryModel): string {
  const rows = new Map(model.rows.map((r) => [r.id, r]));
  const newest = model.runs[0];
  const s = model.summary;
  const out: string[] = [
    `### kubelet-harness history: ${s.newFailures.length} new failures, ${s.newFlakes.length} new flakes, ${s.fixed.length} fixed, ${s.stillFailing.length} still failing`,
    '',
    newest
      ? `${model.runs.length} runs; the newest is ${plain(newest.runId)} (${runDate(newest.startedAt)} UTC, ${shortCommit(newest.commit)}).`
      : 'No runs.',
    '',
  ];
  for (const a of model.alerts) out.push(`> **Alert (${a.kind}):** ${plain(a.message)}`, '');
  const list = (title: string, ids: string[], note: (r: HistoryRow) => string) => {
    if (ids.length === 0) return;
    out.push(`**${title}**`, '');
    for (const id of ids.slice(0, MAX_LISTED)) {
      const r = rows.get(id)!;
      const q = r.quarantine
        ? ` (quarantined until ${r.quarantine.expires}, ${plain(r.quarantine.owner)})`
        : '';
      const text = note(r);
      out.push(`- \`${id.replace(/`/g, "'")}\`${q}${text ? `: ${plain(text)}` : ''}`);
    }
    if (ids.length > MAX_LISTED) out.push(`- and ${ids.length - MAX_LISTED} more (history.html)`);
    out.push('');
  };
  list('New failures', s.newFailures, (r) => r.results[0]?.reason ?? '');
  list('New flakes', s.newFlakes, (r) => r.flaky.join('; '));
  list('Fixed', s.fixed, () => '');
  list('Still failing', s.stillFailing, (r) => describeSince(r, model.runs));
  return `${out.join('\n')}\n`;
}
