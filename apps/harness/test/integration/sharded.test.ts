// Issue 18's done-when, for real: the matrix (containerd, docker, fake × node-registration) split
// into 3 shards run as separate `kubelet-harness run --shard i/3` processes, two at once on this
// engine and the third at the same time on a second dockerd (DOCKER_HOST=unix://…), then
// `kubelet-harness merge`: the same cells as an unsharded run. The merged run's report then goes
// through `report --baseline --fail-on-regression` and opens in Chromium through real-run.test.ts.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_IMAGES, ensureImages } from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/node/project.js';
import type { RunResults } from '../../src/results/model.js';
import { type SecondDockerd, startSecondDockerd } from './second-dockerd.js';

const root = projectRoot();
const cli = join(root, 'apps/harness/dist/cli.js');
const MATRIX = ['--runtime', 'containerd,docker,fake', '--scenario', 'node-registration'];
const execFileP = promisify(execFile);

let dir: string;
let engine: SecondDockerd;
/** One commit for every process, as GITHUB_SHA is in CI: commits made meanwhile must not split the run. */
let commit: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-sharded-'));
  commit = (await execFileP('git', ['rev-parse', 'HEAD'], { cwd: root })).stdout.trim();
  // The workloads and the default release's node image: the matrix's runtimes (containerd-1.7,
  // docker-26) and the apiserver and registry all run on it. Not the other releases' node images
  // and the toolchain (1.5 of 2.1 GB), which this run never starts.
  const refs = await ensureImages([...DEFAULT_IMAGES]);
  engine = await startSecondDockerd();
  // What the harness would otherwise build on that engine first (minutes for the node image).
  await engine.load(Object.values(refs));
}, 300_000);
afterAll(async () => {
  await engine?.stop();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

/** `node dist/cli.js <args>`; resolves with the exit code and stderr. */
function harness(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child: ChildProcess = spawn(process.execPath, [cli, ...args], {
    env: { ...process.env, KH_STATE_DIR: join(dir, 'ledger'), KH_RUN_ID: '', GITHUB_SHA: commit, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdout?.resume();
  return new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stderr })),
  );
}

const readResults = async (path: string) => JSON.parse(await readFile(path, 'utf8')) as RunResults;
const cellsOf = (r: RunResults) => r.cells.map((c) => `${c.runtime}/${c.scenario}:${c.outcome}`);

describe('a sharded run on two engines', () => {
  it('3 shards in 3 processes, one on a second dockerd, merge into the unsharded run’s cells', async () => {
    const shards = await Promise.all(
      [1, 2, 3].map((i) =>
        harness(
          ['run', ...MATRIX, '--shard', `${i}/3`, '--out', join(dir, `shard-${i}`)],
          i === 3 ? { DOCKER_HOST: engine.host } : {},
        ),
      ),
    );
    for (const [i, s] of shards.entries()) expect(s.code, `shard ${i + 1}:\n${s.stderr}`).toBe(0);
    const parts = await Promise.all([1, 2, 3].map((i) => readResults(join(dir, `shard-${i}/results.json`))));
    for (const [i, p] of parts.entries()) {
      expect(p.shard).toMatchObject({ index: i + 1, total: 3 });
      expect(p.cells.map((c) => `${c.runtime}/${c.scenario}`)).toEqual(p.shard!.cells);
    }
    // Shard 3's nodes ran on the second engine: it saw the run's containers start.
    const { stdout: events } = await execFileP(
      'docker',
      [
        'events',
        '--since',
        parts[2]!.startedAt,
        '--until',
        new Date().toISOString(),
        '--filter',
        'event=start',
        '--filter',
        `label=kh.run=${parts[2]!.runId}`,
        '--format',
        '{{.Actor.Attributes.name}}',
      ],
      { env: { ...process.env, DOCKER_HOST: engine.host } },
    );
    expect(events.trim().split('\n').length).toBeGreaterThan(0);
    expect(events).toContain(`kh-${parts[2]!.runId}-`);

    const merged = await harness([
      'merge',
      ...[1, 2, 3].map((i) => join(dir, `shard-${i}/results.json`)),
      '--out',
      join(dir, 'merged'),
    ]);
    expect(merged.code, merged.stderr).toBe(0);
    const whole = await harness(['run', ...MATRIX, '--out', join(dir, 'whole')]);
    expect(whole.code, whole.stderr).toBe(0);
    const mergedResults = await readResults(join(dir, 'merged/results.json'));
    expect(cellsOf(mergedResults)).toEqual(cellsOf(await readResults(join(dir, 'whole/results.json'))));
    expect(mergedResults.mergedFrom).toEqual(parts.map((p) => p.runId));
    expect(mergedResults.commit).toBe(commit);

    // The nightly's gate on the merged run (against itself: no regression), then the report in Chromium.
    const gate = await harness([
      'report',
      '--input',
      join(dir, 'merged/results.json'),
      '--out',
      join(dir, 'merged/report.html'),
      '--baseline',
      join(dir, 'merged'),
      '--fail-on-regression',
    ]);
    expect(gate.code, gate.stderr).toBe(0);
    const chromium = await new Promise<{ code: number | null; out: string }>((resolve) => {
      let out = '';
      const child = spawn('npm', ['run', 'test:report-real', '-w', '@kh/harness'], {
        cwd: root,
        env: { ...process.env, KH_REAL_RESULTS: join(dir, 'merged/results.json') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
      });
      child.stderr.on('data', (c: Buffer) => {
        out += c.toString();
      });
      child.on('exit', (code) => resolve({ code, out }));
    });
    expect(chromium.code, chromium.out).toBe(0);
  }, 600_000);
});
