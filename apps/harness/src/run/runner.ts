// Runs the matrix: every selected scenario on every selected backend. The plan (plan.ts) says which
// cells run and how many nodes (lanes) each runtime gets; the nodes start in parallel (lanes.ts);
// the scheduler (schedule.ts) places cells on them by what each may share, and each cell
// (cell.ts) is recorded. Everything the run created is removed at the end, also on failure and
// on Ctrl-C.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { RuntimeBackend } from '../backends/types.js';
import type { Scenario } from '../framework/scenario.js';
import { type HostCpu, hostCpu } from '../node/cpu.js';
import { withCriContract } from '../results/contract.js';
import type { CellResult, RunCpu, RunResults } from '../results/model.js';
import { RESULTS_SCHEMA_VERSION } from '../results/model.js';
import { withStartupTargets } from '../results/startup.js';
import { errorMessage } from '../support/errors.js';
import type { Progress } from '../support/progress.js';
import type { ReadyNode, World } from '../world/types.js';
import type { CaseSelection } from './cases.js';
import { failedCell, runCell, skippedCell } from './cell.js';
import { runCpu, withNodeSharing } from './cpu.js';
import { CriCallTally, NodeCriCalls } from './cri-calls.js';
import { ExclusiveResources } from './exclusive.js';
import { type MatrixRecord, type StartNode, startLanes, unknownRuntime } from './lanes.js';
import { type MatrixPlan, planMatrix } from './plan.js';
import { CellScheduler, runScheduled } from './schedule.js';
import { RunTimedOut } from './timeout.js';

export interface MatrixDeps<W extends World = World> {
  /** Labels everything the run creates; defaults to a fresh id. */
  runId?: string;
  backends: RuntimeBackend[];
  scenarios: Scenario[];
  /** `nodes`: how many nodes each runtime will start, for their API credentials. */
  startWorld(runId: string, progress: Progress, nodes: ReadonlyMap<string, number>): Promise<W>;
  /** Starts node `index` (0 first) of a runtime. */
  startNode: StartNode<W>;
  progress: Progress;
  /**
   * Aborted on SIGINT or when the run's --timeout runs out (reason RunTimedOut): no new cells, the
   * running ones end as failed; clean-up still runs.
   */
  signal?: AbortSignal;
  /** The cases of case-declaring scenarios to run (`--case`, `--conformance`); absent: all. */
  cases?: CaseSelection;
  /** Only these cells (`runtime/scenario`, a shard); absent: every runtime × scenario. */
  cells?: ReadonlySet<string>;
  /** Where held host resources are locked across processes; default `defaultLockDir()`. */
  lockDir?: string;
  /** Nodes per runtime at most (default 1): cells that need a node alone run side by side on them. */
  nodesPerRuntime?: number;
  /** 'namespace' cells sharing one node at most (default 3). */
  cellsPerNode?: number;
  /** Cells running at once in the whole run (default: no limit); the nodes share the host's CPUs. */
  maxParallelCells?: number;
  /** Expected duration by `runtime/scenario`, which orders the cells (longest chains first). */
  estimates?: ReadonlyMap<string, number>;
  /** How long a heavy cell waits after another heavy cell's start (default HEAVY_START_SPACING_MS). */
  heavyStartSpacingMs?: number;
}

const DEFAULT_CELLS_PER_NODE = 3;
/**
 * A probe suite starts 22 pods at once; on 2 cores the host then stays about 99 % busy for 45 s
 * (measured). Two such bursts at once starved probes past their 1 s timeouts.
 */
export const HEAVY_START_SPACING_MS = 45_000;

export const newRunId = (): string => `kh-${Date.now().toString(36)}-${randomBytes(2).toString('hex')}`;

/** The run's record as it grows, and every CRI call per runtime for the report's latency chart. */
interface MatrixRun extends MatrixRecord {
  tallies: Map<string, CriCallTally>;
  cpu?: RunCpu;
}

export async function runMatrix<W extends World>(deps: MatrixDeps<W>): Promise<RunResults> {
  const { progress } = deps;
  const plan = planMatrix(deps.backends, deps.scenarios, deps);
  const runId = deps.runId ?? newRunId();
  const startedAt = new Date();
  const cpuAtStart = await hostCpu();
  const run: MatrixRun = { cells: [], runtimes: [], tallies: new Map() };
  let world: W | undefined;
  const nodes: ReadyNode[] = [];
  try {
    world = await startWorld(deps, runId, plan, run);
    if (world && deps.signal?.aborted) endEveryCell(plan, run, deps.signal);
    else if (world) {
      const nodesOf = await startLanes(world, plan, deps.startNode, progress, run);
      nodes.push(...[...nodesOf.values()].flat());
      await runCells(world, plan, nodesOf, deps, run);
    }
  } finally {
    // Read before anything stops: a removed container's cgroup is gone with its counters.
    run.cpu = await runCpu(nodes, world, cpuAtStart, (m) => progress.warn(m));
    progress.step('cleaning up');
    for (const r of await Promise.allSettled(nodes.map((n) => n.stop())))
      if (r.status === 'rejected') progress.warn(`clean-up: ${errorMessage(r.reason)}`);
    await world?.stop().catch((err) => progress.warn(`clean-up: ${errorMessage(err)}`));
  }
  return matrixResults(runId, startedAt, cpuAtStart, plan, run, await hostCpu());
}

/** The run's world; undefined when it did not start, and then every cell has failed with the reason. */
async function startWorld<W extends World>(
  deps: MatrixDeps<W>,
  runId: string,
  plan: MatrixPlan,
  run: MatrixRun,
): Promise<W | undefined> {
  try {
    return await deps.startWorld(runId, deps.progress, plan.lanes);
  } catch (err) {
    // No world, no cells: every one fails with the same reason, and the run still reports.
    const reason = `run set-up failed: ${errorMessage(err)}`;
    deps.progress.fail(reason);
    for (const b of plan.backends) {
      run.runtimes.push(unknownRuntime(b.name));
      for (const sc of plan.scenariosOf(b.name)) run.cells.push(failedCell(b.name, sc.name, reason));
    }
    return undefined;
  }
}

function endEveryCell(plan: MatrixPlan, run: MatrixRun, signal: AbortSignal): void {
  for (const b of plan.backends) {
    run.runtimes.push(unknownRuntime(b.name));
    for (const sc of plan.scenariosOf(b.name)) run.cells.push(notRun(b.name, sc.name, signal));
  }
}

/**
 * A cell the run's end left unstarted: skipped after Ctrl-C (the user chose to stop), failed after
 * the --timeout, which a complete run must not hit.
 */
function notRun(runtime: string, scenario: string, signal: AbortSignal | undefined): CellResult {
  const reason: unknown = signal?.reason;
  return reason instanceof RunTimedOut
    ? failedCell(runtime, scenario, `not run: ${reason.message}`)
    : skippedCell(runtime, scenario, 'run interrupted');
}

/** Every planned cell on the started nodes, as the scheduler places them, until the run is aborted. */
async function runCells<W extends World>(
  world: W,
  plan: MatrixPlan,
  nodesOf: Map<string, ReadyNode[]>,
  deps: MatrixDeps<W>,
  run: MatrixRun,
): Promise<void> {
  for (const name of nodesOf.keys()) run.tallies.set(name, new CriCallTally());
  const calls = new Map(
    [...nodesOf.values()].flat().map((n) => [n, new NodeCriCalls(n, run.tallies.get(n.backend.name)!)]),
  );
  const exclusive = new ExclusiveResources(deps.lockDir);
  const scheduler = new CellScheduler(
    [...plan.planned.values()].flat(),
    nodesOf,
    deps.cellsPerNode ?? DEFAULT_CELLS_PER_NODE,
    deps.maxParallelCells,
    { heavyStartSpacingMs: deps.heavyStartSpacingMs ?? HEAVY_START_SPACING_MS },
    (node) => node.ownDisk === true,
  );
  const byName = new Map(plan.scenarios.map((s) => [s.name, s]));
  await runScheduled(
    scheduler,
    ({ cell, node }) => {
      const scenario = byName.get(cell.scenario)!;
      const child = deps.progress.child(cell.runtime);
      const beside = scheduler.besides(cell);
      return exclusive
        .hold(
          cell.exclusive,
          () => {
            child.step(
              `${scenario.name} … on ${node.started.nodeName}${beside.length ? ` beside ${beside.join(', ')}` : ''}`,
            );
            return runCell(world, node, scenario, child, calls.get(node)!, beside, deps.signal, deps.cases);
          },
          (busy) => child.info(`${scenario.name} waits for ${busy.join(', ')}`),
        )
        .then(async (result) => {
          run.cells.push(result);
          reportCell(result, child);
          if (result.outcome === 'failed' && !deps.signal?.aborted)
            await retireIfGone(node, scheduler, cell.scenario, child, run);
        });
    },
    deps.signal,
  );
  for (const cell of scheduler.waiting()) run.cells.push(notRun(cell.runtime, cell.scenario, deps.signal));
}

/**
 * After a failed cell: a node that can run nothing more (its container ended) takes no more cells,
 * and the runtime's later cells go to its other nodes; with none left, they fail at once, naming
 * the node and the cell it died in, instead of each failing on the dead node.
 */
async function retireIfGone(
  node: ReadyNode,
  scheduler: CellScheduler<ReadyNode>,
  scenario: string,
  progress: Progress,
  run: MatrixRun,
): Promise<void> {
  const why = await node.gone();
  if (!why) return;
  const name = node.started.nodeName;
  const stranded = scheduler.retire(node);
  progress.fail(
    stranded.length > 0
      ? `node ${name} is gone after ${scenario} (${why}), and no other node of ${node.backend.name} is left: ${stranded.length} cell(s) not run`
      : `node ${name} is gone after ${scenario} (${why}); later cells run on ${node.backend.name}'s other nodes`,
  );
  for (const cell of stranded)
    run.cells.push(
      failedCell(
        cell.runtime,
        cell.scenario,
        `not run: node ${name}, the last of ${cell.runtime}, was gone after ${scenario}: ${why}`,
      ),
    );
}

function reportCell(result: CellResult, progress: Progress): void {
  const secs = (result.durationMs / 1000).toFixed(1);
  if (result.outcome === 'passed')
    progress.ok(`${result.scenario} passed (${secs}s, ${result.assertions.length} assertions)`);
  else if (result.outcome === 'skipped') progress.skip(`${result.scenario}: ${result.reason}`);
  else progress.fail(`${result.scenario} failed (${secs}s): ${result.reason}`);
}

/** The run's results: cells in registry × suite order, runtimes with their CRI call statistics. */
function matrixResults(
  runId: string,
  startedAt: Date,
  cpuAtStart: HostCpu | undefined,
  plan: MatrixPlan,
  run: MatrixRun,
  cpuAtEnd: HostCpu | undefined,
): RunResults {
  const finishedAt = new Date();
  const rank = (runtime: string, scenario: string) =>
    plan.backends.findIndex((b) => b.name === runtime) * 1_000 +
    plan.scenarios.findIndex((s) => s.name === scenario);
  const cells = withNodeSharing(
    [...run.cells].sort((a, b) => rank(a.runtime, a.scenario) - rank(b.runtime, b.scenario)),
  );
  return {
    schemaVersion: RESULTS_SCHEMA_VERSION,
    runId,
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    durationMs: finishedAt.getTime() - startedAt.getTime(),
    host: {
      node: process.version,
      platform: `${os.platform()}-${os.arch()}`,
      cpus: os.cpus().length,
      ...busyShare(cpuAtStart, cpuAtEnd),
    },
    ...(run.cpu ? { cpu: run.cpu } : {}),
    runtimes: withStartupTargets(
      run.runtimes.map((r) => {
        const tally = run.tallies.get(r.name);
        return withCriContract(tally?.size ? { ...r, criCalls: tally.stats() } : r);
      }),
      cells,
    ),
    scenarios: plan.scenarios.map((s) => s.name),
    cells,
  };
}

/** The host's busy share between two readings of /proc/stat. */
function busyShare(start: HostCpu | undefined, end: HostCpu | undefined): { cpuBusy?: number } {
  const total = start && end ? end.total - start.total : 0;
  return total > 0 ? { cpuBusy: Math.round(((end!.busy - start!.busy) / total) * 100) / 100 } : {};
}
