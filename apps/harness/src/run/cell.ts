// One cell: a scenario run on a node in a namespace of its own, and what its result keeps: the
// timeline, the agent's CRI calls, pod start-up figures and, for a failed cell, the logs around the
// failure and the runtime's own word when it hung.
import { createChecks } from '../framework/checks.js';
import {
  AssertionFailure,
  type Scenario,
  type ScenarioContext,
  ScenarioSkipped,
} from '../framework/scenario.js';
import type {
  AssertionResult,
  CaseResult,
  CellResult,
  LogExcerpt,
  StartupFloor,
  TimelineEntry,
} from '../results/model.js';
import { errorMessage } from '../support/errors.js';
import type { Progress } from '../support/progress.js';
import type { OpenCell, ReadyNode, World } from '../world/types.js';
import { CaseRun, type CaseSelection } from './cases.js';
import { startCellCpu } from './cpu.js';
import { mergeAgentCriCalls, type NodeCriCalls } from './cri-calls.js';
import { excerptAround } from './log-excerpt.js';
import { detectRuntimeHang } from './runtime-hang.js';
import { agentStartupRecords, cellStartupBreakdown } from './startup.js';
import { RunTimedOut } from './timeout.js';

/** Log lines searched for those around a failure (the agent keeps its last 2000). */
const LOG_LINES_SEARCHED = 2_000;
const DEFAULT_SCENARIO_TIMEOUT_MS = 180_000;

/** What a cell gathers while its scenario runs; times in the timeline are ms since `start`. */
class CellRecording {
  readonly start = Date.now();
  readonly timeline: TimelineEntry[] = [];
  /** The scenario's own log lines. */
  readonly logs: string[] = [];
  startupFloor: StartupFloor | undefined;
  readonly sink = (e: Omit<TimelineEntry, 't'>) => this.timeline.push({ t: Date.now() - this.start, ...e });
  /** Every assertion of the cell, its cases' included, in the order they were made. */
  readonly assertions: AssertionResult[] = [];
  readonly record = (a: AssertionResult) => {
    this.assertions.push(a);
    if (a.outcome === 'failed') this.sink({ kind: 'note', summary: `assertion failed: ${a.name}` });
  };
  readonly checks = createChecks(this.record);
}

interface ScenarioRun {
  outcome: 'passed' | 'failed' | 'skipped';
  reason?: string;
  /** The world's view of the cell, when it opened. */
  cell?: OpenCell;
  /** The scenario's cases, when it declares them. */
  cases?: CaseResult[];
}

export async function runCell(
  world: World,
  node: ReadyNode,
  scenario: Scenario,
  progress: Progress,
  calls: NodeCriCalls,
  beside: readonly string[],
  signal: AbortSignal | undefined,
  selection?: CaseSelection,
): Promise<CellResult> {
  const runtime = node.backend.name;
  const namespace = cellNamespace(scenario.name, runtime);
  const rec = new CellRecording();
  calls.begin(rec.start);
  const cpuUntilNow = await startCellCpu(node, (summary) => rec.sink({ kind: 'note', summary }));
  // Cells beside this one share the node's events and the agent's calls in its timeline.
  if (beside.length > 0)
    rec.sink({ kind: 'note', summary: `shares node ${node.started.nodeName} with ${beside.join(', ')}` });
  const ran = await runScenario(world, node, scenario, namespace, rec, progress, signal, selection);
  // Collecting results (agent calls, logs) is not part of the scenario's duration.
  const durationMs = Date.now() - rec.start;
  const cpu = await cpuUntilNow();
  const failuresAt = failureTimes(rec.timeline, ran.outcome === 'failed' ? durationMs : undefined);
  const criCalls = await mergeAgentCriCalls(calls, rec.start, rec.timeline, failuresAt);
  const podStartupMs = rec.timeline.flatMap((e) =>
    typeof e.detail?.startupMs === 'number' ? [e.detail.startupMs] : [],
  );
  const startupBreakdown =
    ran.cell && podStartupMs.length > 0
      ? await readStartupBreakdown(ran.cell, node, namespace, rec)
      : undefined;
  const excerpts = await failureExcerpts(
    node,
    failuresAt.map((t) => rec.start + t),
    rec.logs,
  );
  let reason = ran.reason;
  // A wait that timed out in a scenario may be a runtime that stopped answering: name it.
  const hang = ran.outcome === 'failed' ? await detectRuntimeHang(node.started) : undefined;
  if (hang) {
    reason = `${hang.reason} (the scenario said: ${reason})`;
    if (hang.stacks) excerpts.push({ source: 'runtime-stacks', lines: hang.stacks });
  }
  return {
    runtime,
    scenario: scenario.name,
    node: node.started.nodeName,
    outcome: ran.outcome,
    ...(reason ? { reason } : {}),
    startedAt: new Date(rec.start).toISOString(),
    durationMs,
    assertions: rec.assertions,
    timeline: rec.timeline,
    logs: ran.outcome === 'failed' ? excerpts : [],
    ...(podStartupMs.length > 0 ? { podStartupMs } : {}),
    ...(startupBreakdown ? { startupBreakdown } : {}),
    ...(rec.startupFloor ? { startupFloor: rec.startupFloor } : {}),
    ...(criCalls.length > 0 ? { criCalls } : {}),
    cpu,
    ...(ran.cases ? { cases: ran.cases } : {}),
  };
}

/** The cell's namespace: scenario and runtime, as a valid namespace name. */
const cellNamespace = (scenario: string, runtime: string): string =>
  `${scenario}-${runtime}`
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 63);

/** Opens the cell, runs the scenario to its end, its deadline or an interrupt, and cleans up. */
async function runScenario(
  world: World,
  node: ReadyNode,
  scenario: Scenario,
  namespace: string,
  rec: CellRecording,
  progress: Progress,
  signal: AbortSignal | undefined,
  selection: CaseSelection | undefined,
): Promise<ScenarioRun> {
  let cell: OpenCell | undefined;
  const cases = scenario.cases && new CaseRun(scenario, selection, rec.start, rec.sink, rec.record);
  const ended = (run: Omit<ScenarioRun, 'cases'>): ScenarioRun =>
    cases ? { ...run, cases: cases.results(run) } : run;
  // The cell's namespace and those the scenario adds (ScenarioContext.createNamespace): all go at its end.
  const namespaces = [namespace];
  try {
    const opened = await world.openCell(node, namespace, rec.sink);
    cell = opened;
    await world.createNamespace(namespace);
    const createNamespace = async (suffix: string) => {
      const name = `${namespace}-${suffix}`;
      await world.createNamespace(name);
      namespaces.push(name);
      opened.claim(name);
      return name;
    };
    const ctx = scenarioContext(cell, node.backend.name, namespace, createNamespace, rec, progress);
    await withDeadline(
      scenario.cases ? cases!.run(ctx) : scenario.run(ctx),
      scenario.timeoutMs ?? DEFAULT_SCENARIO_TIMEOUT_MS,
      signal,
    );
    return ended({ outcome: 'passed', cell });
  } catch (err) {
    if (err instanceof ScenarioSkipped) return ended({ outcome: 'skipped', reason: err.message, cell });
    const reason = err instanceof AssertionFailure ? err.message : errorMessage(err);
    return ended({ outcome: 'failed', reason, cell });
  } finally {
    await Promise.all(namespaces.map((ns) => world.deleteNamespace(ns).catch(() => {})));
    // One cell's removal of the sandbox image must not fail every later cell on the node.
    if (await node.started.restoreSandboxImage?.().catch(() => false))
      rec.sink({
        kind: 'note',
        summary: 'sandbox image was removed during the cell; re-loaded for the next cells',
      });
    cell?.close();
  }
}

function scenarioContext(
  cell: OpenCell,
  runtime: string,
  namespace: string,
  createNamespace: ScenarioContext['createNamespace'],
  rec: CellRecording,
  progress: Progress,
): ScenarioContext {
  return {
    ...cell.context,
    runtime,
    namespace,
    createNamespace,
    check: rec.checks,
    note: (summary, detail) => rec.sink({ kind: 'note', summary, ...(detail ? { detail } : {}) }),
    skip: (reason) => {
      throw new ScenarioSkipped(reason);
    },
    recordStartupFloor: (floor) => {
      rec.startupFloor = floor;
    },
    log: (m) => {
      rec.logs.push(m);
      progress.info(m);
    },
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  };
}

/** `run`, failed after `timeoutMs` or at once when `signal` aborts (Ctrl-C, the run's --timeout). */
async function withDeadline(
  run: Promise<void>,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      run,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`scenario timed out after ${timeoutMs} ms`)), timeoutMs);
      }),
      // Ctrl-C or the run's timeout ends the cell at once; clean-up then removes what it left running.
      new Promise((_, reject) => {
        const interrupted = () =>
          reject(signal?.reason instanceof RunTimedOut ? signal.reason : new Error('run interrupted'));
        if (signal?.aborted) interrupted();
        signal?.addEventListener('abort', interrupted, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** When things went wrong, in ms since the cell started: failed assertions, and a failed cell's end. */
function failureTimes(timeline: readonly TimelineEntry[], failedAt: number | undefined): number[] {
  const at = timeline
    .filter((e) => e.kind === 'note' && e.summary.startsWith('assertion failed'))
    .map((e) => e.t);
  if (failedAt !== undefined) at.push(failedAt);
  return at;
}

/** The agent's start-up steps for the cell's pods, or undefined (noted) when they cannot be read. */
function readStartupBreakdown(
  cell: OpenCell,
  node: ReadyNode,
  namespace: string,
  rec: CellRecording,
): Promise<CellResult['startupBreakdown']> {
  return agentStartupRecords(cell.context.kubeConfig, node.started.nodeName, namespace).then(
    (records) => cellStartupBreakdown(records, rec.timeline, rec.start),
    (err) => {
      rec.sink({ kind: 'note', summary: `agent start-up steps not read: ${errorMessage(err)}` });
      return undefined;
    },
  );
}

/** The agent's and the runtime's log lines around the failures, and the scenario's own lines. */
async function failureExcerpts(node: ReadyNode, failuresAt: number[], logs: string[]): Promise<LogExcerpt[]> {
  const excerpts: LogExcerpt[] = [
    { source: 'agent', lines: excerptAround(node.agentLogs(LOG_LINES_SEARCHED), failuresAt, 80) },
  ];
  const runtimeLines = excerptAround(
    await node.started.runtimeLogs(LOG_LINES_SEARCHED).catch(() => []),
    failuresAt,
    60,
  );
  if (runtimeLines.length) excerpts.push({ source: 'runtime', lines: runtimeLines });
  if (logs.length) excerpts.push({ source: 'harness', lines: logs });
  return excerpts;
}

export const skippedCell = (runtime: string, scenario: string, reason: string): CellResult => ({
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

export const failedCell = (runtime: string, scenario: string, reason: string): CellResult => ({
  ...skippedCell(runtime, scenario, reason),
  outcome: 'failed',
});
