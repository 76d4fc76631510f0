import type { CellResult, RunResults } from './model.js';

const mark: Record<CellResult['outcome'], string> = { passed: 'PASS', failed: 'FAIL', skipped: 'skip' };

/** The final runtimes × scenarios table, readable without colour. */
export function formatMatrix(results: RunResults): string {
  const runtimes = results.runtimes.map((r) => r.name);
  const cell = (runtime: string, scenario: string): string => {
    const c = results.cells.find((x) => x.runtime === runtime && x.scenario === scenario);
    return c ? `${mark[c.outcome]} ${(c.durationMs / 1000).toFixed(1)}s` : '-';
  };
  const header = ['scenario', ...runtimes];
  const rows = results.scenarios.map((s) => [s, ...runtimes.map((r) => cell(r, s))]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cols: string[]) => cols.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  const sep = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(header), sep, ...rows.map(line)].join('\n');
}

export function countOutcomes(results: RunResults): Record<CellResult['outcome'], number> {
  const counts = { passed: 0, failed: 0, skipped: 0 };
  for (const c of results.cells) counts[c.outcome]++;
  return counts;
}
