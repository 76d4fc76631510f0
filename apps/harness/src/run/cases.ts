// A scenario's declared cases (issue 34): which of them a run selects (`--case`, `--conformance`,
// as Ginkgo's --focus and label filter select specs), and running them in one cell, each with its
// own result, assertions and pods.
import type { CoreV1Api } from '@kubernetes/client-node';
import { createChecks } from '../framework/checks.js';
import {
  AssertionFailure,
  type CasesScenario,
  type Scenario,
  type ScenarioCase,
  type ScenarioContext,
  ScenarioSkipped,
  type TimelineSink,
} from '../framework/scenario.js';
import { caseTitle, outcomeOfCases } from '../results/cases.js';
import type { AssertionResult, CaseResult } from '../results/model.js';
import { errorMessage } from '../support/errors.js';

/** The label of the set a runtime author runs first (`--conformance`). */
export const NODE_CONFORMANCE = 'NodeConformance';

export interface CaseSelection {
  /** `--case`: cases whose title (name and bracketed labels) it matches. */
  pattern?: RegExp;
  /** `--conformance`: only cases labelled NodeConformance. */
  conformance?: boolean;
}

export const selectsAll = (sel: CaseSelection | undefined): boolean => !sel?.pattern && !sel?.conformance;

export function caseSelected(
  c: Pick<ScenarioCase, 'name' | 'tags'>,
  sel: CaseSelection | undefined,
): boolean {
  if (sel?.conformance && !c.tags?.includes(NODE_CONFORMANCE)) return false;
  return sel?.pattern ? sel.pattern.test(caseTitle(c)) : true;
}

const describeSelection = (sel: CaseSelection): string =>
  [sel.pattern && `--case ${sel.pattern.source}`, sel.conformance && '--conformance']
    .filter(Boolean)
    .join(' ');

/**
 * The scenarios a case selection keeps, in order: those with a selected case. A scenario that is
 * one closure has no cases to select, so it is left out. Selecting nothing at all is an error.
 */
export function scenariosWithSelectedCases(
  scenarios: readonly Scenario[],
  sel: CaseSelection | undefined,
): Scenario[] {
  if (!sel || selectsAll(sel)) return [...scenarios];
  const kept = scenarios.filter((s) => s.cases?.some((c) => caseSelected(c, sel)));
  if (kept.length === 0)
    throw new Error(
      `no case matches ${describeSelection(sel)} in scenarios ${scenarios.map((s) => s.name).join(', ')}`,
    );
  return kept;
}

/** Checks a scenario's cases once, before anything runs: names are what results and quarantine key on. */
export function checkCases(s: CasesScenario): void {
  const seen = new Set<string>();
  for (const c of s.cases) {
    if (seen.has(c.name)) throw new Error(`scenario ${s.name} declares the case "${c.name}" twice`);
    seen.add(c.name);
  }
}

/** Where a cell's assertions go: the cell keeps them all. */
export type AssertionSink = (a: AssertionResult) => void;

/**
 * One cell's run of a CasesScenario: setup, the selected cases side by side (each pod-building
 * case is independent, as the closures ran them with allChecks), teardown. `results` is read once
 * the cell has ended, however it ended (a deadline or an interrupt leaves cases unfinished).
 */
export class CaseRun<S> {
  private readonly done = new Map<string, CaseResult>();
  private readonly selected: readonly ScenarioCase<S>[];
  private setupDone = false;

  constructor(
    private readonly scenario: CasesScenario<S>,
    private readonly sel: CaseSelection | undefined,
    private readonly cellStart: number,
    private readonly sink: TimelineSink,
    private readonly record: AssertionSink,
  ) {
    this.selected = scenario.cases.filter((c) => caseSelected(c, sel));
  }

  /** Resolves when the cell passed; throws ScenarioSkipped or an error naming the failed cases otherwise. */
  async run(ctx: ScenarioContext): Promise<void> {
    checkCases(this.scenario as CasesScenario);
    const shared = (await this.scenario.setup?.(ctx)) as S;
    this.setupDone = true;
    let failure: unknown;
    try {
      await Promise.all(this.selected.map((c) => this.runCase(c, ctx, shared)));
    } finally {
      try {
        await this.scenario.teardown?.(ctx, shared);
      } catch (err) {
        failure = new Error(`teardown failed: ${errorMessage(err)}`);
        this.sink({ kind: 'note', summary: `teardown failed: ${errorMessage(err)}` });
      }
    }
    const ran = this.selected.map((c) => this.done.get(c.name)!);
    const failed = ran.filter((r) => r.outcome === 'failed');
    if (failed.length > 0)
      throw new Error(
        `${failed.length} of ${ran.length} cases failed: ${failed.map((f) => `${caseTitle(f)}: ${f.reason}`).join('; ')}`,
      );
    if (failure) throw failure;
    if (outcomeOfCases(ran) === 'skipped')
      throw new ScenarioSkipped(ran.map((r) => r.reason).find(Boolean) ?? 'every case skipped');
  }

  private async runCase(c: ScenarioCase<S>, ctx: ScenarioContext, shared: S): Promise<void> {
    const start = Date.now();
    const pods: string[] = [];
    const check = createChecks(this.record);
    const caseCtx: ScenarioContext = {
      ...ctx,
      check,
      // Absent only on test doubles of the world.
      core: ctx.core ? trackPods(ctx.core, pods) : ctx.core,
      skip: (reason) => {
        throw new ScenarioSkipped(reason);
      },
      note: (summary, detail) => ctx.note(summary, { ...detail, case: c.name }),
    };
    let outcome: CaseResult['outcome'] = 'passed';
    let reason: string | undefined;
    try {
      await c.run(caseCtx, shared);
    } catch (err) {
      outcome = err instanceof ScenarioSkipped ? 'skipped' : 'failed';
      reason =
        err instanceof AssertionFailure || err instanceof ScenarioSkipped ? err.message : errorMessage(err);
    }
    const result: CaseResult = {
      ...identity(c),
      outcome,
      offsetMs: start - this.cellStart,
      durationMs: Date.now() - start,
      ...(reason ? { reason } : {}),
      assertions: check.results(),
      ...(pods.length > 0 ? { pods } : {}),
    };
    this.done.set(c.name, result);
    this.sink({
      kind: 'note',
      summary: `case ${outcome}: ${caseTitle(result)}`,
      detail: { durationMs: result.durationMs, ...(reason ? { reason } : {}) },
    });
  }

  /**
   * Every declared case's result, in declaration order. A case the selection left out is skipped
   * (as Ginkgo reports a spec --focus did not pick); one that never finished takes the cell's end.
   */
  results(cell: { outcome: CaseResult['outcome']; reason?: string }): CaseResult[] {
    const chosen = new Set(this.selected);
    return this.scenario.cases.map((c): CaseResult => {
      const done = this.done.get(c.name);
      if (done) return done;
      if (!chosen.has(c)) {
        const why = this.sel ? describeSelection(this.sel) : '';
        return { ...identity(c), outcome: 'skipped', reason: `not selected by ${why}` };
      }
      const stage = this.setupDone ? 'did not finish' : 'set-up did not complete';
      return {
        ...identity(c),
        outcome: cell.outcome === 'skipped' ? 'skipped' : 'failed',
        reason:
          cell.outcome === 'skipped' ? (cell.reason ?? 'skipped') : `${stage}: ${cell.reason ?? 'failed'}`,
      };
    });
  }
}

const identity = (
  c: Pick<ScenarioCase, 'name' | 'tags' | 'file'>,
): Pick<CaseResult, 'name' | 'tags' | 'file'> => ({
  name: c.name,
  ...(c.tags?.length ? { tags: [...c.tags] } : {}),
  ...(c.file ? { file: c.file } : {}),
});

/** The API client, noting the name of every pod created through it: the case's pods. */
function trackPods(core: CoreV1Api, pods: string[]): CoreV1Api {
  return new Proxy(core, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (prop !== 'createNamespacedPod') return value.bind(target);
      return (param: Parameters<CoreV1Api['createNamespacedPod']>[0], ...rest: unknown[]) => {
        const name = param.body?.metadata?.name;
        if (name) pods.push(name);
        return value.call(target, param, ...rest);
      };
    },
  });
}
