import type { CaseStatus, SuiteResult } from './runner.js';

/** One backend's results, as the side-by-side table needs them (our suite's cases or critest's specs). */
export interface Side {
  /** e.g. "containerd 1.6.20 (unix:///...)". */
  label: string;
  results: ReadonlyArray<SideResult>;
}

export interface SideResult {
  id: string;
  status: CaseStatus;
  message?: string | undefined;
  /** Runs it took, when more than one: a pass after a failed attempt is flaky. */
  attempts?: number | undefined;
  /** The runtime's log about the case's objects, for a failed or flaky case. */
  runtimeLog?: readonly string[] | undefined;
}

/** A suite result as one side of the table: cases named "group › case". */
export function suiteSide(result: SuiteResult): Side {
  return {
    label: `${result.runtime.name} ${result.runtime.version} (${result.endpoint})`,
    results: result.cases.map((c) => ({
      id: `${c.group} › ${c.name}`,
      status: c.status,
      message: c.message,
    })),
  };
}

export interface ComparisonRow {
  id: string;
  /** Per side, in the order given; undefined where that side has no such case. */
  statuses: Array<CaseStatus | undefined>;
  messages: Array<string | undefined>;
  /** Per side: it passed, but only on a retry. */
  flaky: boolean[];
  /** Per side: the runtime's log lines about the case's objects. */
  logs: Array<readonly string[] | undefined>;
  /** The sides disagree (a missing result counts as disagreeing). */
  differs: boolean;
  /** The first side (the reference) passed and another side failed. */
  regression: boolean;
}

export interface Comparison {
  labels: string[];
  rows: ComparisonRow[];
  regressions: number;
  differences: number;
  /** Cases that passed on some side only on a retry. */
  flaky: number;
}

/** Lines up the results of several backends case by case; the first side is the reference. */
export function compareSides(sides: readonly Side[]): Comparison {
  const ids: string[] = [];
  const bySide = sides.map((side) => {
    const map = new Map<string, SideResult>();
    for (const r of side.results) {
      if (!ids.includes(r.id)) ids.push(r.id);
      map.set(r.id, r);
    }
    return map;
  });
  const rows = ids.map((id): ComparisonRow => {
    const found = bySide.map((m) => m.get(id));
    const statuses = found.map((f) => f?.status);
    const [reference, ...others] = statuses;
    return {
      id,
      statuses,
      messages: found.map((f) => f?.message),
      flaky: found.map((f) => f?.status === 'passed' && (f.attempts ?? 1) > 1),
      logs: found.map((f) => f?.runtimeLog),
      differs: statuses.some((s) => s !== reference),
      regression: reference === 'passed' && others.some((s) => s === 'failed'),
    };
  });
  return {
    labels: sides.map((s) => s.label),
    rows,
    regressions: rows.filter((r) => r.regression).length,
    differences: rows.filter((r) => r.differs).length,
    flaky: rows.filter((r) => r.flaky.some(Boolean)).length,
  };
}

const CELL: Record<CaseStatus, string> = { passed: 'pass', failed: 'FAIL', skipped: 'skip' };
const MESSAGE_WIDTH = 300;

/** First line of a message, cut to a width a terminal table can hold. */
function excerpt(message: string): string {
  const oneLine = message.replace(/\s*\n\s*/g, ' | ').trim();
  return oneLine.length > MESSAGE_WIDTH ? `${oneLine.slice(0, MESSAGE_WIDTH - 1)}…` : oneLine;
}

/**
 * The side-by-side table: the cases where the backends differ first, each with every side's
 * message, then the cases that failed everywhere (with messages), then the rest, one line each
 * (a skip with its reason).
 */
export function formatComparison(comparison: Comparison): string {
  const several = comparison.labels.length > 1;
  const letters = comparison.labels.map((_, i) => String.fromCharCode(65 + i));
  const lines = comparison.labels.map((label, i) => `${letters[i]} = ${label}`);
  const cells = (r: ComparisonRow) =>
    r.statuses.map((s, i) => (r.flaky[i] ? 'flaky' : s ? CELL[s] : '-').padEnd(5)).join(' ');
  const header = `  ${letters.map((l) => l.padEnd(5)).join(' ')} case`;
  const withMessages = (r: ComparisonRow) => [
    `  ${cells(r)} ${r.id}`,
    ...r.messages.flatMap((m, i) => [
      ...(m && (r.statuses[i] !== 'passed' || r.flaky[i]) ? [`        ${letters[i]}: ${excerpt(m)}`] : []),
      ...(r.logs[i] ?? []).map((line) => `          ${letters[i]} log: ${excerpt(line)}`),
    ]),
  ];
  const oneLine = (r: ComparisonRow) => {
    const reason = r.statuses[0] === 'skipped' && r.messages[0] ? `  (${excerpt(r.messages[0])})` : '';
    return `  ${cells(r)} ${r.id}${reason}`;
  };
  const section = (title: string, rows: ComparisonRow[], render: (r: ComparisonRow) => string[]) => {
    lines.push(
      '',
      `${title} (${rows.length}):`,
      ...(rows.length > 0 ? [header, ...rows.flatMap(render)] : ['  (none)']),
    );
  };
  const flaky = (r: ComparisonRow) => r.flaky.some(Boolean);
  const differing = comparison.rows.filter((r) => r.differs);
  const failed = comparison.rows.filter((r) => !r.differs && r.statuses[0] === 'failed');
  const retried = comparison.rows.filter((r) => !r.differs && r.statuses[0] === 'passed' && flaky(r));
  const rest = comparison.rows.filter((r) => !r.differs && r.statuses[0] !== 'failed' && !flaky(r));
  if (several) section('Where they differ', differing, withMessages);
  if (failed.length > 0) section(several ? 'Failed on every side' : 'Failed', failed, withMessages);
  if (retried.length > 0) section('Passed, but only on a retry', retried, withMessages);
  section(several ? 'The same' : 'Passed or skipped', rest, (r) => [oneLine(r)]);
  const totals = comparison.labels.map((_, i) => {
    const count = (s: CaseStatus) => comparison.rows.filter((r) => r.statuses[i] === s).length;
    const retries = comparison.rows.filter((r) => r.flaky[i]).length;
    const onRetry = retries > 0 ? ` (${retries} only on a retry)` : '';
    return `${letters[i]}: ${count('passed')} passed${onRetry}, ${count('failed')} failed, ${count('skipped')} skipped`;
  });
  lines.push('', totals.join('; '));
  if (several) {
    const others = letters.slice(1).join('/');
    lines.push(
      comparison.regressions > 0
        ? `${comparison.regressions} case(s) pass on A and fail on ${others}.`
        : `Nothing that passes on A fails on ${others}.`,
    );
  }
  return lines.join('\n');
}
