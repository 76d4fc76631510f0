import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DockerShim } from '@kh/dockershim';
import { ensureImages, RegistryContainer, type StartedRegistryContainer } from '@kh/testkit';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConformanceOptions, runConformance, type SuiteResult } from '../src/index.js';
import { DOCKER_20_10_ON_HOST_FAILURES, EVERY_CASE, expectCase } from './expectations.js';
import { pushUniqueImage } from './unique_image.js';

// The suite against the dockershim on the host dockerd, pulling from real registries (docker-registry)
// with and without basic auth.

const docker = new Dockerode({ socketPath: '/var/run/docker.sock' });
const runId = `conformance-${randomBytes(4).toString('hex')}`;
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const progress = (line: string) => process.stderr.write(`${line}\n`);

let dir: string;
let shim: DockerShim;
let registry: StartedRegistryContainer;
let authRegistry: StartedRegistryContainer;
let refs: { pause: string; busybox: string; httpd: string; node: string };
let full: SuiteResult;
let noAuth: SuiteResult;

function baseOptions(): ConformanceOptions {
  return {
    endpoint: shim.endpoint,
    images: { busybox: refs.busybox, httpd: refs.httpd },
    logDir: { runtime: join(dir, 'logs'), local: join(dir, 'logs') },
    hostPortAddress: '127.0.0.1',
    hostPortIp: '127.0.0.1',
    cgroupParent: '',
    runId,
    callTimeoutMs: 60_000,
  };
}

beforeAll(async () => {
  refs = await ensureImages(['pause', 'busybox', 'httpd', 'node'], { progress });
  dir = await mkdtemp(join(tmpdir(), 'kh-conformance-'));
  shim = await DockerShim.start({
    socketPath: join(dir, 'dockershim.sock'),
    podInfraContainerImage: refs.pause,
    restrictOomScoreAdj: true,
    // Docker's bridge: the host has no CNI config (the node variant runs the default, cni).
    networkPlugin: 'docker',
    log: progress,
  });
  registry = await new RegistryContainer(refs.node).start();
  authRegistry = await new RegistryContainer(refs.node).withBasicAuth('kh', `pw-${runId}`).start();
  await pushUniqueImage(docker, refs.busybox, runId, registry, 'kh/busybox:conformance');
  await pushUniqueImage(docker, refs.busybox, runId, authRegistry, 'kh/busybox:conformance');
  full = await runConformance(
    {
      ...baseOptions(),
      registry: {
        address: authRegistry.hostAddress,
        image: 'kh/busybox:conformance',
        auth: { username: 'kh', password: `pw-${runId}` },
      },
    },
    { progress },
  );
  noAuth = await runConformance(
    {
      ...baseOptions(),
      registry: { address: registry.hostAddress, image: 'kh/busybox:conformance' },
      focus: /^image /,
    },
    { progress },
  );
}, 600_000);

afterAll(async () => {
  await shim?.close();
  await registry?.stop();
  await authRegistry?.stop();
  const leftovers = await docker.listContainers({ all: true, filters: { label: [`kh.run=${runId}`] } });
  await Promise.all(
    leftovers.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
  for (const img of await docker.listImages({ filters: { label: [`kh.run=${runId}`] } })) {
    await docker
      .getImage(img.Id)
      .remove({ force: true })
      .catch(() => undefined);
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('conformance of the dockershim on host Docker (registry with basic auth)', () => {
  it.each(EVERY_CASE)('%s', (_, name) => {
    expectCase(full, name, { failures: DOCKER_20_10_ON_HOST_FAILURES });
  });

  it('left no containers behind', async () => {
    const left = await docker.listContainers({ all: true, filters: { label: [`kh.run=${runId}`] } });
    expect(left.map((c) => c.Names[0])).toEqual([]);
  });
});

describe('image pulls from a registry without auth', () => {
  it('pass, and the credentials case is skipped with its reason', () => {
    const statuses = Object.fromEntries(noAuth.cases.map((c) => [c.name, c.status]));
    expect(statuses).toMatchObject({
      'PullImage by tag, then status, list and remove': 'passed',
      'PullImage by digest, then remove by digest': 'passed',
      'PullImage of a missing tag is NOT_FOUND': 'passed',
      'PullImage needs the registry credentials when the registry asks for them': 'skipped',
    });
    expect(noAuth.totals.failed).toBe(0);
  });
});

describe('CLI', () => {
  // Without --log-dir the CLI makes its own log directory under TMPDIR: it must not outlive a run
  // that needs no reading.
  const cliTmp = () => mkdtemp(join(dir, 'cli-tmp-'));

  it('writes the summary, JSON and JUnit, exits 0 when nothing failed, and leaves no log dir', async () => {
    const json = join(dir, 'out/result.json');
    const junit = join(dir, 'out/junit.xml');
    const tmp = await cliTmp();
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        CLI,
        '--endpoint',
        shim.endpoint,
        '--busybox-image',
        refs.busybox,
        '--httpd-image',
        refs.httpd,
        '--focus',
        '^runtime info',
        '--json',
        json,
        '--junit',
        junit,
      ],
      { env: { ...process.env, TMPDIR: tmp } },
    );
    expect(stdout).toContain('2 passed, 0 failed, 0 skipped');
    expect(await readdir(tmp)).toEqual([]);
    const result = JSON.parse(await readFile(json, 'utf8')) as SuiteResult;
    expect(result.runtime.name).toBe('docker');
    expect(result.cases.map((c) => c.status)).toEqual(['passed', 'passed']);
    expect(await readFile(junit, 'utf8')).toContain(
      '<testsuite name="runtime info" tests="2" failures="0" skipped="0"',
    );
  });

  it('exits 2 with a clear message when the endpoint is wrong, and leaves no log dir', async () => {
    const tmp = await cliTmp();
    const run = promisify(execFile)(
      process.execPath,
      [CLI, '--endpoint', `unix://${join(dir, 'nothing.sock')}`],
      { env: { ...process.env, TMPDIR: tmp } },
    );
    await expect(run).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('cannot talk CRI to unix://'),
    });
    expect(await readdir(tmp)).toEqual([]);
  });
});
