import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DockerShim } from '@kh/dockershim';
import { ensureImages, HostContainerd, type StartedHostContainerd } from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_CASES, type Comparison, type SuiteResult } from '../src/index.js';

// `cri-conformance --endpoint A --endpoint B`: our suite on a host containerd and on the dockershim
// (host dockerd), through the CLI as a contributor runs it.

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const progress = (line: string) => process.stderr.write(`${line}\n`);

let dir: string;
let shim: DockerShim;
let ctrd: StartedHostContainerd;
let images: string[];

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [CLI, '--busybox-image', images[0] ?? '', '--httpd-image', images[1] ?? '', ...args],
      { env: { ...process.env, TMPDIR: dir }, maxBuffer: 16 * 1024 * 1024 },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  const refs = await ensureImages(['pause', 'busybox', 'httpd'], { progress });
  dir = await mkdtemp(join(tmpdir(), 'kh-side-by-side-'));
  shim = await DockerShim.start({
    socketPath: join(dir, 'dockershim.sock'),
    podInfraContainerImage: refs.pause,
    restrictOomScoreAdj: true,
    // Docker's bridge: the host has no CNI config.
    networkPlugin: 'docker',
  });
  ctrd = await new HostContainerd().withImages([refs.busybox, refs.httpd]).withProgress(progress).start();
  images = ctrd.images.slice(1);
}, 180_000);

afterAll(async () => {
  await ctrd?.stop();
  await shim?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('cri-conformance --endpoint A --endpoint B', () => {
  it('runs both, prints the differences (none here), exits 0 and writes both results', async () => {
    const focus = /^(runtime info|logs) /;
    const n = ALL_CASES.filter((c) => focus.test(`${c.group} ${c.name}`)).length;
    const json = join(dir, 'out/both.json');
    const r = await cli(
      '--endpoint',
      ctrd.endpoint,
      '--endpoint',
      shim.endpoint,
      '--focus',
      focus.source,
      '--json',
      json,
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain(`A = containerd 1.6.20~ds1 (${ctrd.endpoint})`);
    expect(r.stdout).toMatch(/B = docker 20\.10\.\S+ \(unix:\/\/.*dockershim\.sock\)/);
    expect(r.stdout).toContain('Where they differ (0):\n  (none)');
    expect(r.stdout).toContain('  pass  pass  logs › ReopenContainerLog starts a new file after rotation');
    expect(r.stdout).toMatch(
      new RegExp(
        `A: ${n} passed, 0 failed, 0 skipped; B: ${n} passed, 0 failed, 0 skipped\nNothing that passes on A fails on B\\.\n$`,
      ),
    );
    const out = JSON.parse(await readFile(json, 'utf8')) as {
      results: SuiteResult[];
      comparison: Comparison;
    };
    expect(out.results.map((x) => [x.runtime.name, x.totals.passed])).toEqual([
      ['containerd', n],
      ['docker', n],
    ]);
    expect(out.comparison.rows).toHaveLength(n);
  });

  it('exits 1 and lists the cases B fails that A passes, with B message', async () => {
    // containerd 1.6 answers NOT_FOUND to StopPodSandbox/StopContainer of an unknown id (the CRI asks
    // for success; fixed in 1.7): with the dockershim as the reference that is a regression of B.
    const r = await cli('--endpoint', shim.endpoint, '--endpoint', ctrd.endpoint, '--focus', '^idempotence ');
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const differ = r.stdout.slice(r.stdout.indexOf('Where they differ'), r.stdout.indexOf('The same'));
    expect(differ).toMatch(/^Where they differ \(2\):\n {2}A {5}B {5}case\n/);
    expect(differ).toMatch(
      / {2}pass {2}FAIL {2}idempotence › StopPodSandbox of an unknown sandbox succeeds\n {8}B: NOT_FOUND: StopPodSandbox: .*not found\n/,
    );
    expect(differ).toContain('  pass  FAIL  idempotence › StopContainer of an unknown container succeeds\n');
    expect(r.stdout).toMatch(/2 case\(s\) pass on A and fail on B\.\n$/);
  });
});
