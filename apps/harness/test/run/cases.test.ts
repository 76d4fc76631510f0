// Named cases (issue 34) through the runner on in-memory nodes: each case's own result, duration,
// assertions and pods; --case and --conformance; a cell passes only when all its cases pass.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import type { CasesScenario, Scenario, ScenarioContext } from '../../src/framework/scenario.js';
import { toJUnit } from '../../src/results/junit.js';
import { validateResults } from '../../src/results/load.js';
import type { CellResult, RunResults } from '../../src/results/model.js';
import { caseSelected, scenariosWithSelectedCases } from '../../src/run/cases.js';
import { runMatrix } from '../../src/run/runner.js';
import { fakeBackend, fakeNode, fakeWorld, scenario, silentProgress } from './fakes.js';

const FILE = 'test/e2e/common/node/container_probe.go';

/** A pod-creating API stand-in: the case's pods are what it created through ctx.core. */
const core = {
  createNamespacedPod: async ({ body }: { body: { metadata: { name: string } } }) => body,
} as unknown as CoreV1Api;

const probing: CasesScenario<{ image: string }> = {
  name: 'probing',
  description: 'three declared cases',
  isolation: 'namespace',
  async setup(ctx) {
    ctx.check.ok('shared set-up ran once', true);
    return { image: 'busybox' };
  },
  cases: [
    {
      name: 'Probing container should be restarted with a exec "cat /tmp/health" liveness probe',
      file: FILE,
      tags: ['NodeConformance', 'Conformance'],
      async run(ctx, shared) {
        await ctx.core.createNamespacedPod({
          namespace: ctx.namespace,
          body: { metadata: { name: 'liveness-exec' } },
        });
        ctx.check.equal('image from the shared set-up', shared.image, 'busybox');
      },
    },
    {
      name: 'Probing container should be restarted with a local redirect http liveness probe',
      file: FILE,
      async run(ctx) {
        await ctx.core.createNamespacedPod({
          namespace: ctx.namespace,
          body: { metadata: { name: 'liveness-redirect' } },
        });
        await ctx.sleep(20);
        ctx.check.equal('restart count', 0, 1);
      },
    },
    {
      name: 'Probing container should *not* be restarted with a GRPC liveness probe',
      file: FILE,
      tags: ['NodeConformance', 'Conformance'],
      async run(ctx) {
        ctx.skip('no gRPC health server image');
      },
    },
  ],
};

const lockDir = await mkdtemp(join(tmpdir(), 'kh-cases-locks-'));
afterAll(() => rm(lockDir, { recursive: true, force: true }));

async function run(scenarios: Scenario[], extra: Partial<Parameters<typeof runMatrix>[0]> = {}) {
  const journal = { events: [] };
  const backend = fakeBackend('alpha');
  const world = fakeWorld(journal);
  // The fake world's context has no API client; give the cell one that records pod names.
  const openCell = world.openCell.bind(world);
  world.openCell = async (node, ns, sink) => {
    const cell = await openCell(node, ns, sink);
    return { ...cell, context: { ...cell.context, core } };
  };
  return runMatrix({
    runId: 'r1',
    lockDir,
    backends: [backend],
    scenarios,
    startWorld: async () => world,
    startNode: async () => fakeNode(backend, journal),
    progress: silentProgress,
    ...extra,
  });
}

const only = (r: RunResults): CellResult => r.cells[0]!;

/** The probing scenario with one case and a teardown that throws. */
const teardownFails = (): CasesScenario<{ image: string }> => ({
  ...probing,
  cases: [probing.cases[0]!],
  async teardown() {
    throw new Error('pods left behind');
  },
});

describe('declared cases', () => {
  it("records each case's outcome, duration, assertions and pods, and fails the cell when one case fails", async () => {
    const cell = only(await run([probing]));
    expect(cell.outcome).toBe('failed');
    expect(cell.reason).toBe(
      '1 of 3 cases failed: Probing container should be restarted with a local redirect http liveness probe: restart count: values differ',
    );
    expect(cell.cases?.map((c) => [c.name, c.outcome, c.reason])).toEqual([
      [probing.cases[0]!.name, 'passed', undefined],
      [probing.cases[1]!.name, 'failed', 'restart count: values differ'],
      [probing.cases[2]!.name, 'skipped', 'no gRPC health server image'],
    ]);
    const [first, second] = cell.cases!;
    expect(first).toMatchObject({
      tags: ['NodeConformance', 'Conformance'],
      file: FILE,
      pods: ['liveness-exec'],
      assertions: [{ name: 'image from the shared set-up', outcome: 'passed' }],
    });
    expect(second!.pods).toEqual(['liveness-redirect']);
    expect(second!.assertions).toEqual([
      {
        name: 'restart count',
        outcome: 'failed',
        expected: 1,
        actual: 0,
        message: 'restart count: values differ',
      },
    ]);
    expect(second!.durationMs).toBeGreaterThanOrEqual(15);
    expect(second!.offsetMs).toBeGreaterThanOrEqual(0);
    // The cell keeps every assertion, the set-up's and each case's.
    expect(cell.assertions.map((a) => a.name)).toEqual([
      'shared set-up ran once',
      'image from the shared set-up',
      'restart count',
    ]);
    expect(cell.timeline.map((t) => t.summary)).toContain(`case failed: ${probing.cases[1]!.name}`);
    // The file stays loadable by the report and the history.
    expect(() => validateResults(JSON.parse(JSON.stringify(resultsOf(cell))))).not.toThrow();
  });

  it('passes the cell only when every case that ran passed; skipped cases do not fail it', async () => {
    const passing: CasesScenario = { ...probing, cases: [probing.cases[0]!, probing.cases[2]!] };
    const cell = only(await run([passing]));
    expect(cell.outcome).toBe('passed');
    expect(cell.cases?.map((c) => c.outcome)).toEqual(['passed', 'skipped']);
  });

  it('skips the cell when every case skipped, with the first reason', async () => {
    const cell = only(await run([{ ...probing, cases: [probing.cases[2]!] }]));
    expect([cell.outcome, cell.reason]).toEqual(['skipped', 'no gRPC health server image']);
  });

  it('fails every selected case when the shared set-up fails, naming it', async () => {
    const broken: CasesScenario = {
      ...probing,
      async setup(ctx: ScenarioContext) {
        ctx.check.ok('config map created', false);
        return { image: '' };
      },
    };
    const cell = only(await run([broken]));
    expect(cell.outcome).toBe('failed');
    expect(cell.cases?.map((c) => [c.outcome, c.reason])).toEqual([
      ['failed', 'set-up did not complete: config map created: condition not met'],
      ['failed', 'set-up did not complete: config map created: condition not met'],
      ['failed', 'set-up did not complete: config map created: condition not met'],
    ]);
  });

  it('skips every case when the set-up skips the cell', async () => {
    const unsupported: CasesScenario = {
      ...probing,
      async setup(ctx: ScenarioContext) {
        return ctx.skip('runtime announces no user namespaces');
      },
    };
    const cell = only(await run([unsupported]));
    expect(cell.outcome).toBe('skipped');
    expect(new Set(cell.cases?.map((c) => `${c.outcome}: ${c.reason}`))).toEqual(
      new Set(['skipped: runtime announces no user namespaces']),
    );
  });

  it('fails the cell, not its cases, when the teardown fails', async () => {
    const cell = only(await run([teardownFails()]));
    expect([cell.outcome, cell.reason]).toEqual(['failed', 'teardown failed: pods left behind']);
    expect(cell.cases?.map((c) => c.outcome)).toEqual(['passed']);
  });

  it('fails the cases still running at the deadline with the cell reason, keeping the finished ones', async () => {
    const slow: CasesScenario = {
      name: 'slow',
      description: 'one case outlives the cell',
      timeoutMs: 50,
      cases: [
        { name: 'quick', run: async () => {} },
        { name: 'stuck', run: (ctx) => ctx.sleep(5_000) },
      ],
    };
    const cell = only(await run([slow]));
    expect(cell.cases?.map((c) => [c.name, c.outcome, c.reason])).toEqual([
      ['quick', 'passed', undefined],
      ['stuck', 'failed', 'did not finish: scenario timed out after 50 ms'],
    ]);
  });

  it('runs only the cases --case matches, reporting the others as skipped, never run', async () => {
    const ran: string[] = [];
    const watched: CasesScenario = {
      ...probing,
      cases: probing.cases.map((c) => ({
        ...c,
        run: async (ctx: ScenarioContext, s: unknown) => {
          ran.push(c.name);
          await c.run(ctx, s as { image: string });
        },
      })),
    };
    const cell = only(await run([watched], { cases: { pattern: /local redirect/ } }));
    expect(ran).toEqual([probing.cases[1]!.name]);
    expect(cell.cases?.map((c) => [c.outcome, c.reason])).toEqual([
      ['skipped', 'not selected by --case local redirect'],
      ['failed', 'restart count: values differ'],
      ['skipped', 'not selected by --case local redirect'],
    ]);
  });

  it('--conformance runs only the [NodeConformance] cases', async () => {
    const cell = only(await run([probing], { cases: { conformance: true } }));
    expect(cell.cases?.map((c) => c.outcome)).toEqual(['passed', 'skipped', 'skipped']);
    expect(cell.cases?.[1]?.reason).toBe('not selected by --conformance');
    expect(cell.outcome).toBe('passed');
  });

  it('refuses a scenario that declares a case name twice: results and quarantine key on it', async () => {
    const twice: CasesScenario = { ...probing, cases: [probing.cases[0]!, probing.cases[0]!] };
    const cell = only(await run([twice]));
    expect(cell.outcome).toBe('failed');
    expect(cell.reason).toMatch(/declares the case "Probing container should be restarted with a exec/);
  });
});

describe('case selection', () => {
  const closure = scenario('closure', async () => {});

  it('matches --case against the name with its [labels], as ginkgo --focus matches the full text', () => {
    const c = probing.cases[0]!;
    expect(caseSelected(c, { pattern: /\[Conformance\]$/ })).toBe(true);
    expect(caseSelected(c, { pattern: /exec "cat/ })).toBe(true);
    expect(caseSelected(c, { pattern: /redirect/ })).toBe(false);
    expect(caseSelected(probing.cases[1]!, { conformance: true })).toBe(false);
    expect(caseSelected(c, { conformance: true, pattern: /redirect/ })).toBe(false);
  });

  it('keeps only the scenarios with a selected case; closures have none', () => {
    expect(scenariosWithSelectedCases([closure, probing], undefined).map((s) => s.name)).toEqual([
      'closure',
      'probing',
    ]);
    expect(scenariosWithSelectedCases([closure, probing], { conformance: true }).map((s) => s.name)).toEqual([
      'probing',
    ]);
    expect(() => scenariosWithSelectedCases([closure, probing], { pattern: /nothing like it/ })).toThrow(
      'no case matches --case nothing like it in scenarios closure, probing',
    );
  });
});

describe('JUnit of declared cases', () => {
  it("has one testcase per case, named with its labels, with the failed assertion and its pods' events", async () => {
    const cell = only(await run([probing]));
    cell.timeline.push(
      {
        t: 1_500,
        kind: 'event',
        summary: 'Warning Unhealthy: Liveness probe failed',
        detail: { object: 'Pod/liveness-redirect' },
      },
      { t: 1_600, kind: 'event', summary: 'Normal Pulled: pulled', detail: { object: 'Pod/liveness-exec' } },
    );
    const xml = toJUnit(resultsOf(cell));
    expect(xml).toContain('tests="3" failures="1" skipped="1"');
    expect(xml).toContain(
      '<testcase classname="kubelet-harness.alpha.probing" name="Probing container should be restarted with a exec &quot;cat /tmp/health&quot; liveness probe [NodeConformance] [Conformance]"',
    );
    const failure = /<testcase[^>]*local redirect[^>]*>\s*<failure message="([^"]*)">([^<]*)<\/failure>/.exec(
      xml,
    );
    expect(failure?.[1]).toBe('restart count: values differ');
    expect(failure?.[2]).toContain(
      'restart count\n  restart count: values differ\n  expected: 1\n  actual: 0',
    );
    expect(failure?.[2]).toContain(
      'events of its pods:\n  1.5s Pod/liveness-redirect Warning Unhealthy: Liveness probe failed',
    );
    expect(failure?.[2]).not.toContain('Pulled');
    expect(xml).toMatch(
      /GRPC liveness probe \[NodeConformance\] \[Conformance\]"[^>]*>\s*<skipped message="no gRPC health server image"\/>/,
    );
    // No testcase for the cell itself: its failure is its case's.
    expect(xml).not.toContain('name="probing"');
  });

  it("adds the cell's own testcase when it failed outside its cases", async () => {
    const cell = only(await run([teardownFails()]));
    const xml = toJUnit(resultsOf(cell));
    expect(xml).toContain('tests="2" failures="1"');
    expect(xml).toMatch(/name="probing"[^>]*>\s*<failure message="teardown failed: pods left behind">/);
  });

  it('keeps one testcase per cell for cells without cases', () => {
    const xml = toJUnit(
      resultsOf({
        runtime: 'alpha',
        scenario: 'closure',
        outcome: 'passed',
        startedAt: '2026-11-29T00:00:00Z',
        durationMs: 1_000,
        assertions: [],
        timeline: [],
        logs: [],
      }),
    );
    expect(xml).toContain('<testcase classname="kubelet-harness.alpha" name="closure" time="1.000"/>');
  });
});

function resultsOf(cell: CellResult): RunResults {
  return {
    schemaVersion: 1,
    runId: 'r1',
    startedAt: cell.startedAt,
    finishedAt: cell.startedAt,
    durationMs: cell.durationMs,
    host: { node: 'h', platform: 'linux', cpus: 2 },
    runtimes: [{ name: 'alpha', runtimeName: 'alpha-rt', runtimeVersion: '1' }],
    scenarios: [cell.scenario],
    cells: [cell],
  };
}
