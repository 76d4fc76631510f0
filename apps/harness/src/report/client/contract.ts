// The CRI contract table: each method kubelet 1.33 can call, a column per runtime saying whether
// the agent called it and what the runtime answered. Unimplemented and never-called methods are
// rows like any other, marked by word and icon, not by colour alone.
import type { CriContractStatus } from '../../results/model.js';
import type { ReportModel } from '../model.js';
import { byId, h, headRow } from './dom.js';

const ICON: Record<CriContractStatus, string> = { called: '✓', unimplemented: '⚠', 'not-called': '–' };

export function renderContract(model: ReportModel): void {
  const { criContract: rows, runtimes } = model;
  if (rows.length === 0) {
    byId('contract').replaceChildren(h('p', { class: 'empty' }, 'No CRI calls were recorded in this run.'));
    return;
  }
  byId('contract').replaceChildren(
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        { class: 'compact contract', 'aria-labelledby': 'contract-heading' },
        headRow('Method', 'The kubelet calls it on', ...runtimes.map((r) => r.name)),
        h(
          'tbody',
          {},
          ...rows.map((row) =>
            h(
              'tr',
              { 'data-method': row.method },
              h('th', { scope: 'row' }, h('code', {}, row.method)),
              h('td', {}, row.when ?? 'not a kubelet 1.33 call'),
              ...runtimes.map((r) => {
                const c = row.runtimes[r.name];
                if (!c) return h('td', { 'data-runtime': r.name }, '—');
                return h(
                  'td',
                  { class: `contract--${c.status}`, 'data-runtime': r.name, 'data-status': c.status },
                  h('span', { 'aria-hidden': 'true' }, `${ICON[c.status]} `),
                  c.text,
                );
              }),
            ),
          ),
        ),
      ),
    ),
  );
}
