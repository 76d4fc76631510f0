// How outcomes, durations and baseline verdicts read on the page: the same words in the matrix, the
// summary and the drill-down, so that what is shown and what is read out always agree.
import type { CellCpu, QuarantineRecord } from '../../results/model.js';
import type { OutcomeCounts, ReportCell } from '../model.js';
import { h } from './dom.js';

export type Outcome = ReportCell['outcome'];

export function formatMs(ms: number): string {
  if (ms < 10) return `${Number(ms.toFixed(1))} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** CPU-seconds as the report prints them. */
export const formatCpu = (seconds: number): string =>
  `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} CPU-s`;

/** A cell's CPU in words: its node's, whom the node was shared with, and the host's meanwhile. */
export function cpuText(cpu: CellCpu): string {
  const parts = [];
  if (cpu.nodeSeconds !== undefined)
    parts.push(
      `node ${formatCpu(cpu.nodeSeconds)}${cpu.nodeSharedWith ? ` (node shared with ${cpu.nodeSharedWith.join(', ')})` : ''}`,
    );
  if (cpu.hostSeconds !== undefined) parts.push(`host ${formatCpu(cpu.hostSeconds)} meanwhile`);
  return parts.join(' · ');
}

export const STATUS: Record<Outcome, { icon: string; word: string; long: string }> = {
  passed: { icon: '✓', word: 'pass', long: 'passed' },
  failed: { icon: '✗', word: 'fail', long: 'failed' },
  skipped: { icon: '–', word: 'skip', long: 'skipped' },
};

export function countsText(c: OutcomeCounts): string {
  return `${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`;
}

export function statusBadge(outcome: Outcome): HTMLElement {
  const st = STATUS[outcome];
  return h(
    'span',
    { class: `status status--${outcome}` },
    h('span', { 'aria-hidden': 'true' }, st.icon),
    ` ${st.word}`,
  );
}

export function comparisonBadge(cell: ReportCell): HTMLElement | null {
  const cmp = cell.comparison;
  if (!cmp) return null;
  switch (cmp.verdict) {
    case 'regressed':
      return h(
        'span',
        { class: 'badge badge--regressed' },
        h('span', { 'aria-hidden': 'true' }, '▲'),
        ' regressed',
      );
    case 'slower':
      return h(
        'span',
        { class: 'badge badge--slower' },
        h('span', { 'aria-hidden': 'true' }, '△'),
        ` +${Math.round(cmp.durationDeltaPct ?? 0)}% slower`,
      );
    case 'fixed':
      return h('span', { class: 'badge badge--fixed' }, 'fixed');
    default:
      return null;
  }
}

export function comparisonText(cell: ReportCell): string {
  const cmp = cell.comparison;
  if (!cmp) return '';
  if (cmp.verdict === 'new') return 'not in baseline';
  if (cmp.baselineOutcome === 'skipped') return 'skipped in baseline';
  const before = `${STATUS[cmp.baselineOutcome ?? 'skipped'].long} in ${formatMs(cmp.baselineDurationMs ?? 0)} in baseline`;
  switch (cmp.verdict) {
    case 'regressed':
      return `regression: ${before}`;
    case 'slower':
      return `duration regression: ${before}, ${Math.round(cmp.durationDeltaPct ?? 0)}% slower now`;
    case 'fixed':
      return `fixed: ${before}`;
    default:
      return before;
  }
}

/** A quarantine (kh.config.json) on a cell or case: its failure does not fail the run. */
export function quarantineBadge(q: QuarantineRecord | undefined): HTMLElement | null {
  return q ? h('span', { class: 'badge badge--quarantined' }, 'quarantined') : null;
}

export function quarantineText(q: QuarantineRecord): string {
  return `quarantined until ${q.expires} by ${q.owner}: ${q.reason}`;
}
