import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveCri } from '@kh/cri-api';
import { afterAll, describe, expect, it } from 'vitest';
import { BackendUnavailableError } from '../../src/backends/types.js';
import type { Scenario } from '../../src/framework/scenario.js';
import { runMatrix } from '../../src/run/runner.js';
import { consoleProgress } from '../../src/support/progress.js';
import {
  FAKE_NODE_CPU_STEP,
  fakeBackend,
  fakeNode,
  fakeWorld,
  type Journal,
  scenario,
  silentProgress,
} from './fakes.js';

const passes = scenario('passes', async (ctx) => {
  ctx.check.equal('one is one', 1, 1);
  ctx.note('did a thing');
});
const fails = scenario('fails', async (ctx) => {
  ctx.check.equal('runtime name', 'containerd', 'docker');
});
const throws = scenario('throws', async () => {
  throw new Error('apiserver went away');
});
const passes2 = scenario('passes-too', async () => {});
const needsReal = scenario('needs-real', async () => {}, { needs: ['real-containers'] });

// The tests' host resources, away from real runs' locks on this machine.
const lockDir = await mkdtemp(join(tmpdir(), 'kh-runner-locks-'));
afterAll(() => rm(lockDir, { recursive: true, force: true }));

function deps(journal: Journal, overrides: Partial<Parameters<typeof runMatrix>[0]> = {}) {
  const backends = [fakeBackend('alpha', ['real-containers']), fakeBackend('beta')];
  return {
    runId: 'r1',
    lockDir,
    backends,
    scenarios: [passes, fails, throws, needsReal],
    startWorld: async () => fakeWorld(journal),
    startNode: async (_w: unknown, b: (typeof backends)[number]) => fakeNode(b, journal),
    progress: silentProgress,
    ...overrides,
  };
}

describe('runMatrix', () => {
  it('records one cell per runtime × scenario, in registry and suite order', async () => {
    const journal: Journal = { events: [] };
    const r = await runMatrix(deps(journal));
    expect(r.runId).toBe('r1');
    expect(r.cells.map((c) => `${c.runtime}/${c.scenario}:${c.outcome}`)).toEqual([
      'alpha/passes:passed',
      'alpha/fails:failed',
      'alpha/throws:failed',
      'alpha/needs-real:passed',
      'beta/passes:passed',
      'beta/fails:failed',
      'beta/throws:failed',
      'beta/needs-real:skipped',
    ]);
    expect(r.runtimes.map((x) => [x.name, x.runtimeName, x.startupMs])).toEqual([
      ['alpha', 'alpha-rt', 42],
      ['beta', 'beta-rt', 42],
    ]);
    expect(r.scenarios).toEqual(['passes', 'fails', 'throws', 'needs-real']);
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    // Each cell has its node to itself: its reads at start and end are the node's only ones meanwhile.
    for (const c of r.cells.filter((x) => x.outcome === 'passed'))
      expect(c.cpu?.nodeSeconds, `${c.runtime}/${c.scenario}`).toBe(FAKE_NODE_CPU_STEP);
    expect(r.cpu?.nodes.map((n) => n.runtime)).toEqual(['alpha', 'beta']);
    expect(r.cpu?.totalSeconds).toBeGreaterThan(r.cpu!.harnessSeconds);
    // A run shorter than the kernel's CPU time tick has no share to report.
    if (r.host.cpuBusy !== undefined) {
      expect(r.host.cpuBusy).toBeGreaterThanOrEqual(0);
      expect(r.host.cpuBusy).toBeLessThanOrEqual(1);
    }
  });

  it('re-loads a sandbox image a cell removed, noting it in that cell only', async () => {
    const restores: boolean[] = [true, false];
    const r = await runMatrix(
      deps(
        { events: [] },
        {
          scenarios: [passes, passes2],
          backends: [fakeBackend('alpha')],
          startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>) => {
            const node = fakeNode(b, { events: [] });
            Object.assign(node.started, { restoreSandboxImage: async () => restores.shift() ?? false });
            return node;
          },
        },
      ),
    );
    const notes = r.cells.map(
      (c) => c.timeline.filter((e) => /sandbox image was removed/.test(e.summary)).length,
    );
    expect(notes).toEqual([1, 0]);
    expect(restores).toEqual([]);
  });

  it('keeps the failed assertion with expected and actual, and log excerpts, on a failed cell', async () => {
    const r = await runMatrix(deps({ events: [] }));
    const failed = r.cells.find((c) => c.runtime === 'alpha' && c.scenario === 'fails')!;
    expect(failed.reason).toBe('runtime name: values differ');
    expect(failed.assertions).toEqual([
      {
        name: 'runtime name',
        outcome: 'failed',
        expected: 'docker',
        actual: 'containerd',
        message: 'runtime name: values differ',
      },
    ]);
    expect(failed.logs.map((l) => l.source)).toEqual(['agent', 'runtime']);
    expect(failed.timeline.some((t) => t.summary === 'assertion failed: runtime name')).toBe(true);
    const thrown = r.cells.find((c) => c.runtime === 'alpha' && c.scenario === 'throws')!;
    expect(thrown.reason).toBe('apiserver went away');
    const passed = r.cells.find((c) => c.runtime === 'alpha' && c.scenario === 'passes')!;
    expect(passed.assertions).toEqual([{ name: 'one is one', outcome: 'passed' }]);
    expect(passed.timeline.map((t) => t.summary)).toEqual(['did a thing']);
    expect(passed.logs).toEqual([]);
  });

  it('names a runtime that hung under a failed cell, with its goroutine dump in the cell', async () => {
    // Version answers, Status never does: dockerd 20.10.24's libnetwork deadlock, as the shim sees it.
    const server = await serveCri(
      {
        name: 'hung',
        runtime: {
          version: () => ({ runtimeName: 'docker', runtimeVersion: '20.10.24' }),
          status: () => new Promise<never>(() => {}),
        },
      },
      { socketPath: join(lockDir, 'hung.sock') },
    );
    try {
      const r = await runMatrix(
        deps(
          { events: [] },
          {
            scenarios: [throws, passes],
            backends: [fakeBackend('alpha')],
            startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>) => {
              const node = fakeNode(b, { events: [] });
              Object.assign(node.started, {
                hostCriEndpoint: server.endpoint,
                dumpRuntimeStacks: async () => ['goroutine 61 [semacquire]:'],
              });
              return node;
            },
          },
        ),
      );
      const [failed, passed] = r.cells;
      expect(failed?.reason).toMatch(
        /^runtime hung: CRI Version answers \(docker 20\.10\.24\) but Status did not answer within 10 s; .* \(the scenario said: apiserver went away\)$/,
      );
      expect(failed?.logs.find((l) => l.source === 'runtime-stacks')?.lines).toEqual([
        'goroutine 61 [semacquire]:',
      ]);
      // Only failed cells ask: a passing cell never waits on a hung Status.
      expect(passed?.outcome).toBe('passed');
    } finally {
      await server.close({ graceMs: 0 });
    }
  }, 30_000);

  it('records a cell whose scenario skips at run time as skipped with its reason, never passed', async () => {
    const skips = scenario('skips', async (ctx) => {
      ctx.note('looked at the node');
      ctx.skip('runtime fake does not support user namespaces');
    });
    const lines: string[] = [];
    const r = await runMatrix(
      deps(
        { events: [] },
        {
          scenarios: [skips, passes],
          backends: [fakeBackend('alpha')],
          progress: consoleProgress((l) => lines.push(l)),
        },
      ),
    );
    expect(r.cells.map((c) => [c.scenario, c.outcome, c.reason])).toEqual([
      ['skips', 'skipped', 'runtime fake does not support user namespaces'],
      ['passes', 'passed', undefined],
    ]);
    // The progress line says skipped, not failed.
    expect(lines.filter((l) => l.includes('skips'))).toEqual([
      expect.stringMatching(/▸ \[alpha\] skips … on/),
      expect.stringMatching(/– \[alpha\] skips: runtime fake does not support user namespaces$/),
    ]);
  });

  it("records a scenario's start-up floor in its cell, typed, never from a note", async () => {
    const floor = { singleMs: 250, burst: { pods: 30, p50: 4_000, p90: 4_500, p99: 4_700 } };
    const measures = scenario('measures', async (ctx) => {
      ctx.note('bare floor', { startupFloor: { singleMs: 1 } });
      ctx.recordStartupFloor(floor);
    });
    const r = await runMatrix(
      deps({ events: [] }, { scenarios: [measures, passes], backends: [fakeBackend('alpha')] }),
    );
    expect(r.cells.map((c) => c.startupFloor)).toEqual([floor, undefined]);
  });

  it("takes a started node's restart as the runtime-restart capability, and skips without it", async () => {
    const restarts = scenario('restarts', async () => {}, { needs: ['runtime-restart'] });
    const r = await runMatrix(
      deps(
        { events: [] },
        {
          scenarios: [restarts],
          startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>) => {
            const node = fakeNode(b, { events: [] });
            if (b.name === 'alpha') Object.assign(node.started, { restart: { stop: async () => {} } });
            return node;
          },
        },
      ),
    );
    expect(r.cells.map((c) => [c.runtime, c.outcome, c.reason])).toEqual([
      ['alpha', 'passed', undefined],
      ['beta', 'skipped', 'backend beta lacks runtime-restart'],
    ]);
  });

  it('skips a cell whose scenario needs a capability the backend lacks, saying which', async () => {
    const r = await runMatrix(deps({ events: [] }));
    const skipped = r.cells.find((c) => c.outcome === 'skipped')!;
    expect(skipped.reason).toBe('backend beta lacks real-containers');
  });

  it('creates and deletes a namespace per cell, then stops nodes and the world', async () => {
    const journal: Journal = { events: [] };
    await runMatrix(deps(journal, { scenarios: [passes] }));
    expect(journal.events).toEqual(
      expect.arrayContaining([
        'create ns passes-alpha',
        'delete ns passes-alpha',
        'node alpha stopped',
        'node beta stopped',
      ]),
    );
    expect(journal.events.at(-1)).toBe('world stopped');
  });

  it("gives a scenario further namespaces of its cell, routed to its timeline and deleted at the cell's end", async () => {
    const journal: Journal = { events: [] };
    const names: string[] = [];
    const twoIts = scenario('two-its', async (ctx) => {
      names.push(await ctx.createNamespace('first'), await ctx.createNamespace('second'));
      throw new Error('the second It failed');
    });
    await runMatrix(deps(journal, { scenarios: [twoIts], backends: [fakeBackend('alpha')] }));
    expect(names).toEqual(['two-its-alpha-first', 'two-its-alpha-second']);
    expect(journal.events).toEqual(
      expect.arrayContaining([
        'create ns two-its-alpha-first',
        'claim two-its-alpha-first',
        'claim two-its-alpha-second',
        'delete ns two-its-alpha',
        'delete ns two-its-alpha-first',
        'delete ns two-its-alpha-second',
      ]),
    );
    // Deleted before the cell lets go of the timeline, so the deletions still reach it.
    expect(journal.events.indexOf('delete ns two-its-alpha-second')).toBeLessThan(
      journal.events.indexOf('close two-its-alpha'),
    );
  });

  it('fails every cell of a node that did not start, runs the others and still cleans up', async () => {
    const journal: Journal = { events: [] };
    const r = await runMatrix(
      deps(journal, {
        startNode: async (_w: unknown, b) => {
          if (b.name === 'beta') throw new Error('dockerd exited');
          return fakeNode(b, journal);
        },
      }),
    );
    const beta = r.cells.filter((c) => c.runtime === 'beta');
    expect(beta.map((c) => c.outcome)).toEqual(['failed', 'failed', 'failed', 'failed']);
    expect(beta[0]!.reason).toBe('node did not start: dockerd exited');
    expect(r.runtimes.find((x) => x.name === 'beta')?.runtimeVersion).toBe('unknown');
    expect(r.cells.filter((c) => c.runtime === 'alpha' && c.outcome === 'passed')).toHaveLength(2);
    expect(journal.events).toContain('node alpha stopped');
    expect(journal.events.at(-1)).toBe('world stopped');
  });

  it('skips every cell of a backend that cannot run here, with its words, and runs the others', async () => {
    const journal: Journal = { events: [] };
    const r = await runMatrix(
      deps(journal, {
        startNode: async (_w: unknown, b) => {
          if (b.name === 'beta') throw new BackendUnavailableError('runsc: cannot run with network enabled');
          return fakeNode(b, journal);
        },
      }),
    );
    const beta = r.cells.filter((c) => c.runtime === 'beta');
    expect(beta.map((c) => c.outcome)).toEqual(['skipped', 'skipped', 'skipped', 'skipped']);
    expect(beta[0]!.reason).toBe('backend beta cannot run here: runsc: cannot run with network enabled');
    expect(r.cells.filter((c) => c.runtime === 'alpha' && c.outcome === 'passed')).toHaveLength(2);
  });

  it('reports every cell failed when the world cannot be built', async () => {
    const r = await runMatrix(
      deps(
        { events: [] },
        {
          startWorld: async () => {
            throw new Error('no Docker engine');
          },
        },
      ),
    );
    expect(r.cells).toHaveLength(8);
    expect(new Set(r.cells.map((c) => c.reason))).toEqual(new Set(['run set-up failed: no Docker engine']));
  });

  it('runs cells holding the same host resource one at a time across runtimes, others side by side', async () => {
    const spans: { name: string; runtime: string; from: number; to: number }[] = [];
    const timed = (name: string, exclusive?: string[]) =>
      scenario(
        name,
        async (ctx) => {
          const from = performance.now();
          await new Promise((r) => setTimeout(r, 30));
          spans.push({ name, runtime: ctx.runtime, from, to: performance.now() });
        },
        exclusive ? { exclusive } : {},
      );
    const r = await runMatrix(
      deps({ events: [] }, { scenarios: [timed('disk', ['host-disk']), timed('free')] }),
    );
    expect(r.cells.every((c) => c.outcome === 'passed')).toBe(true);
    const [a, b] = spans.filter((s) => s.name === 'disk');
    expect(a && b && (a.to <= b.from || b.to <= a.from)).toBe(true);
    const overlaps = (x: (typeof spans)[number], y: (typeof spans)[number]) => x.from < y.to && y.from < x.to;
    const free = spans.filter((s) => s.name === 'free');
    // Without the resource the two runtimes' cells may overlap, and here they can: nothing holds them.
    expect(free).toHaveLength(2);
    expect(spans.filter((s) => s.name === 'disk' && free.some((f) => overlaps(s, f))).length).toBeGreaterThan(
      0,
    );
  });

  it("keeps heavy scenarios' cells to half of the parallel cells", async () => {
    let running = 0;
    let most = 0;
    const heavy = scenario(
      'heavy',
      async () => {
        most = Math.max(most, ++running);
        await new Promise((r) => setTimeout(r, 20));
        running--;
      },
      { load: 'heavy', isolation: 'namespace' },
    );
    const r = await runMatrix(
      deps({ events: [] }, { scenarios: [heavy], nodesPerRuntime: 2, maxParallelCells: 2 }),
    );
    expect(r.cells.map((c) => c.outcome)).toEqual(['passed', 'passed']);
    expect(most).toBe(1);
  });

  it('starts the next heavy cell once the spacing has passed, while the first still runs', async () => {
    const starts: number[] = [];
    let secondStarted!: () => void;
    const second = new Promise<void>((r) => {
      secondStarted = r;
    });
    // The first cell ends only after the second has started: only the wake-up can start it.
    const heavy = scenario(
      'heavy',
      async () => {
        starts.push(Date.now());
        if (starts.length === 1) await second;
        else secondStarted();
      },
      { load: 'heavy', isolation: 'node' },
    );
    // The scheduler stamps a heavy cell's start before its scenario runs, so the scenarios' own
    // start times may be closer than the spacing on a loaded machine; the run's start bounds the
    // first stamp from below. Without spacing the second cell would start within milliseconds.
    const before = Date.now();
    const r = await runMatrix(
      deps(
        { events: [] },
        { scenarios: [heavy], nodesPerRuntime: 2, maxParallelCells: 4, heavyStartSpacingMs: 1_000 },
      ),
    );
    expect(r.cells.map((c) => c.outcome)).toEqual(['passed', 'passed']);
    // Timers may fire up to a millisecond early against Date.now.
    expect(starts[1]! - before).toBeGreaterThanOrEqual(999);
  });

  it('fails a cell that outlives its timeout', async () => {
    const slow = scenario('slow', () => new Promise(() => {}), { timeoutMs: 50 });
    const r = await runMatrix(deps({ events: [] }, { scenarios: [slow], backends: [fakeBackend('alpha')] }));
    expect(r.cells[0]).toMatchObject({ outcome: 'failed', reason: 'scenario timed out after 50 ms' });
  });

  it('on interrupt ends the running cell, skips the rest and still cleans up', async () => {
    const journal: Journal = { events: [] };
    const abort = new AbortController();
    const hangs = scenario('hangs', () => {
      abort.abort();
      return new Promise(() => {});
    });
    const r = await runMatrix(
      deps(journal, { scenarios: [hangs, passes], backends: [fakeBackend('alpha')], signal: abort.signal }),
    );
    expect(r.cells.map((c) => [c.scenario, c.outcome, c.reason])).toEqual([
      ['hangs', 'failed', 'run interrupted'],
      ['passes', 'skipped', 'run interrupted'],
    ]);
    expect(journal.events).toEqual(expect.arrayContaining(['delete ns hangs-alpha', 'node alpha stopped']));
    expect(journal.events.at(-1)).toBe('world stopped');
  });

  it('collects pod start-up latencies the timeline reported for the cell', async () => {
    const journal: Journal = { events: [] };
    const world = fakeWorld(journal);
    const open = world.openCell.bind(world);
    world.openCell = async (node, namespace, sink) => {
      sink({ kind: 'pod-phase', summary: 'p1 running', detail: { startupMs: 812 } });
      sink({ kind: 'pod-phase', summary: 'p2 running', detail: { startupMs: 1_204 } });
      return open(node, namespace, sink);
    };
    const r = await runMatrix(
      deps(journal, { scenarios: [passes], backends: [fakeBackend('alpha')], startWorld: async () => world }),
    );
    expect(r.cells[0]!.podStartupMs).toEqual([812, 1_204]);
  });

  it('a failing world stop is reported as a warning, not lost and not fatal', async () => {
    const warnings: string[] = [];
    const r = await runMatrix(
      deps(
        { events: [] },
        {
          scenarios: [passes],
          startWorld: async () => fakeWorld({ events: [] }, { stopFails: true }),
          progress: { ...silentProgress, warn: (m: string) => warnings.push(m) },
        },
      ),
    );
    expect(r.cells.every((c) => c.outcome === 'passed')).toBe(true);
    expect(warnings).toEqual(['clean-up: network busy']);
  });

  it("merges the agent's CRI calls into each cell's timeline and statistics, and the runtime's", async () => {
    const journal: Journal = { events: [] };
    const before = Date.now() - 60_000;
    // The agent's log as the node would show it after each cell: start-up calls come first.
    const reads = [
      (t: number) => [
        { at: before, method: 'Version', durationMs: 1, code: 'OK' },
        { at: t, method: 'RunPodSandbox', durationMs: 96, code: 'OK' },
        { at: t + 1, method: 'ContainerStatus', durationMs: 2, code: 'NOT_FOUND', error: 'gone' },
      ],
      (t: number) => [{ at: t, method: 'CreateContainer', durationMs: 11, code: 'OK' }],
    ];
    const r = await runMatrix(
      deps(journal, {
        backends: [fakeBackend('alpha')],
        scenarios: [passes, fails],
        startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>) => ({
          ...fakeNode(b, journal),
          agentCriCalls: async () => {
            const read = reads.shift();
            if (!read) throw new Error('exec failed');
            return read(Date.now());
          },
        }),
      }),
    );
    const [first, second] = r.cells;
    const agentEntries = first!.timeline.filter((e) => e.kind === 'cri-call' && e.source === 'agent');
    expect(agentEntries.map((e) => [e.method, e.code])).toEqual([
      ['RunPodSandbox', 'OK'],
      ['ContainerStatus', 'NOT_FOUND'],
    ]);
    expect(first!.criCalls?.map((c) => `${c.source}/${c.method}:${c.count}`)).toEqual([
      'agent/ContainerStatus:1',
      'agent/RunPodSandbox:1',
    ]);
    expect(second!.criCalls?.map((c) => `${c.source}/${c.method}:${c.count}`)).toEqual([
      'agent/CreateContainer:1',
    ]);
    // The start-up Version call is the runtime's, not the cell's.
    expect(r.runtimes[0]!.criCalls?.map((c) => `${c.method}:${c.count}:${c.errors}:${c.p50}`)).toEqual([
      'ContainerStatus:1:1:2',
      'CreateContainer:1:0:11',
      'RunPodSandbox:1:0:96',
      'Version:1:0:1',
    ]);
  });

  it('notes an unreadable agent CRI call log in the cell instead of failing it', async () => {
    const journal: Journal = { events: [] };
    const r = await runMatrix(
      deps(journal, {
        backends: [fakeBackend('alpha')],
        scenarios: [passes],
        startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>) => ({
          ...fakeNode(b, journal),
          agentCriCalls: async () => {
            throw new Error('container is gone');
          },
        }),
      }),
    );
    expect(r.cells[0]!.outcome).toBe('passed');
    expect(r.cells[0]!.timeline.map((e) => e.summary)).toContain(
      'agent CRI calls not read: container is gone',
    );
    expect(r.runtimes[0]!.criCalls).toBeUndefined();
  });

  describe('with several nodes per runtime', () => {
    type Span = { name: string; node: string; from: number; to: number };
    const timed = (spans: Span[], name: string, isolation: Scenario['isolation'], ms = 30) =>
      scenario(
        name,
        async (ctx) => {
          const from = performance.now();
          await new Promise((r) => setTimeout(r, ms));
          spans.push({ name, node: ctx.nodeName, from, to: performance.now() });
        },
        isolation ? { isolation } : {},
      );
    const overlap = (x: Span, y: Span) => x.from < y.to && y.from < x.to;

    it('gives node cells a node each, packs namespace cells on one, all side by side', async () => {
      const journal: Journal = { events: [] };
      const spans: Span[] = [];
      const lanes: number[] = [];
      const started: number[] = [];
      const r = await runMatrix(
        deps(journal, {
          backends: [fakeBackend('alpha')],
          scenarios: [
            timed(spans, 'a', 'node'),
            timed(spans, 'b', 'node'),
            timed(spans, 'c', 'namespace'),
            timed(spans, 'd', 'namespace'),
          ],
          nodesPerRuntime: 4,
          startWorld: async (_id: string, _p: unknown, nodes: ReadonlyMap<string, number>) => {
            lanes.push(nodes.get('alpha')!);
            return fakeWorld(journal);
          },
          startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>, _p: unknown, i: number) => {
            started.push(i);
            return fakeNode(b, journal, i);
          },
        }),
      );
      expect(lanes).toEqual([3]);
      expect(started.sort()).toEqual([0, 1, 2]);
      expect(r.runtimes[0]).toMatchObject({ nodes: 3 });
      const node = Object.fromEntries(r.cells.map((c) => [c.scenario, c.node]));
      expect(node.c).toBe(node.d);
      expect(new Set([node.a, node.b, node.c]).size).toBe(3);
      const by = Object.fromEntries(spans.map((x) => [x.name, x]));
      expect(overlap(by.a!, by.b!) && overlap(by.a!, by.c!) && overlap(by.c!, by.d!)).toBe(true);
      const note = r.cells.find((c) => c.scenario === 'c')!.timeline.map((e) => e.summary);
      expect(note).toContain(`shares node ${node.c} with d`);
      // Every node is stopped, not only the first.
      expect(journal.events.filter((e) => / stopped$/.test(e) && e.startsWith('node '))).toHaveLength(3);
    });

    it('starts a node with a disk of its own per ownDisk cell and runs those cells there, side by side', async () => {
      const spans: Span[] = [];
      const asked: { index: number; ownDisk: boolean }[] = [];
      const disk = (name: string) => ({ ...timed(spans, name, 'node'), ownDisk: true });
      const r = await runMatrix(
        deps(
          { events: [] },
          {
            backends: [fakeBackend('alpha')],
            scenarios: [disk('disk-a'), disk('disk-b'), timed(spans, 'plain', 'node')],
            nodesPerRuntime: 4,
            startNode: async (
              _w: unknown,
              b: ReturnType<typeof fakeBackend>,
              _p: unknown,
              i: number,
              o: { ownDisk?: boolean },
            ) => {
              asked.push({ index: i, ownDisk: o.ownDisk === true });
              return { ...fakeNode(b, { events: [] }, i), ...(o.ownDisk ? { ownDisk: true } : {}) };
            },
          },
        ),
      );
      expect(r.cells.filter((c) => c.outcome !== 'passed')).toEqual([]);
      // The plain lanes come first, then the disk nodes.
      expect(asked.sort((x, y) => x.index - y.index)).toEqual([
        { index: 0, ownDisk: false },
        { index: 1, ownDisk: true },
        { index: 2, ownDisk: true },
      ]);
      const node = Object.fromEntries(r.cells.map((c) => [c.scenario, c.node]));
      expect(node.plain).toBe('node-alpha');
      expect([node['disk-a'], node['disk-b']].sort()).toEqual(['node-alpha-2', 'node-alpha-3']);
      const by = Object.fromEntries(spans.map((x) => [x.name, x]));
      expect(overlap(by['disk-a']!, by['disk-b']!)).toBe(true);
    });

    it('runs a world cell with nothing beside it', async () => {
      const spans: Span[] = [];
      const r = await runMatrix(
        deps(
          { events: [] },
          {
            scenarios: [
              timed(spans, 'x', 'namespace'),
              timed(spans, 'restart', 'world'),
              timed(spans, 'y', 'node'),
            ],
            nodesPerRuntime: 3,
            startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>, _p: unknown, i: number) =>
              fakeNode(b, { events: [] }, i),
          },
        ),
      );
      expect(r.cells.filter((c) => c.outcome !== 'passed')).toEqual([]);
      const restarts = spans.filter((x) => x.name === 'restart');
      expect(restarts).toHaveLength(2);
      for (const w of restarts) expect(spans.filter((x) => x !== w && overlap(x, w))).toEqual([]);
    });

    it("gives each cell on a shared node the agent's calls made while it ran, and counts each call once", async () => {
      const log: { at: number; method: string; durationMs: number; code: string }[] = [];
      const call = (method: string, ms: number) =>
        scenario(
          method,
          async () => {
            await new Promise((r) => setTimeout(r, ms));
            log.push({ at: Date.now(), method, durationMs: 1, code: 'OK' });
          },
          { isolation: 'namespace' },
        );
      const r = await runMatrix(
        deps(
          { events: [] },
          {
            backends: [fakeBackend('alpha')],
            scenarios: [call('Early', 10), call('Late', 60)],
            nodesPerRuntime: 2,
            startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>) => ({
              ...fakeNode(b, { events: [] }),
              agentCriCalls: async () => log.splice(0),
            }),
          },
        ),
      );
      const methods = (scenarioName: string) =>
        r.cells.find((c) => c.scenario === scenarioName)!.criCalls?.map((c) => c.method);
      expect(methods('Early')).toEqual(['Early']);
      // Late read only its own call; Early's was read when Early ended, and kept for it.
      expect(methods('Late')).toEqual(['Early', 'Late']);
      expect(r.runtimes[0]!.criCalls?.map((c) => `${c.method}:${c.count}`)).toEqual(['Early:1', 'Late:1']);
    });

    it('starts one node of a backend that allows only one', async () => {
      const started: number[] = [];
      await runMatrix(
        deps(
          { events: [] },
          {
            backends: [{ ...fakeBackend('alpha'), maxNodes: 1 }],
            scenarios: [timed([], 'a', 'node'), timed([], 'b', 'node')],
            nodesPerRuntime: 4,
            startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>, _p: unknown, i: number) => {
              started.push(i);
              return fakeNode(b, { events: [] }, i);
            },
          },
        ),
      );
      expect(started).toEqual([0]);
    });

    it("runs on the nodes that started when some of a runtime's nodes fail, and warns", async () => {
      const warnings: string[] = [];
      const r = await runMatrix(
        deps(
          { events: [] },
          {
            backends: [fakeBackend('alpha')],
            scenarios: [timed([], 'a', 'node'), timed([], 'b', 'node')],
            nodesPerRuntime: 2,
            progress: {
              ...silentProgress,
              child: () => ({ ...silentProgress, warn: (m: string) => warnings.push(m) }),
            },
            startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>, _p: unknown, i: number) => {
              if (i === 1) throw new Error('no memory');
              return fakeNode(b, { events: [] }, i);
            },
          },
        ),
      );
      expect(r.cells.map((c) => `${c.scenario}:${c.outcome}:${c.node}`)).toEqual([
        'a:passed:node-alpha',
        'b:passed:node-alpha',
      ]);
      expect(warnings).toEqual(['1 of 2 nodes did not start: no memory']);
    });

    /** Node 0 of `alpha` dies in the cell `kills`; the cells run one at a time, `kills` first. */
    const deadNodeRun = (nodesPerRuntime: number, failures: string[]) => {
      let dead = false;
      const kills = scenario(
        'kills',
        async () => {
          dead = true;
          throw new Error('node container exited');
        },
        { isolation: 'node', estimateMs: 60_000 },
      );
      return runMatrix(
        deps(
          { events: [] },
          {
            backends: [fakeBackend('alpha')],
            scenarios: [kills, timed([], 'later-1', 'node'), timed([], 'later-2', 'node')],
            nodesPerRuntime,
            maxParallelCells: 1,
            progress: {
              ...silentProgress,
              child: () => ({ ...silentProgress, fail: (m: string) => failures.push(m) }),
            },
            startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>, _p: unknown, i: number) => ({
              ...fakeNode(b, { events: [] }, i),
              gone: async () =>
                i === 0 && dead ? 'it runs no command: container is not running' : undefined,
            }),
          },
        ),
      );
    };

    it("moves a runtime's later cells off a node that died in a failed cell", async () => {
      const failures: string[] = [];
      const r = await deadNodeRun(2, failures);
      expect(r.cells.map((c) => `${c.scenario}:${c.outcome}:${c.node}`)).toEqual([
        'kills:failed:node-alpha',
        'later-1:passed:node-alpha-2',
        'later-2:passed:node-alpha-2',
      ]);
      expect(failures).toContain(
        "node node-alpha is gone after kills (it runs no command: container is not running); later cells run on alpha's other nodes",
      );
    });

    it('fails the rest of a runtime at once, naming the dead node, when it was the last', async () => {
      const failures: string[] = [];
      const r = await deadNodeRun(1, failures);
      const reason =
        'not run: node node-alpha, the last of alpha, was gone after kills: it runs no command: container is not running';
      expect(r.cells.map((c) => [c.scenario, c.outcome, c.reason])).toEqual([
        ['kills', 'failed', 'node container exited'],
        ['later-1', 'failed', reason],
        ['later-2', 'failed', reason],
      ]);
      expect(failures.at(-1)).toMatch(/no other node of alpha is left: 2 cell\(s\) not run$/);
    });
  });
});
