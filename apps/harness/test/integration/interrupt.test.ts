// The CLI as a user runs it: Ctrl-C during a scenario ends the run with 130 after removing
// everything; a kill -9 leaves containers that the ledger sweep of the next run removes.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeLeftovers } from '@kh/testkit';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/node/project.js';
import { RunLedger } from '../../src/world/ledger.js';
import { isRunTempDir, removeRunLeftovers } from '../../src/world/leftovers.js';

const docker = new Docker();
const cli = join(projectRoot(), 'apps/harness/dist/cli.js');
let dir: string;
const runIds: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-interrupt-'));
});
afterAll(async () => {
  for (const runId of runIds) await removeLeftovers({ runId });
  await rm(dir, { recursive: true, force: true });
}, 60_000);

const mountedTempDirs = async (runId: string) =>
  (await docker.listContainers({ all: true, filters: { label: [`kh.run=${runId}`] } })).flatMap((c) =>
    c.Mounts.filter((m) => isRunTempDir(m)).map((m) => m.Source),
  );

const containersOf = async (runId: string) =>
  (await docker.listContainers({ all: true, filters: { label: [`kh.run=${runId}`] } })).length;

/** Starts `kubelet-harness run` on the fake backend; resolves once `line` appears on stderr. */
function startRun(out: string, until: RegExp) {
  const child: ChildProcess = spawn(
    process.execPath,
    [cli, 'run', '--runtime', 'fake', '--scenario', 'status-reporting', '--out', out],
    { env: { ...process.env, KH_STATE_DIR: join(dir, 'ledger'), KH_RUN_ID: '' }, stdio: 'pipe' },
  );
  let stderr = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const reached = new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
      const runId = /run (\w+):/.exec(stderr)?.[1];
      if (runId && until.test(stderr)) resolve(runId);
    });
    void exited.then(() => reject(new Error(`run exited early:\n${stderr}`)));
  });
  return { child, exited, reached, stderr: () => stderr };
}

describe('kubelet-harness run interrupted', () => {
  it('Ctrl-C ends the running cell, cleans up everything and exits 130', async () => {
    const out = join(dir, 'sigint');
    const run = startRun(out, /status-reporting …/);
    const runId = await run.reached;
    runIds.push(runId);
    expect(await containersOf(runId)).toBe(4); // apiserver, two registries, fake node
    run.child.kill('SIGINT');
    expect(await run.exited).toBe(130);
    expect(run.stderr()).toContain('SIGINT: stopping; cleaning up');
    const results = JSON.parse(await readFile(join(out, 'results.json'), 'utf8'));
    expect(results.cells[0]).toMatchObject({
      scenario: 'status-reporting',
      outcome: 'failed',
      reason: 'run interrupted',
    });
    expect(await containersOf(runId)).toBe(0);
    expect(await readdir(join(dir, 'ledger'))).toEqual([]);
  }, 120_000);

  it('after a kill -9 the next run sweeps what was left', async () => {
    const run = startRun(join(dir, 'sigkill'), /status-reporting …/);
    const runId = await run.reached;
    runIds.push(runId);
    run.child.kill('SIGKILL');
    await run.exited;
    expect(await containersOf(runId)).toBe(4);
    const tempDirs = await mountedTempDirs(runId);
    expect(tempDirs.length).toBeGreaterThanOrEqual(2); // the apiserver's and the fake node's /run/kh
    const swept = await new RunLedger(join(dir, 'ledger')).removeAbandoned(removeRunLeftovers);
    expect(swept).toEqual([runId]);
    expect(await containersOf(runId)).toBe(0);
    for (const d of tempDirs) expect(existsSync(d), d).toBe(false);
    expect((await readdir(tmpdir())).filter((n) => n.startsWith(`kh-harness-${runId}-`))).toEqual([]);
    // The checkout is mounted into every container of the run; clean-up must never take it along.
    expect(existsSync(join(projectRoot(), 'package.json'))).toBe(true);
  }, 120_000);
});
