// Runs the matrix: every selected scenario on every selected backend. Backends start in parallel,
// scenarios run one at a time per node, every cell is recorded, and everything the run created is
// removed at the end, also on failure and on Ctrl-C.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { BackendUnavailableError, type RuntimeBackend } from '../backends/types.js';
import { createChecks } from '../framework/checks.js';
import { AssertionFailure, type Scenario, type ScenarioContext } from '../framework/scenario.js';
import type { AgentCriCall } from '../node/cri-call-log.js';
import type { CellResult, LogExcerpt, RunResults, RuntimeInfo, TimelineEntry } from '../results/model.js';
import { RESULTS_SCHEMA_VERSION } from '../results/model.js';
import type { Progress } from '../support/progress.js';
import type { ReadyNode, World } from '../world/types.js';
import { agentCallEntry, CriCallTally, selectAgentCalls } from './cri-calls.js';
import { ExclusiveResources } from './exclusive.js';
import { excerptAround } from './log-excerpt.js';

export interface MatrixDeps<W extends World = World> {
  /** Labels everything the run creates; defaults to a fresh id. */
  runId?: string;
  backends: RuntimeBackend[];
  scenarios: Scenario[];
  startWorld(runId: string, progress: Progress): Promise<W>;
  startNode(world: W, backend: RuntimeBackend, progress: Progress): Promise<ReadyNode>;
  progress: Progress;
  /** Aborted on SIGINT: stops scheduling new cells; clean-up still runs. */
  signal?: AbortSignal;
  /** Only these cells (`runtime/scenario`, a shard); absent: every runtime × scenario. */
  cells?: ReadonlySet<string>;
  /** Where held host resources are locked across processes; default `defaultLockDir()`. */
  lockDir?: string;
}

/** Log lines searched for those around a failure (the agent keeps its last 2000). */
const LOG_LINES_SEARCHED = 2_000;

export const newRunId = (): string => `kh-${Date.now().toString(36)}-${randomBytes(2).toString('hex')}`;

export async function runMatrix<W extends World>(deps: MatrixDeps<W>): Promise<RunResults> {
  const { scenarios, progress } = deps;
  const inRun = (runtime: string, scenario: string) => deps.cells?.has(`${runtime}/${scenario}`) ?? true;
  // A runtime without a cell in this run is not started.
  const backends = deps.backends.filter((b) => scenarios.some((s) => inRun(b.name, s.name)));
  const scenariosOf = (runtime: string) => scenarios.filter((s) => inRun(runtime, s.name));
  const runId = deps.runId ?? newRunId();
  const startedAt = new Date();
  const cells: CellResult[] = [];
  const runtimes: RuntimeInfo[] = [];
  let world: W | undefined;
  const nodes: ReadyNode[] = [];
  /** Every CRI call per runtime over the run, for the report's latency chart. */
  const tallies = new Map<string, CriCallTally>();
  try {
    try {
      world = await deps.startWorld(runId, progress);
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
    const started = await Promise.allSettled(
      backends.map((b) => deps.startNode(w, b, progress.child(b.name))),
    );
    for (const [i, s] of started.entries()) {
      const backend = backends[i]!;
      if (s.status === 'fulfilled') {
        nodes.push(s.value);
        runtimes.push({
          name: backend.name,
          runtimeName: s.value.started.runtimeName,
          runtimeVersion: s.value.started.runtimeVersion,
          criEndpoint: s.value.started.hostCriEndpoint,
          startupMs: s.value.startupMs,
        });
        continue;
      }
      runtimes.push({ name: backend.name, runtimeName: backend.name, runtimeVersion: 'unknown' });
      // A runtime that cannot run here at all is skipped with its own words, never passed.
      if (s.reason instanceof BackendUnavailableError) {
        const reason = `backend ${backend.name} cannot run here: ${s.reason.message}`;
        progress.child(backend.name).skip(reason);
        for (const sc of scenariosOf(backend.name)) cells.push(skippedCell(backend.name, sc.name, reason));
        continue;
      }
      const reason = `node did not start: ${errorMessage(s.reason)}`;
      progress.child(backend.name).fail(reason);
      for (const sc of scenariosOf(backend.name)) cells.push(failedCell(backend.name, sc.name, reason));
    }
    const exclusive = new ExclusiveResources(deps.lockDir);
    await Promise.all(
      nodes.map((n) => {
        const tally = new CriCallTally();
        tallies.set(n.backend.name, tally);
        return runNodeCells(
          w,
          n,
          scenariosOf(n.backend.name),
          progress.child(n.backend.name),
          cells,
          tally,
          exclusive,
          deps.signal,
        );
      }),
    );
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
      host: { node: process.version, platform: `${os.platform()}-${os.arch()}`, cpus: os.cpus().length },
      runtimes: runtimes.map((r) => {
        const tally = tallies.get(r.name);
        return tally?.size ? { ...r, criCalls: tally.stats() } : r;
      }),
      scenarios: scenarios.map((s) => s.name),
      cells,
    };
  }
}

async function runNodeCells(
  world: World,
  node: ReadyNode,
  scenarios: Scenario[],
  progress: Progress,
  cells: CellResult[],
  tally: CriCallTally,
  exclusive: ExclusiveResources,
  signal: AbortSignal | undefined,
): Promise<void> {
  const runtime = node.backend.name;
  for (const scenario of scenarios) {
    const missing = (scenario.needs ?? []).filter((n) => !node.backend.capabilities.has(n));
    if (signal?.aborted) {
      cells.push(skippedCell(runtime, scenario.name, 'run interrupted'));
      continue;
    }
    if (missing.length > 0) {
      const reason = `backend ${runtime} lacks ${missing.join(', ')}`;
      progress.skip(`${scenario.name}: ${reason}`);
      cells.push(skippedCell(runtime, scenario.name, reason));
      continue;
    }
    const cell = await exclusive.hold(
      scenario.exclusive ?? [],
      () => {
        progress.step(`${scenario.name} …`);
        return runCell(world, node, scenario, progress, tally, signal);
      },
      (busy) => progress.info(`${scenario.name} waits for ${busy.join(', ')}`),
    );
    cells.push(cell);
    const secs = (cell.durationMs / 1000).toFixed(1);
    if (cell.outcome === 'passed')
      progress.ok(`${scenario.name} passed (${secs}s, ${cell.assertions.length} assertions)`);
    else progress.fail(`${scenario.name} failed (${secs}s): ${cell.reason}`);
  }
}

async function runCell(
  world: World,
  node: ReadyNode,
  scenario: Scenario,
  progress: Progress,
  tally: CriCallTally,
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
  world.routeTimeline(namespace, sink);
  world.routeTimeline(node.started.nodeName, sink);
  let outcome: CellResult['outcome'] = 'passed';
  let reason: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    await world.createNamespace(namespace);
    const base = await world.contextFor(node, namespace);
    const ctx: ScenarioContext = {
      ...base,
      runtime,
      namespace,
      check: checks,
      note: (summary, detail) => sink({ kind: 'note', summary, ...(detail ? { detail } : {}) }),
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
    world.routeTimeline(namespace, undefined);
    world.routeTimeline(node.started.nodeName, undefined);
  }
  // Collecting results (agent calls, logs) is not part of the scenario's duration.
  const durationMs = Date.now() - start;
  // When things went wrong, in ms since the cell started: failed assertions, and a failed cell's end.
  const failuresAt = timeline
    .filter((e) => e.kind === 'note' && e.summary.startsWith('assertion failed'))
    .map((e) => e.t);
  if (outcome === 'failed') failuresAt.push(durationMs);
  const criCalls = await mergeAgentCriCalls(node, start, timeline, failuresAt, tally);
  const podStartupMs = timeline.flatMap((e) =>
    typeof e.detail?.startupMs === 'number' ? [e.detail.startupMs] : [],
  );
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
  return {
    runtime,
    scenario: scenario.name,
    outcome,
    ...(reason ? { reason } : {}),
    startedAt: new Date(start).toISOString(),
    durationMs,
    assertions: checks.results(),
    timeline,
    logs: outcome === 'failed' ? excerpts : [],
    ...(podStartupMs.length > 0 ? { podStartupMs } : {}),
    ...(criCalls.length > 0 ? { criCalls } : {}),
  };
}

/**
 * Reads the agent's CRI calls since the last cell, puts a bounded selection of those made during
 * this cell into its timeline (near failures first), and counts every call, the harness's own
 * too, in the cell's and the runtime's statistics. Returns the cell's statistics.
 */
async function mergeAgentCriCalls(
  node: ReadyNode,
  start: number,
  timeline: TimelineEntry[],
  failuresAt: number[],
  tally: CriCallTally,
): Promise<CellResult['criCalls'] & {}> {
  const cellTally = new CriCallTally();
  for (const e of timeline) {
    if (e.kind !== 'cri-call' || !e.method || e.durationMs === undefined || e.source === 'agent') continue;
    const call = { method: e.method, durationMs: e.durationMs, ...(e.code ? { code: e.code } : {}) };
    cellTally.add('harness', call);
    tally.add('harness', call);
  }
  let calls: AgentCriCall[] = [];
  try {
    calls = await node.agentCriCalls();
  } catch (err) {
    timeline.push({
      t: Date.now() - start,
      kind: 'note',
      summary: `agent CRI calls not read: ${errorMessage(err)}`,
    });
  }
  // Calls before the cell (agent start-up, the previous cell's clean-up) count for the runtime only.
  const inCell = calls.filter((c) => c.at >= start);
  for (const c of calls) tally.add('agent', c);
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
