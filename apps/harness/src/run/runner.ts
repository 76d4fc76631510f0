// Runs the matrix: every selected scenario on every selected backend. Each runtime gets one or
// more nodes (lanes), all started in parallel; the scheduler (schedule.ts) places cells on them by
// what each may share. Every cell is recorded, and everything the run created is removed at the
// end, also on failure and on Ctrl-C.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { missingNeeds } from '../backends/started-node.js';
import { BackendUnavailableError, type RuntimeBackend } from '../backends/types.js';
import { createChecks } from '../framework/checks.js';
import { AssertionFailure, type Scenario, type ScenarioContext } from '../framework/scenario.js';
import type { AgentCriCall } from '../node/cri-call-log.js';
import { withCriContract } from '../results/contract.js';
import type {
  CellResult,
  LogExcerpt,
  RunResults,
  RuntimeInfo,
  StartupFloor,
  TimelineEntry,
} from '../results/model.js';
import { RESULTS_SCHEMA_VERSION } from '../results/model.js';
import { withStartupTargets } from '../results/startup.js';
import type { Progress } from '../support/progress.js';
import type { OpenCell, ReadyNode, World } from '../world/types.js';
import { agentCallEntry, CriCallTally, selectAgentCalls } from './cri-calls.js';
import { ExclusiveResources } from './exclusive.js';
import { excerptAround } from './log-excerpt.js';
import { detectRuntimeHang } from './runtime-hang.js';
import { CellScheduler, lanesFor, type PlannedCell } from './schedule.js';
import { UNKNOWN_SCENARIO_MS } from './shard.js';
import { agentStartupRecords, cellStartupBreakdown } from './startup.js';

export interface MatrixDeps<W extends World = World> {
  /** Labels everything the run creates; defaults to a fresh id. */
  runId?: string;
  backends: RuntimeBackend[];
  scenarios: Scenario[];
  /** `nodes`: how many nodes each runtime will start, for their API credentials. */
  startWorld(runId: string, progress: Progress, nodes: ReadonlyMap<string, number>): Promise<W>;
  /** Starts node `index` (0 first) of a runtime. */
  startNode(world: W, backend: RuntimeBackend, progress: Progress, index: number): Promise<ReadyNode>;
  progress: Progress;
  /** Aborted on SIGINT: stops scheduling new cells; clean-up still runs. */
  signal?: AbortSignal;
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

/** Log lines searched for those around a failure (the agent keeps its last 2000). */
const LOG_LINES_SEARCHED = 2_000;
const DEFAULT_CELLS_PER_NODE = 3;
/**
 * A probe suite starts 22 pods at once; on 2 cores the host then stays about 99 % busy for 45 s
 * (measured). Two such bursts at once starved probes past their 1 s timeouts.
 */
export const HEAVY_START_SPACING_MS = 45_000;

export const newRunId = (): string => `kh-${Date.now().toString(36)}-${randomBytes(2).toString('hex')}`;

/** Resolves at `at` (epoch ms), or as soon as one of `signals` aborts. */
const sleepUntil = (at: number, ...signals: (AbortSignal | undefined)[]): Promise<void> =>
  delay(Math.max(0, at - Date.now()), undefined, {
    signal: AbortSignal.any(signals.filter((s) => s !== undefined)),
  }).catch(() => {});

export async function runMatrix<W extends World>(deps: MatrixDeps<W>): Promise<RunResults> {
  const { scenarios, progress } = deps;
  const inRun = (runtime: string, scenario: string) => deps.cells?.has(`${runtime}/${scenario}`) ?? true;
  // A runtime without a cell in this run is not started.
  const backends = deps.backends.filter((b) => scenarios.some((s) => inRun(b.name, s.name)));
  const scenariosOf = (runtime: string) => scenarios.filter((s) => inRun(runtime, s.name));
  const missingFor = (b: RuntimeBackend, s: Scenario, node?: ReadyNode) => missingNeeds(b, s, node?.started);
  const planned = new Map(
    backends.map((b) => [
      b.name,
      scenariosOf(b.name)
        .filter((s) => missingFor(b, s).length === 0)
        .map(
          (s): PlannedCell => ({
            runtime: b.name,
            scenario: s.name,
            isolation: s.isolation ?? 'node',
            exclusive: s.exclusive ?? [],
            estimateMs: deps.estimates?.get(`${b.name}/${s.name}`) ?? s.estimateMs ?? UNKNOWN_SCENARIO_MS,
            heavy: s.load === 'heavy',
          }),
        ),
    ]),
  );
  const lanes = new Map(
    backends.map((b) => [
      b.name,
      Math.min(
        b.maxNodes ?? Number.POSITIVE_INFINITY,
        lanesFor(planned.get(b.name)!, deps.nodesPerRuntime ?? 1),
      ),
    ]),
  );
  const runId = deps.runId ?? newRunId();
  const startedAt = new Date();
  const cpuAtStart = cpuTimes();
  const cells: CellResult[] = [];
  const runtimes: RuntimeInfo[] = [];
  let world: W | undefined;
  const nodes: ReadyNode[] = [];
  /** Every CRI call per runtime over the run, for the report's latency chart. */
  const tallies = new Map<string, CriCallTally>();
  try {
    try {
      world = await deps.startWorld(runId, progress, lanes);
    } catch (err) {
      // No world, no cells: every one fails with the same reason, and the run still reports.
      const reason = `run set-up failed: ${errorMessage(err)}`;
      progress.fail(reason);
      for (const b of backends) {
        runtimes.push({ name: b.name, runtimeName: b.name, runtimeVersion: 'unknown' });
        for (const sc of scenariosOf(b.name)) cells.push(failedCell(b.name, sc.name, reason));
      }
    }
    const w = world;
    if (!w) return finish();
    if (deps.signal?.aborted) {
      for (const b of backends) {
        runtimes.push({ name: b.name, runtimeName: b.name, runtimeVersion: 'unknown' });
        for (const sc of scenariosOf(b.name)) cells.push(skippedCell(b.name, sc.name, 'run interrupted'));
      }
      return finish();
    }
    // Nodes come up in parallel: runtime start-up dominates and is mostly waiting.
    const started = await Promise.all(
      backends.map((b) => {
        const count = lanes.get(b.name)!;
        const child = progress.child(b.name);
        return Promise.allSettled(Array.from({ length: count }, (_, i) => deps.startNode(w, b, child, i)));
      }),
    );
    const nodesOf = new Map<string, ReadyNode[]>();
    for (const [i, settled] of started.entries()) {
      const backend = backends[i]!;
      const child = progress.child(backend.name);
      const ready = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')?.reason;
      nodes.push(...ready);
      const first = ready[0];
      if (first) {
        if (failure)
          child.warn(
            `${settled.length - ready.length} of ${settled.length} nodes did not start: ${errorMessage(failure)}`,
          );
        nodesOf.set(backend.name, ready);
        runtimes.push({
          name: backend.name,
          runtimeName: first.started.runtimeName,
          runtimeVersion: first.started.runtimeVersion,
          ...(first.started.nodeImage ? { nodeImage: first.started.nodeImage } : {}),
          ...(first.started.warnings.length ? { warnings: first.started.warnings } : {}),
          criEndpoint: first.started.hostCriEndpoint,
          startupMs: Math.max(...ready.map((n) => n.startupMs)),
          ...(ready.length > 1 ? { nodes: ready.length } : {}),
        });
        for (const sc of scenariosOf(backend.name)) {
          const missing = missingFor(backend, sc, first);
          if (missing.length === 0) continue;
          const reason = `backend ${backend.name} lacks ${missing.join(', ')}`;
          child.skip(`${sc.name}: ${reason}`);
          cells.push(skippedCell(backend.name, sc.name, reason));
          planned.set(
            backend.name,
            planned.get(backend.name)!.filter((c) => c.scenario !== sc.name),
          );
        }
        continue;
      }
      planned.delete(backend.name);
      runtimes.push({ name: backend.name, runtimeName: backend.name, runtimeVersion: 'unknown' });
      // A runtime that cannot run here at all is skipped with its own words, never passed.
      if (failure instanceof BackendUnavailableError) {
        const reason = `backend ${backend.name} cannot run here: ${failure.message}`;
        child.skip(reason);
        for (const sc of scenariosOf(backend.name)) cells.push(skippedCell(backend.name, sc.name, reason));
        continue;
      }
      const reason = `node did not start: ${errorMessage(failure)}`;
      child.fail(reason);
      for (const sc of scenariosOf(backend.name)) cells.push(failedCell(backend.name, sc.name, reason));
    }
    for (const name of nodesOf.keys()) tallies.set(name, new CriCallTally());
    const calls = new Map(nodes.map((n) => [n, new NodeCriCalls(n, tallies.get(n.backend.name)!)]));
    const exclusive = new ExclusiveResources(deps.lockDir);
    const scheduler = new CellScheduler(
      [...planned.values()].flat(),
      nodesOf,
      deps.cellsPerNode ?? DEFAULT_CELLS_PER_NODE,
      deps.maxParallelCells,
      { heavyStartSpacingMs: deps.heavyStartSpacingMs ?? HEAVY_START_SPACING_MS },
    );
    const byName = new Map(scenarios.map((s) => [s.name, s]));
    const inFlight = new Set<Promise<void>>();
    while (!scheduler.done && !deps.signal?.aborted) {
      for (const { cell, node } of scheduler.take()) {
        const scenario = byName.get(cell.scenario)!;
        const child = progress.child(cell.runtime);
        const beside = scheduler.besides(cell);
        const run = exclusive
          .hold(
            cell.exclusive,
            () => {
              child.step(
                `${scenario.name} … on ${node.started.nodeName}${beside.length ? ` beside ${beside.join(', ')}` : ''}`,
              );
              return runCell(w, node, scenario, child, calls.get(node)!, beside, deps.signal);
            },
            (busy) => child.info(`${scenario.name} waits for ${busy.join(', ')}`),
          )
          .then((result) => {
            cells.push(result);
            const secs = (result.durationMs / 1000).toFixed(1);
            if (result.outcome === 'passed')
              child.ok(`${scenario.name} passed (${secs}s, ${result.assertions.length} assertions)`);
            else child.fail(`${scenario.name} failed (${secs}s): ${result.reason}`);
          })
          .finally(() => {
            scheduler.finish(cell);
            inFlight.delete(run);
          });
        inFlight.add(run);
      }
      const wakeAt = scheduler.wakeAt();
      if (inFlight.size === 0 && wakeAt === undefined) break;
      const waits = [...inFlight].map((p) => p.catch(() => {}));
      // The wake-up timer is dropped once anything ends the wait: it must not hold the process.
      const woken = new AbortController();
      if (wakeAt !== undefined) waits.push(sleepUntil(wakeAt, woken.signal, deps.signal));
      await Promise.race(waits);
      woken.abort();
    }
    await Promise.allSettled([...inFlight]);
    for (const cell of scheduler.waiting())
      cells.push(skippedCell(cell.runtime, cell.scenario, 'run interrupted'));
  } finally {
    progress.step('cleaning up');
    for (const r of await Promise.allSettled(nodes.map((n) => n.stop())))
      if (r.status === 'rejected') progress.warn(`clean-up: ${errorMessage(r.reason)}`);
    await world?.stop().catch((err) => progress.warn(`clean-up: ${errorMessage(err)}`));
  }
  return finish();

  function finish(): RunResults {
    const finishedAt = new Date();
    const rank = (c: CellResult) =>
      backends.findIndex((b) => b.name === c.runtime) * 1_000 +
      scenarios.findIndex((s) => s.name === c.scenario);
    cells.sort((a, b) => rank(a) - rank(b));
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
        ...busySince(cpuAtStart),
      },
      runtimes: withStartupTargets(
        runtimes.map((r) => {
          const tally = tallies.get(r.name);
          return withCriContract(tally?.size ? { ...r, criCalls: tally.stats() } : r);
        }),
        cells,
      ),
      scenarios: scenarios.map((s) => s.name),
      cells,
    };
  }
}

/** The host's CPU time so far, busy and in all (ms, summed over CPUs). */
function cpuTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const { times } of os.cpus()) {
    const all = times.user + times.nice + times.sys + times.irq + times.idle;
    total += all;
    busy += all - times.idle;
  }
  return { busy, total };
}

function busySince(start: { busy: number; total: number }): { cpuBusy?: number } {
  const now = cpuTimes();
  const total = now.total - start.total;
  return total > 0 ? { cpuBusy: Math.round(((now.busy - start.busy) / total) * 100) / 100 } : {};
}

/**
 * The agent's CRI call log of one node, read for every cell that ends on it. Cells may share the
 * node, so what was read stays until no open cell can want it, and each call is counted once in
 * the runtime's tally.
 */
class NodeCriCalls {
  private calls: AgentCriCall[] = [];
  private readonly open: number[] = [];
  private reading: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly node: ReadyNode,
    readonly tally: CriCallTally,
  ) {}

  begin(start: number): void {
    this.open.push(start);
  }

  /** The calls since `start`, up to what the log holds now; ends the cell that began at `start`. */
  async end(start: number): Promise<AgentCriCall[]> {
    const read = this.reading.then(async () => {
      const fresh = await this.node.agentCriCalls();
      for (const c of fresh) this.tally.add('agent', c);
      this.calls.push(...fresh);
    });
    this.reading = read.catch(() => {});
    try {
      await read;
      return this.calls.filter((c) => c.at >= start);
    } finally {
      this.open.splice(this.open.indexOf(start), 1);
      const keepFrom = Math.min(...this.open);
      this.calls = this.calls.filter((c) => c.at >= keepFrom);
    }
  }
}

async function runCell(
  world: World,
  node: ReadyNode,
  scenario: Scenario,
  progress: Progress,
  calls: NodeCriCalls,
  beside: readonly string[],
  signal: AbortSignal | undefined,
): Promise<CellResult> {
  const runtime = node.backend.name;
  const namespace = `${scenario.name}-${runtime}`
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 63);
  const start = Date.now();
  const timeline: TimelineEntry[] = [];
  const sink = (e: Omit<TimelineEntry, 't'>) => timeline.push({ t: Date.now() - start, ...e });
  const logs: string[] = [];
  const checks = createChecks(
    (a) => a.outcome === 'failed' && sink({ kind: 'note', summary: `assertion failed: ${a.name}` }),
  );
  calls.begin(start);
  // Cells beside this one share the node's events and the agent's calls in its timeline.
  if (beside.length > 0)
    sink({ kind: 'note', summary: `shares node ${node.started.nodeName} with ${beside.join(', ')}` });
  let outcome: CellResult['outcome'] = 'passed';
  let startupFloor: StartupFloor | undefined;
  let reason: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let cell: OpenCell | undefined;
  try {
    cell = await world.openCell(node, namespace, sink);
    await world.createNamespace(namespace);
    const ctx: ScenarioContext = {
      ...cell.context,
      runtime,
      namespace,
      check: checks,
      note: (summary, detail) => sink({ kind: 'note', summary, ...(detail ? { detail } : {}) }),
      recordStartupFloor: (floor) => {
        startupFloor = floor;
      },
      log: (m) => {
        logs.push(m);
        progress.info(m);
      },
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    };
    const timeoutMs = scenario.timeoutMs ?? 180_000;
    await Promise.race([
      scenario.run(ctx),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`scenario timed out after ${timeoutMs} ms`)), timeoutMs);
      }),
      // Ctrl-C ends the cell at once; clean-up then removes what the scenario left running.
      new Promise((_, reject) => {
        const interrupted = () => reject(new Error('run interrupted'));
        if (signal?.aborted) interrupted();
        signal?.addEventListener('abort', interrupted, { once: true });
      }),
    ]);
  } catch (err) {
    outcome = 'failed';
    reason = err instanceof AssertionFailure ? err.message : errorMessage(err);
  } finally {
    clearTimeout(timer);
    await world.deleteNamespace(namespace).catch(() => {});
    // One cell's removal of the sandbox image must not fail every later cell on the node.
    if (await node.started.restoreSandboxImage?.().catch(() => false))
      sink({
        kind: 'note',
        summary: 'sandbox image was removed during the cell; re-loaded for the next cells',
      });
    cell?.close();
  }
  // Collecting results (agent calls, logs) is not part of the scenario's duration.
  const durationMs = Date.now() - start;
  // When things went wrong, in ms since the cell started: failed assertions, and a failed cell's end.
  const failuresAt = timeline
    .filter((e) => e.kind === 'note' && e.summary.startsWith('assertion failed'))
    .map((e) => e.t);
  if (outcome === 'failed') failuresAt.push(durationMs);
  const criCalls = await mergeAgentCriCalls(calls, start, timeline, failuresAt);
  const podStartupMs = timeline.flatMap((e) =>
    typeof e.detail?.startupMs === 'number' ? [e.detail.startupMs] : [],
  );
  const startupBreakdown =
    cell && podStartupMs.length > 0
      ? await agentStartupRecords(cell.context.kubeConfig, node.started.nodeName, namespace).then(
          (records) => cellStartupBreakdown(records, timeline, start),
          (err) => {
            timeline.push({
              t: Date.now() - start,
              kind: 'note',
              summary: `agent start-up steps not read: ${errorMessage(err)}`,
            });
            return undefined;
          },
        )
      : undefined;
  const failureTimes = failuresAt.map((t) => start + t);
  const excerpts: LogExcerpt[] = [
    { source: 'agent', lines: excerptAround(node.agentLogs(LOG_LINES_SEARCHED), failureTimes, 80) },
  ];
  const runtimeLines = excerptAround(
    await node.started.runtimeLogs(LOG_LINES_SEARCHED).catch(() => []),
    failureTimes,
    60,
  );
  if (runtimeLines.length) excerpts.push({ source: 'runtime', lines: runtimeLines });
  if (logs.length) excerpts.push({ source: 'harness', lines: logs });
  // A wait that timed out in a scenario may be a runtime that stopped answering: name it.
  const hang = outcome === 'failed' ? await detectRuntimeHang(node.started) : undefined;
  if (hang) {
    reason = `${hang.reason} (the scenario said: ${reason})`;
    if (hang.stacks) excerpts.push({ source: 'runtime-stacks', lines: hang.stacks });
  }
  return {
    runtime,
    scenario: scenario.name,
    node: node.started.nodeName,
    outcome,
    ...(reason ? { reason } : {}),
    startedAt: new Date(start).toISOString(),
    durationMs,
    assertions: checks.results(),
    timeline,
    logs: outcome === 'failed' ? excerpts : [],
    ...(podStartupMs.length > 0 ? { podStartupMs } : {}),
    ...(startupBreakdown ? { startupBreakdown } : {}),
    ...(startupFloor ? { startupFloor } : {}),
    ...(criCalls.length > 0 ? { criCalls } : {}),
  };
}

/**
 * Puts a bounded selection of the agent's CRI calls during this cell into its timeline (near
 * failures first), and counts every call, the harness's own too, in the cell's statistics and the
 * harness's in the runtime's (the agent's are counted there as they are read). Returns the cell's
 * statistics.
 */
async function mergeAgentCriCalls(
  calls: NodeCriCalls,
  start: number,
  timeline: TimelineEntry[],
  failuresAt: number[],
): Promise<CellResult['criCalls'] & {}> {
  const cellTally = new CriCallTally();
  for (const e of timeline) {
    if (e.kind !== 'cri-call' || !e.method || e.durationMs === undefined || e.source === 'agent') continue;
    const call = { method: e.method, durationMs: e.durationMs, ...(e.code ? { code: e.code } : {}) };
    cellTally.add('harness', call);
    calls.tally.add('harness', call);
  }
  let inCell: AgentCriCall[] = [];
  try {
    inCell = await calls.end(start);
  } catch (err) {
    timeline.push({
      t: Date.now() - start,
      kind: 'note',
      summary: `agent CRI calls not read: ${errorMessage(err)}`,
    });
  }
  for (const c of inCell) cellTally.add('agent', c);
  const kept = selectAgentCalls(inCell, start, failuresAt).map((c) => agentCallEntry(c, start));
  if (kept.length > 0) {
    timeline.push(...kept);
    timeline.sort((a, b) => a.t - b.t);
  }
  return cellTally.stats();
}

const skippedCell = (runtime: string, scenario: string, reason: string): CellResult => ({
  runtime,
  scenario,
  outcome: 'skipped',
  reason,
  startedAt: new Date().toISOString(),
  durationMs: 0,
  assertions: [],
  timeline: [],
  logs: [],
});

const failedCell = (runtime: string, scenario: string, reason: string): CellResult => ({
  ...skippedCell(runtime, scenario, reason),
  outcome: 'failed',
});

export const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));
