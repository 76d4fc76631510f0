import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import { validateResults } from '../../src/results/load.js';
import { MergeError, mergeResults } from '../../src/results/merge.js';
import type { RunResults, ShardInfo } from '../../src/results/model.js';
import { cell, run } from '../report/fixtures.js';

const matrix = ['a/x', 'a/y', 'b/x', 'b/y'];
const stats = (p99: number, count: number) => ({
  source: 'agent' as const,
  method: 'ListPodSandbox',
  count,
  errors: 0,
  min: 1,
  p50: p99 / 2,
  p90: p99,
  p99,
  max: p99,
});

function shard(index: number, cellIds: string[], over: Partial<RunResults> = {}): RunResults {
  const info: ShardInfo = { index, total: 3, cells: cellIds, matrix };
  const r = run(
    cellIds.map((id) => {
      const [runtime, scenario] = id.split('/') as [string, string];
      return cell(runtime, scenario);
    }),
    {
      runId: `s${index}`,
      commit: 'c0ffee',
      shard: info,
      scenarios: ['x', 'y'],
      startedAt: `2026-11-25T10:0${index}:00.000Z`,
      finishedAt: `2026-11-25T10:1${index}:00.000Z`,
      ...over,
    },
  );
  return r;
}

describe('mergeResults', () => {
  it('puts the shards back into the matrix order, with every runtime once', () => {
    const parts = [shard(1, ['b/y', 'a/x']), shard(2, ['a/y']), shard(3, ['b/x'])];
    parts[0]!.runtimes[1]!.criCalls = [stats(40, 3)];
    parts[0]!.runtimes[1]!.startupMs = 5_000;
    parts[1]!.runtimes[0]!.criCalls = [{ ...stats(10, 5), errors: 1, codes: { UNIMPLEMENTED: 1 } }];
    parts[1]!.runtimes[0]!.startupMs = 6_000;
    const { results, missing, duplicates } = mergeResults(parts);
    expect(missing).toEqual([]);
    expect(duplicates).toEqual([]);
    expect(results.cells.map((c) => `${c.runtime}/${c.scenario}`)).toEqual(matrix);
    expect(results.runtimes.map((r) => r.name)).toEqual(['a', 'b']);
    // Runtime a ran in shards 1 and 2: counts add up, percentiles are the higher (an upper bound).
    expect(results.runtimes[0]).toMatchObject({
      startupMs: 6_000,
      criCalls: [{ count: 8, errors: 1, codes: { UNIMPLEMENTED: 1 }, p99: 40, p50: 20, min: 1 }],
    });
    // The contract table is rebuilt from the merged statistics.
    expect(results.runtimes[0]!.criContract?.find((r) => r.method === 'ListPodSandbox')).toEqual({
      method: 'ListPodSandbox',
      service: 'RuntimeService',
      status: 'unimplemented',
      count: 8,
      codes: { UNIMPLEMENTED: 1 },
    });
    expect(results).toMatchObject({
      runId: 's1+s2+s3',
      mergedFrom: ['s1', 's2', 's3'],
      commit: 'c0ffee',
      scenarios: ['x', 'y'],
      startedAt: '2026-11-25T10:01:00.000Z',
      finishedAt: '2026-11-25T10:13:00.000Z',
      durationMs: 12 * 60_000,
    });
    expect(results.shard).toBeUndefined();
    expect(validateResults(JSON.parse(JSON.stringify(results)))).toBeTruthy();
  });

  it('reports a missing cell and records it as failed; reports a duplicate and keeps the first', () => {
    const first = cell('a', 'x', { durationMs: 1 });
    const parts = [shard(1, ['a/x']), shard(2, ['a/x', 'b/x'])];
    parts[0]!.cells[0] = first;
    const { results, missing, duplicates } = mergeResults(parts);
    expect(missing).toEqual(['a/y', 'b/y']);
    expect(duplicates).toEqual(['a/x']);
    expect(results.cells.find((c) => c.runtime === 'a' && c.scenario === 'x')).toBe(first);
    expect(results.cells.find((c) => c.runtime === 'b' && c.scenario === 'y')).toMatchObject({
      outcome: 'failed',
      reason: expect.stringMatching(/^missing: /),
    });
  });

  it("holds the merged cells' pod start-up against the floor a shard measured", () => {
    const parts = [shard(1, ['a/x', 'b/x']), shard(2, ['a/y', 'b/y'])];
    parts[0]!.cells[0]!.startupFloor = { singleMs: 200 };
    parts[0]!.cells[0]!.podStartupMs = [300];
    parts[1]!.cells[0]!.podStartupMs = [500, 700];
    // A stale target from the shard is replaced, not kept.
    parts[1]!.runtimes[0]!.startupTarget = { p50Ms: 1, floorMs: 1, ratio: 1, limit: 2, met: true };
    const { results } = mergeResults(parts);
    expect(results.runtimes.find((r) => r.name === 'a')?.startupTarget).toEqual({
      p50Ms: 500,
      floorMs: 200,
      ratio: 2.5,
      limit: 2,
      met: false,
    });
    expect(results.runtimes.find((r) => r.name === 'b')?.startupTarget).toBeUndefined();
  });

  it("adds the parts' CPU-seconds up, and records none when a part has none", () => {
    const cpu = (node: string, seconds: number) => ({
      nodes: [{ name: node, runtime: 'a', seconds }],
      world: [{ name: 'apiserver', seconds: 1 }],
      harnessSeconds: 2,
      totalSeconds: seconds + 3,
      hostSeconds: seconds * 2,
    });
    const parts = [
      shard(1, ['a/x', 'b/y'], { cpu: cpu('n1', 10) }),
      shard(2, ['a/y'], { cpu: cpu('n2', 20) }),
      shard(3, ['b/x'], { cpu: cpu('n3', 30.5) }),
    ];
    const merged = mergeResults(parts).results.cpu;
    expect(merged).toEqual({
      nodes: [
        { name: 'n1', runtime: 'a', seconds: 10 },
        { name: 'n2', runtime: 'a', seconds: 20 },
        { name: 'n3', runtime: 'a', seconds: 30.5 },
      ],
      world: [1, 2, 3].map(() => ({ name: 'apiserver', seconds: 1 })),
      harnessSeconds: 6,
      totalSeconds: 69.5,
      hostSeconds: 121,
    });
    delete parts[2]!.cpu;
    expect(mergeResults(parts).results.cpu).toBeUndefined();
  });

  it('refuses parts from different commits unless forced', () => {
    const parts = [shard(1, ['a/x', 'a/y']), shard(2, ['b/x', 'b/y'], { commit: 'deadbeef' })];
    expect(() => mergeResults(parts)).toThrow(MergeError);
    expect(() => mergeResults(parts)).toThrow(/different commits \(s1: c0ffee, s2: deadbeef\); --force/);
    const forced = mergeResults(parts, { force: true }).results;
    expect(forced.commit).toBeUndefined();
    expect(forced.cells).toHaveLength(4);
  });
});

describe('kubelet-harness merge', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kh-merge-test-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function cli(...argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(['merge', ...argv], { out: (s) => out.push(s), err: (s) => err.push(s) });
    return { code, stdout: out.join(''), stderr: err.join('') };
  }

  async function write(name: string, r: RunResults): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, JSON.stringify(r));
    return path;
  }

  it('writes results.json, junit.xml and report.html; exit 0 when the cells are complete', async () => {
    const a = await write('a.json', shard(1, ['a/x', 'a/y']));
    const b = await write('b.json', shard(2, ['b/x', 'b/y']));
    const r = await cli(a, b, '--out', join(dir, 'merged'));
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toContain('merged 2 files, 4 cells (0 missing, 0 duplicate)');
    const merged = JSON.parse(await readFile(join(dir, 'merged/results.json'), 'utf8')) as RunResults;
    expect(merged.cells).toHaveLength(4);
    expect(await readFile(join(dir, 'merged/junit.xml'), 'utf8')).toContain('tests="4"');
    expect(await readFile(join(dir, 'merged/report.html'), 'utf8')).toContain('<!doctype html>');
  });

  it('exits 1 naming missing and duplicate cells, 2 for other commits without --force or bad arguments', async () => {
    const a = await write('a.json', shard(1, ['a/x', 'a/y']));
    const again = await write('again.json', shard(2, ['a/y']));
    const r = await cli(a, again, '--out', join(dir, 'm1'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('duplicate cell a/y');
    expect(r.stderr).toContain('missing cell b/x');
    const other = await write('other.json', shard(2, ['b/x', 'b/y'], { commit: 'deadbeef' }));
    const refused = await cli(a, other, '--out', join(dir, 'm2'));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('different commits');
    expect((await cli(a, other, '--out', join(dir, 'm3'), '--force')).code).toBe(0);
    expect((await cli(a)).code).toBe(2);
    expect((await cli('--out', dir)).code).toBe(2);
    expect((await cli(join(dir, 'none.json'), '--out', dir)).stderr).toContain('no such file');
  });
});
