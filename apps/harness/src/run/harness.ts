// One harness run end to end: remove what crashed runs left, run the matrix in a fresh world,
// sweep everything labelled with this run, write results.json and junit.xml, print the table.
import { runId as processRunId } from '@kh/testkit';
import { selectBackends } from '../backends/registry.js';
import type { RuntimeBackend } from '../backends/types.js';
import type { Scenario } from '../framework/scenario.js';
import type { RunResults } from '../results/model.js';
import { countOutcomes, formatMatrix } from '../results/table.js';
import { writeResults } from '../results/writer.js';
import type { Progress } from '../support/progress.js';
import { RunLedger } from '../world/ledger.js';
import { removeRunLeftovers } from '../world/leftovers.js';
import { HarnessWorld } from '../world/world.js';
import { startNode } from './node.js';
import { type RunOptions, selectScenarios } from './options.js';
import { errorMessage, type MatrixDeps, runMatrix } from './runner.js';

export interface HarnessIO {
  progress: Progress;
  /** Aborted on Ctrl-C: no new cells; clean-up still runs. */
  signal?: AbortSignal;
  /** Prints the final table (stdout in the CLI). */
  print?: (text: string) => void;
}

export interface HarnessRunResult {
  results: RunResults;
  files: { json: string; junit: string };
}

/** Seams for tests: the registry, the world and node start-up, clean-up. */
export interface HarnessDeps {
  backends?: readonly RuntimeBackend[];
  runId?: string;
  ledger?: RunLedger;
  removeRun?: (runId: string) => Promise<unknown>;
  startWorld?: MatrixDeps['startWorld'];
  startNode?: MatrixDeps['startNode'];
}

export async function runHarness(
  opts: Omit<RunOptions, 'suite'>,
  suite: readonly Scenario[],
  io: HarnessIO,
  deps: HarnessDeps = {},
): Promise<HarnessRunResult> {
  const backends = selectBackends(opts.runtimes, deps.backends);
  const scenarios = selectScenarios(suite, opts.scenarios);
  const runId = deps.runId ?? processRunId;
  const ledger = deps.ledger ?? new RunLedger();
  const removeRun = deps.removeRun ?? removeRunLeftovers;
  const { progress } = io;

  const stale = await ledger.removeAbandoned(removeRun);
  if (stale.length > 0) progress.warn(`removed leftovers of interrupted runs: ${stale.join(', ')}`);
  await ledger.begin(runId);
  progress.step(
    `run ${runId}: ${backends.map((b) => b.name).join(', ')} × ${scenarios.map((s) => s.name).join(', ')}`,
  );
  let results: RunResults;
  try {
    results = await runMatrix({
      runId,
      backends,
      scenarios,
      startWorld:
        deps.startWorld ??
        ((id, p) => HarnessWorld.start({ runId: id, backends: backends.map((b) => b.name), progress: p })),
      startNode: deps.startNode ?? ((w, b, p) => startNode(w as HarnessWorld, b, p)),
      progress,
      ...(io.signal ? { signal: io.signal } : {}),
    });
  } finally {
    // The final sweep: whatever a failed stop() or an interrupted start left behind. The record
    // stays when the sweep fails, so the next run retries it.
    try {
      await removeRun(runId);
      await ledger.end(runId);
    } catch (err) {
      progress.warn(`final clean-up of run ${runId} failed (the next run retries): ${errorMessage(err)}`);
    }
  }
  const files = await writeResults(opts.outDir, results);
  const counts = countOutcomes(results);
  io.print?.(`\n${formatMatrix(results)}\n`);
  progress.info(
    `${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped in ${(results.durationMs / 1000).toFixed(1)}s; ${files.json}, ${files.junit}`,
  );
  return { results, files };
}
