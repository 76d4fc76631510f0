import type { CellResult, RunResults } from './model.js';
import { heldByQuarantine } from './quarantine.js';

const mark: Record<CellResult['outcome'], string> = { passed: 'PASS', failed: 'FAIL', skipped: 'skip' };

/** The final runtimes × scenarios table, readable without colour. */
export function formatMatrix(results: RunResults): string {
  const runtimes = results.runtimes.map((r) => r.name);
  const cell = (runtime: string, scenario: string): string => {
    const c = results.cells.find((x) => x.runtime === runtime && x.scenario === scenario);
    if (!c) return '-';
    return `${heldByQuarantine(c) ? 'FAIL*' : mark[c.outcome]} ${(c.durationMs / 1000).toFixed(1)}s`;
  };
  const header = ['scenario', ...runtimes];
  const rows = results.scenarios.map((s) => [s, ...runtimes.map((r) => cell(r, s))]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cols: string[]) => cols.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  const sep = widths.map((w) => '-'.repeat(w)).join('  ');
  const note = results.cells.some(heldByQuarantine)
    ? ['* quarantined in kh.config.json: the failure is reported but does not fail the run']
    : [];
  return [line(header), sep, ...rows.map(line), ...note].join('\n');
}

/** Cells by outcome; `failed` counts the failures that fail the run, `quarantined` the ones held. */
export function countOutcomes(results: RunResults): Record<CellResult['outcome'] | 'quarantined', number> {
  const counts = { passed: 0, failed: 0, skipped: 0, quarantined: 0 };
  for (const c of results.cells) counts[heldByQuarantine(c) ? 'quarantined' : c.outcome]++;
  return counts;
}

/** `N passed, N failed, N skipped`, with `, N quarantined` when a failure was held. */
export function countsLine(counts: ReturnType<typeof countOutcomes>): string {
  const line = `${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`;
  return counts.quarantined ? `${line}, ${counts.quarantined} quarantined` : line;
}
