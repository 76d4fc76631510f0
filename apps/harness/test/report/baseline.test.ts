// Each kind of regression `report --baseline` gates on, against a real run's results.json
// (`run --runtime containerd,fake --scenario node-registration`, committed as recorded): the
// baseline is that file, the current run the same file with one thing made worse.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReportCommand } from '../../src/report/cli.js';
import type { RunResults } from '../../src/results/model.js';
import { loadFixture } from './fixtures.js';

const REAL = fileURLToPath(new URL('../fixtures/results.real-node-registration.json', import.meta.url));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-baseline-test-'));
  // The baseline as a CI artifact unpacks it: a directory holding one results.json.
  await mkdir(join(dir, 'last-green/merged'), { recursive: true });
  await writeFile(join(dir, 'last-green/merged/results.json'), JSON.stringify(loadFixture(REAL)));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes a worsened copy of the real run and reports it against the real run. */
async function report(worsen: (r: RunResults) => void, ...flags: string[]) {
  const current = loadFixture(REAL);
  worsen(current);
  const input = join(dir, `current-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(input, JSON.stringify(current));
  const out: string[] = [];
  const err: string[] = [];
  const code = await runReportCommand(
    ['-i', input, '-o', join(dir, 'report.html'), '--baseline', join(dir, 'last-green'), ...flags],
    { stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) } },
  );
  return { code, stdout: out.join(''), stderr: err.join('') };
}

const containerd = (r: RunResults) => r.cells.find((c) => c.runtime === 'containerd')!;
const agentCall = (r: RunResults, method: string) =>
  r.runtimes
    .find((x) => x.name === 'containerd')!
    .criCalls!.find((c) => c.source === 'agent' && c.method === method)!;

describe('report --baseline on a real run', () => {
  it('the run against itself: no regression, exit 0 even with --fail-on-regression', async () => {
    const r = await report(() => {}, '--fail-on-regression');
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toContain(
      '2 cells: 2 passed, 0 failed, 0 skipped; 0 regressions against baseline fd29b81b',
    );
  });

  it('a cell that passed and now fails', async () => {
    const worse = (r: RunResults) => {
      containerd(r).outcome = 'failed';
    };
    const r = await report(worse, '--fail-on-regression');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('1 regression against baseline fd29b81b (containerd/node-registration)');
    // Without --fail-on-regression the report is written and the exit status stays 0.
    expect((await report(worse)).code).toBe(0);
  });

  it('a cell 1.5× slower (not 1.49×)', async () => {
    const slower = (factor: number) => (r: RunResults) => {
      containerd(r).durationMs = Math.ceil(containerd(r).durationMs * factor);
    };
    // The real cell takes 0.6 s: below the default 500 ms floor for jitter, so the floor is lowered.
    const r = await report(slower(1.5), '--fail-on-regression', '--regression-min-ms', '0');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('(containerd/node-registration)');
    expect((await report(slower(1.49), '--fail-on-regression', '--regression-min-ms', '0')).code).toBe(0);
    // With the default floor, +0.3 s on a 0.6 s cell is jitter.
    expect((await report(slower(1.5), '--fail-on-regression')).code).toBe(0);
  });

  it("a CRI method whose p99 is 2× higher (not 1.99×, nor a sub-5 ms call's doubling)", async () => {
    const p99 = (method: string, factor: number) => (r: RunResults) => {
      const c = agentCall(r, method);
      c.p99 *= factor;
      c.max = Math.max(c.max, c.p99);
    };
    const r = await report(p99('ListPodSandbox', 2), '--fail-on-regression');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      '1 regression against baseline fd29b81b (containerd agent ListPodSandbox p99)',
    );
    expect((await report(p99('ListPodSandbox', 1.99), '--fail-on-regression')).code).toBe(0);
    // ListContainerStats took 1.6 ms: 2× is 1.6 ms more, under the 5 ms floor.
    expect((await report(p99('ListContainerStats', 2), '--fail-on-regression')).code).toBe(0);
    expect(
      (await report(p99('ListContainerStats', 2), '--fail-on-regression', '--cri-regression-min-ms', '1'))
        .code,
    ).toBe(1);
  });

  it('refuses a baseline directory with no results.json, or several', async () => {
    await mkdir(join(dir, 'empty'), { recursive: true });
    const out: string[] = [];
    const io = { stdout: { write: () => {} }, stderr: { write: (s: string) => out.push(s) } };
    expect(
      await runReportCommand(['-i', REAL, '-o', join(dir, 'r.html'), '-b', join(dir, 'empty')], io),
    ).toBe(2);
    expect(out.join('')).toContain('no results.json in this directory');
    await mkdir(join(dir, 'second'), { recursive: true });
    await writeFile(join(dir, 'second/results.json'), JSON.stringify(loadFixture(REAL)));
    expect(await runReportCommand(['-i', REAL, '-o', join(dir, 'r.html'), '-b', dir], io)).toBe(2);
    expect(out.join('')).toMatch(/\d+ results\.json files in this directory/);
  });
});
