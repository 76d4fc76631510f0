// One harness run end to end: remove what crashed runs left, run the matrix in a fresh world,
// sweep everything labelled with this run, write results.json and junit.xml, print the table.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { runId as processRunId } from '@kh/testkit';
import { selectBackends } from '../backends/registry.js';
import { nodeImagesOf, type RuntimeBackend } from '../backends/types.js';
import type { Scenario } from '../framework/scenario.js';
import { projectRoot } from '../node/project.js';
import type { RunResults } from '../results/model.js';
import { applyQuarantine } from '../results/quarantine.js';
import { countOutcomes, countsLine, formatMatrix } from '../results/table.js';
import { writeResults } from '../results/writer.js';
import { errorMessage } from '../support/errors.js';
import type { Progress } from '../support/progress.js';
import { projectConfig, type QuarantineEntry } from '../support/project-config.js';
import { RunLedger } from '../world/ledger.js';
import { removeRunLeftovers } from '../world/leftovers.js';
import { HarnessWorld, nodeNameFor } from '../world/world.js';
import { scenariosWithSelectedCases } from './cases.js';
import { startNode } from './node.js';
import {
  DEFAULT_NODES_PER_RUNTIME,
  defaultMaxParallelCells,
  type RunOptions,
  selectScenarios,
} from './options.js';
import { type MatrixDeps, runMatrix } from './runner.js';
import { estimateCells, loadDurations, selectShard } from './shard.js';
import { DEFAULT_RUN_TIMEOUT_MS, runTimeout } from './timeout.js';

const execFileP = promisify(execFile);

export interface HarnessIO {
  progress: Progress;
  /** Aborted on Ctrl-C: no new cells; clean-up still runs. The run's --timeout does the same. */
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
  /** The commit recorded in results.json; default: checkoutCommit(). */
  commit?: string;
  /** Quarantined cells and cases; default: kh.config.json's `quarantine` (KH_CONFIG). */
  quarantine?: readonly QuarantineEntry[];
  /** The clock quarantine expiry is judged by. */
  now?: () => Date;
}

/** GITHUB_SHA in Actions, else the checkout's HEAD; undefined outside a git checkout. */
export async function checkoutCommit(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (env.GITHUB_SHA) return env.GITHUB_SHA;
  try {
    const { stdout } = await execFileP('git', ['rev-parse', 'HEAD'], { cwd: projectRoot() });
    return stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

export async function runHarness(
  opts: Omit<RunOptions, 'suite'>,
  suite: readonly Scenario[],
  io: HarnessIO,
  deps: HarnessDeps = {},
): Promise<HarnessRunResult> {
  // Read first: a bad entry in kh.config.json stops the run before it starts anything.
  const quarantine = deps.quarantine ?? projectConfig(process.env, process.cwd())?.quarantine ?? [];
  const selected = selectBackends(opts.runtimes, deps.backends);
  const scenarios = scenariosWithSelectedCases(selectScenarios(suite, opts.scenarios), opts.cases);
  const durations = await loadDurations(opts.durations ?? []);
  const shard = opts.shard && selectShard(opts.shard, selected, scenarios, durations);
  const cells = shard ? new Set(shard.cells) : undefined;
  // A shard starts only the runtimes it has cells on.
  const backends = cells
    ? selected.filter((b) => scenarios.some((s) => cells.has(`${b.name}/${s.name}`)))
    : selected;
  const runId = deps.runId ?? processRunId;
  const ledger = deps.ledger ?? new RunLedger();
  const removeRun = deps.removeRun ?? removeRunLeftovers;
  const { progress } = io;

  const stale = await ledger.removeAbandoned(removeRun);
  if (stale.length > 0) progress.warn(`removed leftovers of interrupted runs: ${stale.join(', ')}`);
  await ledger.begin(runId);
  progress.step(
    shard
      ? `run ${runId}: shard ${shard.index}/${shard.total}: ${shard.cells.join(', ') || 'no cells'}`
      : `run ${runId}: ${backends.map((b) => b.name).join(', ')} × ${scenarios.map((s) => s.name).join(', ')}`,
  );
  const timeout = runTimeout(opts.timeoutMs ?? DEFAULT_RUN_TIMEOUT_MS, io.signal, (reason) =>
    progress.fail(`${reason.message}: no cell starts any more, the running ones end as failed`),
  );
  let results: RunResults;
  try {
    results = await runMatrix({
      runId,
      backends,
      scenarios,
      startWorld:
        deps.startWorld ??
        ((id, p, lanes) =>
          HarnessWorld.start({
            runId: id,
            nodes: [...lanes].flatMap(([b, n]) => Array.from({ length: n }, (_, i) => nodeNameFor(id, b, i))),
            images: nodeImagesOf(backends),
            progress: p,
          })),
      startNode: deps.startNode ?? ((w, b, p, i, o) => startNode(w as HarnessWorld, b, p, i, o)),
      progress,
      nodesPerRuntime: opts.nodesPerRuntime ?? DEFAULT_NODES_PER_RUNTIME,
      maxParallelCells: opts.maxParallelCells ?? defaultMaxParallelCells(),
      estimates: estimateCells(backends, scenarios, durations),
      signal: timeout.signal,
      ...(cells ? { cells } : {}),
      ...(opts.cases ? { cases: opts.cases } : {}),
    });
    const commit = deps.commit ?? (await checkoutCommit());
    const held = applyQuarantine(results, quarantine, deps.now?.() ?? new Date());
    results = { ...held.results, ...(commit ? { commit } : {}), ...(shard ? { shard } : {}) };
    for (const { entry, failures } of held.expired)
      progress.warn(
        `quarantine of ${entry.case ? `${entry.cell} › ${entry.case}` : entry.cell} (${entry.owner}) expired on ${entry.expires}: ${failures.join(', ')} fail the run again`,
      );
  } finally {
    timeout.clear();
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
  io.print?.(`\n${formatMatrix(results)}\n`);
  progress.info(
    `${countsLine(countOutcomes(results))} in ${(results.durationMs / 1000).toFixed(1)}s; ${files.json}, ${files.junit}`,
  );
  return { results, files };
}
