// The end-to-end matrix as vitest tests: the harness runs every selected cell once (beforeAll),
// then each cell is one test that passes, fails with the cell's reason (a cell with cases names
// its failed cases) and failed assertions, or is skipped with its reason. results.json and junit.xml land in KH_OUT (default .reports/e2e).
import {
  type CellResult,
  consoleProgress,
  heldByQuarantine,
  loadBackends,
  parseRunOptions,
  type QuarantineRecord,
  type RunResults,
  runDeadlineMs,
  runHarness,
  scenariosWithSelectedCases,
  selectBackends,
  selectScenarios,
} from '@kh/harness';
import { beforeAll, describe, it } from 'vitest';
import { scenarios } from '../src/index.js';
import { contractGaps } from '../src/support/cri_contract.js';

declare module 'vitest' {
  interface TaskMeta {
    /** A failed cell held by a kh.config.json quarantine entry (scripts/test-summary.mjs reads it). */
    quarantined?: { reason: string; entry?: QuarantineRecord };
  }
}

const options = parseRunOptions([], process.env);
// The registered backends: built-ins and the modules of kh.config.json, KH_BACKENDS.
const registry = await loadBackends({ criEndpoint: options.criEndpoint });
const backends = selectBackends(options.runtimes, registry.backends);
// KH_CASE / KH_CONFORMANCE leave out the scenarios without a selected case, as `run` does.
const selected = scenariosWithSelectedCases(selectScenarios(scenarios, options.scenarios), options.cases);
let results: RunResults | undefined;

// The run's own --timeout (KH_TIMEOUT) ends it with results; the hook's limit only catches a
// clean-up that hangs.
beforeAll(async () => {
  const run = await runHarness(
    options,
    scenarios,
    { progress: consoleProgress(), print: (t) => process.stdout.write(t) },
    { backends: registry.backends },
  );
  results = run.results;
}, runDeadlineMs(options.timeoutMs));

function describeFailure(cell: CellResult): string {
  const failed = cell.assertions
    .filter((a) => a.outcome === 'failed')
    .flatMap((a) => [
      `  ${a.name}: expected ${JSON.stringify(a.expected)}, got ${JSON.stringify(a.actual)}`,
      ...(a.seen ?? []).map(
        (s) => `    seen at +${(s.atMs / 1000).toFixed(1)} s: ${JSON.stringify(s.value)}`,
      ),
    ]);
  return [cell.reason ?? 'failed', ...failed].join('\n');
}

for (const backend of backends) {
  describe(backend.name, () => {
    for (const scenario of selected) {
      it(scenario.name, (ctx) => {
        const cell = results?.cells.find((c) => c.runtime === backend.name && c.scenario === scenario.name);
        if (!cell) throw new Error('the harness produced no result for this cell');
        if (cell.outcome === 'skipped') ctx.skip(cell.reason ?? 'skipped');
        // A quarantined failure (kh.config.json) does not fail the run: the test is skipped and
        // marked, and scripts/test-summary.mjs counts it as quarantined, not as skipped.
        if (heldByQuarantine(cell)) {
          const q = cell.quarantine ?? cell.cases?.find((c) => c.outcome === 'failed')?.quarantine;
          ctx.task.meta.quarantined = { reason: cell.reason ?? 'failed', ...(q ? { entry: q } : {}) };
          ctx.skip(`quarantined${q ? ` until ${q.expires} (${q.owner})` : ''}: ${describeFailure(cell)}`);
        }
        if (cell.outcome === 'failed') throw new Error(describeFailure(cell));
      });
    }
    // Issue 35: a passed cell that needs a CRI method the kubelet calls shows it in the contract
    // table as called or Unimplemented, never as not called.
    it('CRI contract', (ctx) => {
      const runtime = results?.runtimes.find((r) => r.name === backend.name);
      if (!runtime?.criCalls?.length) ctx.skip('no CRI calls of the agent were recorded for this runtime');
      const gaps = results ? contractGaps(results, backend.name) : [];
      if (gaps.length > 0) throw new Error(gaps.join('\n'));
    });
  });
}
