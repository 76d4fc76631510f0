// Named cases of a cell (issue 34), as every view of the results shows them.
import type { CaseResult, CellResult, Outcome, TimelineEntry } from './model.js';

/** A case as Ginkgo's full text shows it: its name, then each label in brackets. */
export const caseTitle = (c: { name: string; tags?: readonly string[] }): string =>
  [c.name, ...(c.tags ?? []).map((t) => `[${t}]`)].join(' ');

/** The cell's timeline events about the pods the case created: what a failed case shows beside its assertion. */
export function caseEvents(cell: Pick<CellResult, 'timeline'>, c: Pick<CaseResult, 'pods'>): TimelineEntry[] {
  const objects = new Set((c.pods ?? []).map((p) => `Pod/${p}`));
  return cell.timeline.filter((e) => e.kind === 'event' && objects.has(String(e.detail?.object)));
}

/** A cell's outcome from its cases: failed when one failed, else passed when one passed, else skipped. */
export function outcomeOfCases(cases: readonly Pick<CaseResult, 'outcome'>[]): Outcome {
  if (cases.some((c) => c.outcome === 'failed')) return 'failed';
  return cases.some((c) => c.outcome === 'passed') ? 'passed' : 'skipped';
}
