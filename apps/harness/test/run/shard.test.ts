import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mergeResults } from '../../src/results/merge.js';
import type { RunResults } from '../../src/results/model.js';
import { runHarness } from '../../src/run/harness.js';
import { parseRunOptions } from '../../src/run/options.js';
import {
  cellKey,
  estimateCells,
  loadDurations,
  matrixCells,
  parseShard,
  selectShard,
  splitCells,
} from '../../src/run/shard.js';
import { RunLedger } from '../../src/world/ledger.js';
import { cell, run } from '../report/fixtures.js';
import { fakeBackend, fakeNode, fakeWorld, type Journal, scenario, silentProgress } from './fakes.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-shard-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const backends = [fakeBackend('containerd', ['real-containers']), fakeBackend('fake')];
/** What each scenario says a cell of it takes (its `estimateMs`). */
const ESTIMATE_MS: Record<string, number> = {
  'node-registration': 3_000,
  'pod-lifecycle': 33_000,
  probes: 22_000,
  gc: 45_000,
};
const suite = Object.entries(ESTIMATE_MS).map(([name, estimateMs]) =>
  scenario(name, async (ctx) => ctx.check.ok(name, true), {
    estimateMs,
    ...(name === 'node-registration' ? {} : { needs: ['real-containers'] }),
  }),
);

describe('parseShard and the run options', () => {
  it('reads i/n with 1 ≤ i ≤ n and refuses anything else', () => {
    expect(parseShard('2/3')).toEqual({ index: 2, total: 3 });
    for (const bad of ['0/3', '4/3', '1/0', '1', 'a/b', '1/2/3'])
      expect(() => parseShard(bad), bad).toThrow(/--shard must be i\/n/);
  });

  it('takes --shard and --durations, or KH_SHARD and KH_DURATIONS; --durations alone orders the cells', () => {
    expect(parseRunOptions(['--shard', '1/2', '--durations', 'a.json,dir'], {})).toMatchObject({
      shard: { index: 1, total: 2 },
      durations: ['a.json', 'dir'],
    });
    expect(parseRunOptions([], { KH_SHARD: '3/4' }).shard).toEqual({ index: 3, total: 4 });
    expect(parseRunOptions([], {}).shard).toBeUndefined();
    expect(parseRunOptions(['--durations', 'x'], {})).toMatchObject({ durations: ['x'] });
  });
});

describe('splitCells', () => {
  it('puts every cell in exactly one shard, the same way every time, for any durations', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(200_000), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 6 }),
        (ms, total) => {
          const cells = ms.map((_, i) => ({ runtime: `r${i % 3}`, scenario: `s${i}` }));
          const est = new Map(cells.map((c, i) => [cellKey(c), ms[i]!]));
          const shards = splitCells(cells, total, est);
          expect(shards).toHaveLength(total);
          expect(shards.flat().map(cellKey).sort()).toEqual(cells.map(cellKey).sort());
          const keys = (s: typeof shards) => s.map((shard) => shard.map(cellKey).sort());
          expect(keys(splitCells([...cells].reverse(), total, est))).toEqual(keys(shards));
        },
      ),
    );
  });

  it('balances by duration: the longest cells go to different shards', () => {
    const cells = ['a', 'b', 'c', 'd', 'e', 'f'].map((s) => ({ runtime: 'x', scenario: s }));
    const est = new Map([
      ['x/a', 100_000],
      ['x/b', 90_000],
      ['x/c', 60_000],
      ['x/d', 40_000],
      ['x/e', 20_000],
      ['x/f', 10_000],
    ]);
    const shards = splitCells(cells, 2, est);
    const load = shards.map((s) => s.reduce((sum, c) => sum + est.get(cellKey(c))!, 0));
    expect(load).toEqual([160_000, 160_000]);
    // Within a shard, cells keep the matrix order.
    expect(shards[0]!.map((c) => c.scenario)).toEqual(['a', 'd', 'e']);
  });

  it('counts a node start-up for each runtime a shard takes on, so equal cells of one runtime stay together', () => {
    const cells = [
      { runtime: 'a', scenario: 's1' },
      { runtime: 'b', scenario: 's1' },
      { runtime: 'a', scenario: 's2' },
      { runtime: 'b', scenario: 's2' },
    ];
    const est = new Map(cells.map((c) => [cellKey(c), 1_000]));
    const shards = splitCells(
      cells,
      2,
      est,
      new Map([
        ['a', 5_000],
        ['b', 5_000],
      ]),
    );
    expect(shards.map((s) => new Set(s.map((c) => c.runtime)).size)).toEqual([1, 1]);
  });
});

describe('estimates and durations', () => {
  it('uses recorded durations, else 0 for a cell that will skip, else the static estimate', () => {
    const est = estimateCells(backends, suite, {
      cells: new Map([['containerd/gc', 123_000]]),
      startup: new Map(),
    });
    expect(est.get('containerd/gc')).toBe(123_000);
    expect(est.get('containerd/probes')).toBe(ESTIMATE_MS.probes);
    expect(est.get('fake/probes')).toBe(0);
    expect(est.get('fake/node-registration')).toBe(ESTIMATE_MS['node-registration']);
  });

  it('reads results files and directories (recursively); the latest run wins, skipped cells do not count', async () => {
    const older = run([cell('containerd', 'gc', { durationMs: 100_000 })], {
      startedAt: '2026-11-20T00:00:00.000Z',
    });
    const newer = run(
      [
        cell('containerd', 'gc', { durationMs: 150_000 }),
        cell('fake', 'gc', { outcome: 'skipped', durationMs: 0 }),
      ],
      { startedAt: '2026-11-21T00:00:00.000Z' },
    );
    newer.runtimes[0]!.startupMs = 4_200;
    await mkdir(join(dir, 'artifacts/shard-2'), { recursive: true });
    await writeFile(join(dir, 'artifacts/shard-2/results.json'), JSON.stringify(newer));
    await writeFile(join(dir, 'old.json'), JSON.stringify(older));
    const d = await loadDurations([join(dir, 'artifacts'), join(dir, 'old.json')]);
    expect([...d.cells]).toEqual([['containerd/gc', 150_000]]);
    expect(d.startup.get('containerd')).toBe(4_200);
    await expect(loadDurations([join(dir, 'nope')])).rejects.toThrow(/no such file or directory/);
  });
});

describe('run --shard', () => {
  function deps(journal: Journal, runId: string) {
    return {
      backends,
      runId,
      commit: 'abc123',
      ledger: new RunLedger(join(dir, 'ledger')),
      removeRun: async () => {},
      startWorld: async () => fakeWorld(journal),
      startNode: async (_w: unknown, b: (typeof backends)[number], _p: unknown, i: number) => {
        // A runtime's first node stands for the runtime; its further nodes are lanes.
        if (i === 0) journal.events.push(`start ${b.name}`);
        return fakeNode(b, journal, i);
      },
    };
  }

  it('runs only its shard, records it with the whole matrix, and the shards merge into the unsharded run', async () => {
    const whole = await runHarness(
      { runtimes: undefined, scenarios: undefined, outDir: join(dir, 'all') },
      suite,
      { progress: silentProgress },
      deps({ events: [] }, 'all'),
    );
    const parts: RunResults[] = [];
    const started: string[][] = [];
    for (const index of [1, 2, 3]) {
      const journal: Journal = { events: [] };
      const { results } = await runHarness(
        {
          runtimes: undefined,
          scenarios: undefined,
          outDir: join(dir, `s${index}`),
          shard: { index, total: 3 },
        },
        suite,
        { progress: silentProgress },
        deps(journal, `s${index}`),
      );
      expect(results.shard).toMatchObject({
        index,
        total: 3,
        matrix: matrixCells(backends, suite).map(cellKey),
      });
      expect(results.cells.map(cellKey)).toEqual(results.shard!.cells);
      expect(results.commit).toBe('abc123');
      started.push(journal.events.filter((e) => e.startsWith('start ')));
      parts.push(results);
    }
    // A shard starts only the runtimes it has cells on.
    for (const [i, p] of parts.entries())
      expect(started[i]).toEqual(
        backends
          .filter((b) => p.shard!.cells.some((c) => c.startsWith(`${b.name}/`)))
          .map((b) => `start ${b.name}`),
      );
    const merged = mergeResults(parts);
    expect(merged.missing).toEqual([]);
    expect(merged.duplicates).toEqual([]);
    const outcome = (r: RunResults) => r.cells.map((c) => `${cellKey(c)}:${c.outcome}`);
    expect(outcome(merged.results)).toEqual(outcome(whole.results));
  });

  it('balances with the durations it is given, and every shard computes the same split', async () => {
    await writeFile(
      join(dir, 'timed.json'),
      JSON.stringify(run([cell('fake', 'node-registration', { durationMs: 500_000 })])),
    );
    const durations = await loadDurations([join(dir, 'timed.json')]);
    const shards = [1, 2].map((index) => selectShard({ index, total: 2 }, backends, suite, durations));
    // The slow cell has a shard to itself.
    expect(shards.map((s) => s.cells).find((c) => c.includes('fake/node-registration'))).toEqual([
      'fake/node-registration',
    ]);
    expect(shards[0]!.matrix).toEqual(shards[1]!.matrix);
    expect([...shards[0]!.cells, ...shards[1]!.cells].sort()).toEqual([...shards[0]!.matrix].sort());
  });
});
