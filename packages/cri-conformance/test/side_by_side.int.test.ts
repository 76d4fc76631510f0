import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { normalizeImageRef } from '@kh/apimachinery';
import {
  DOCKERSHIM_CNI_FLAGS,
  ensureImages,
  NodeContainer,
  POD_SUBNET,
  type StartedNodeContainer,
} from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_CASES, type Comparison, type SuiteResult, startDockershim, withCheckout } from '../src/index.js';

// `cri-conformance --endpoint A --endpoint B` through the CLI, as a contributor runs it: A is
// containerd in a node container, B the dockershim next to dockerd in another node of the same
// image. The command dials both nodes' CRI sockets from here; the host's engine only runs the
// nodes. Both nodes mount one host directory at one path, so one --log-dir serves both runtimes.

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const LOGS_IN_NODE = '/var/log/kh-conformance';
const progress = (line: string) => process.stderr.write(`${line}\n`);

let dir: string;
let ctrd: StartedNodeContainer;
let shim: StartedNodeContainer;
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

/** The differing cases first (they say why the exit code is 1), then stderr's end (why it is 2). */
function why(r: { stdout: string; stderr: string }): string {
  const at = r.stdout.indexOf('Where they differ');
  return `${at < 0 ? r.stdout : r.stdout.slice(at)}\n${r.stderr.slice(-4000)}`.trim();
}

beforeAll(async () => {
  const refs = await ensureImages(['pause', 'busybox', 'httpd', 'node'], { progress });
  dir = await mkdtemp(join(tmpdir(), 'kh-side-by-side-'));
  const logs = { source: join(dir, 'logs'), target: LOGS_IN_NODE, mode: 'rw' as const };
  await mkdir(logs.source);
  [ctrd, shim] = await Promise.all([
    new NodeContainer(refs.node)
      .withRuntime('containerd')
      .withPauseImage(refs.pause)
      .withImages(refs.busybox, refs.httpd)
      .withBindMounts([logs])
      .withProgress(progress)
      .start(),
    withCheckout(new NodeContainer(refs.node))
      .withRuntime('docker')
      .withImages(refs.pause, refs.busybox, refs.httpd)
      .withBindMounts([logs])
      .withProgress(progress)
      .start(),
  ]);
  // The pod CIDR reaches the shim in the second test: until then its CNI network is not ready.
  await startDockershim(shim, { pauseImage: refs.pause, shimArgs: DOCKERSHIM_CNI_FLAGS });
  images = [normalizeImageRef(refs.busybox), normalizeImageRef(refs.httpd)];
}, 300_000);

afterAll(async () => {
  await Promise.all([ctrd?.stop(), shim?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('cri-conformance --endpoint A --endpoint B', () => {
  it('exits 1 and lists the cases B fails that A passes, with B message', async () => {
    // Before a kubelet passes on its Node's pod CIDR, the shim has no CNI config to render, and
    // says so in Status (containerd's words); containerd got its CIDR when its node started.
    const r = await cli(
      '--endpoint',
      ctrd.criEndpointOnHost,
      '--endpoint',
      shim.criEndpointOnHost,
      '--focus',
      '^runtime info ',
    );
    expect(r.code, why(r)).toBe(1);
    const differ = r.stdout.slice(r.stdout.indexOf('Where they differ'), r.stdout.indexOf('The same'));
    expect(differ).toMatch(/^Where they differ \(1\):\n {2}A {5}B {5}case\n/);
    expect(differ).toMatch(
      / {2}pass {2}FAIL {2}runtime info › Status reports RuntimeReady and NetworkReady\n {8}B: NetworkReady: expected true, got false\n/,
    );
    expect(r.stdout).toMatch(/1 case\(s\) pass on A and fail on B\.\n$/);
  });

  it('runs both, prints the differences (none here), exits 0 and writes both results', async () => {
    await shim.updatePodCidr(POD_SUBNET);
    const focus = /^(runtime info|logs) /;
    const n = ALL_CASES.filter((c) => focus.test(`${c.group} ${c.name}`)).length;
    const json = join(dir, 'out/both.json');
    const r = await cli(
      '--endpoint',
      ctrd.criEndpointOnHost,
      '--endpoint',
      shim.criEndpointOnHost,
      '--log-dir',
      LOGS_IN_NODE,
      '--log-dir-local',
      join(dir, 'logs'),
      '--focus',
      focus.source,
      '--json',
      json,
    );
    expect(r.code, why(r)).toBe(0);
    expect(r.stdout).toMatch(/A = containerd \S+ \(unix:\/\/.*containerd\.sock\)/);
    expect(r.stdout).toMatch(/B = docker \S+ \(unix:\/\/.*dockershim\.sock\)/);
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
});
