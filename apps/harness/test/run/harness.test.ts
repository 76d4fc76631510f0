import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runHarness } from '../../src/run/harness.js';
import { RunLedger } from '../../src/world/ledger.js';
import { fakeBackend, fakeNode, fakeWorld, type Journal, scenario, silentProgress } from './fakes.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-harness-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const suite = [
  scenario('ok', async (ctx) => ctx.check.ok('fine', true)),
  scenario('bad', async (ctx) => ctx.check.ok('broken', false, 'actual', 'expected')),
];

function deps(journal: Journal, removeRun: (id: string) => Promise<unknown>) {
  return {
    backends: [fakeBackend('alpha'), fakeBackend('beta')],
    runId: 'run-1',
    ledger: new RunLedger(join(dir, 'ledger')),
    removeRun,
    startWorld: async () => fakeWorld(journal),
    startNode: async (_w: unknown, b: ReturnType<typeof fakeBackend>) => fakeNode(b, journal),
  };
}

describe('runHarness', () => {
  it('writes results.json and junit.xml, prints the table and sweeps the run', async () => {
    const swept: string[] = [];
    const printed: string[] = [];
    const journal: Journal = { events: [] };
    const { results, files } = await runHarness(
      { runtimes: ['beta'], scenarios: undefined, outDir: join(dir, 'out') },
      suite,
      { progress: silentProgress, print: (t) => printed.push(t) },
      deps(journal, async (id) => swept.push(id)),
    );
    expect(results.cells.map((c) => `${c.runtime}/${c.scenario}:${c.outcome}`)).toEqual([
      'beta/ok:passed',
      'beta/bad:failed',
    ]);
    const json = JSON.parse(await readFile(files.json, 'utf8'));
    expect(json.cells[1].assertions[0]).toMatchObject({
      name: 'broken',
      expected: 'expected',
      actual: 'actual',
    });
    expect(typeof json.cells[0].durationMs).toBe('number');
    expect(await readFile(files.junit, 'utf8')).toContain(
      '<testcase classname="kubelet-harness.beta" name="bad"',
    );
    expect(printed.join('')).toMatch(/ok\s+PASS/);
    expect(swept).toEqual(['run-1']);
    expect(await readdir(join(dir, 'ledger'))).toEqual([]);
  });

  it('on its --timeout fails the running cell, fails the unstarted ones as not run, and still cleans up and writes results', async () => {
    const swept: string[] = [];
    const failures: string[] = [];
    const journal: Journal = { events: [] };
    const hangs = scenario('hangs', () => new Promise(() => {}));
    const { results, files } = await runHarness(
      // One cell at a time: `ok` waits behind `hangs` and never starts.
      {
        runtimes: ['alpha'],
        scenarios: undefined,
        outDir: join(dir, 'out'),
        timeoutMs: 300,
        maxParallelCells: 1,
      },
      [hangs, ...suite],
      { progress: { ...silentProgress, fail: (m) => failures.push(m) } },
      deps(journal, async (id) => swept.push(id)),
    );
    const ranOut = "the run's --timeout of 300ms ran out";
    expect(results.cells.map((c) => [c.scenario, c.outcome, c.reason])).toEqual([
      ['hangs', 'failed', ranOut],
      ['ok', 'failed', `not run: ${ranOut}`],
      ['bad', 'failed', `not run: ${ranOut}`],
    ]);
    expect(failures[0]).toBe(`${ranOut}: no cell starts any more, the running ones end as failed`);
    expect(JSON.parse(await readFile(files.json, 'utf8')).cells).toHaveLength(3);
    expect(journal.events).toEqual(expect.arrayContaining(['delete ns hangs-alpha', 'node alpha stopped']));
    expect(journal.events.at(-1)).toBe('world stopped');
    expect(swept).toEqual(['run-1']);
  });

  it('first removes leftovers of abandoned runs', async () => {
    const ledgerDir = join(dir, 'ledger');
    const { writeFile, mkdir } = await import('node:fs/promises');
    await mkdir(ledgerDir, { recursive: true });
    await writeFile(join(ledgerDir, 'old.json'), JSON.stringify({ runId: 'old', pid: 2 ** 22 + 7 }));
    const swept: string[] = [];
    await runHarness(
      { runtimes: ['alpha'], scenarios: ['ok'], outDir: join(dir, 'out') },
      suite,
      { progress: silentProgress },
      deps({ events: [] }, async (id) => swept.push(id)),
    );
    expect(swept).toEqual(['old', 'run-1']);
  });

  it('sweeps and keeps the ledger record when the final sweep fails', async () => {
    const warnings: string[] = [];
    await runHarness(
      { runtimes: ['alpha'], scenarios: ['ok'], outDir: join(dir, 'out') },
      suite,
      { progress: { ...silentProgress, warn: (m) => warnings.push(m) } },
      deps({ events: [] }, async () => {
        throw new Error('engine down');
      }),
    );
    expect(warnings[0]).toMatch(/final clean-up of run run-1 failed .*engine down/);
    expect(await readdir(join(dir, 'ledger'))).toEqual(['run-1.json']);
  });

  it('rejects unknown names before creating anything', async () => {
    const swept: string[] = [];
    await expect(
      runHarness(
        { runtimes: ['cri-o'], scenarios: undefined, outDir: join(dir, 'out') },
        suite,
        { progress: silentProgress },
        deps({ events: [] }, async (id) => swept.push(id)),
      ),
    ).rejects.toThrow('unknown runtime "cri-o"');
    expect(swept).toEqual([]);
  });

  it("marks quarantined cells from kh.config.json's entries; the counts line names the held failure, an expired entry is warned of", async () => {
    const quarantine = [{ cell: '*/bad', owner: 'sig-node', expires: '2026-12-31', reason: 'known' }];
    const infos: string[] = [];
    const warnings: string[] = [];
    const io = {
      progress: {
        ...silentProgress,
        info: (m: string) => infos.push(m),
        warn: (m: string) => warnings.push(m),
      },
    };
    const held = await runHarness(
      { runtimes: ['beta'], scenarios: undefined, outDir: join(dir, 'held') },
      suite,
      io,
      { ...deps({ events: [] }, async () => {}), quarantine, now: () => new Date('2026-12-31T12:00:00Z') },
    );
    expect(held.results.cells.map((c) => c.quarantine)).toEqual([
      undefined,
      { owner: 'sig-node', expires: '2026-12-31', reason: 'known' },
    ]);
    expect(JSON.parse(await readFile(held.files.json, 'utf8')).cells[1].quarantine.owner).toBe('sig-node');
    expect(infos.at(-1)).toMatch(/^1 passed, 0 failed, 0 skipped, 1 quarantined in /);
    expect(warnings).toEqual([]);

    const expired = await runHarness(
      { runtimes: ['beta'], scenarios: undefined, outDir: join(dir, 'expired') },
      suite,
      io,
      { ...deps({ events: [] }, async () => {}), quarantine, now: () => new Date('2027-01-01T00:00:00Z') },
    );
    expect(expired.results.cells[1]!.quarantine).toBeUndefined();
    expect(infos.at(-1)).toMatch(/^1 passed, 1 failed, 0 skipped in /);
    expect(warnings).toEqual([
      'quarantine of */bad (sig-node) expired on 2026-12-31: beta/bad fail the run again',
    ]);
  });
});
