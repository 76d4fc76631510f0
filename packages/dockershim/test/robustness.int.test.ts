import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriClient, UnavailableError } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { DockerShim } from '../src/index.js';
import { docker, ShimHarness, waitFor } from './harness.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const NODE = process.execPath;

const h = new ShimHarness();
beforeAll(async () => {
  await h.start({ execOutputLimitBytes: 1000 });
});
afterAll(async () => {
  await h.cleanup();
});

function runCli(args: string[]): {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
} {
  const child = spawn(NODE, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

describe('when Docker is not reachable', () => {
  it('reports RuntimeReady and NetworkReady false and fails calls with UNAVAILABLE', async () => {
    const shim = await DockerShim.start({
      dockerEndpoint: `unix://${join(h.dir, 'no-docker.sock')}`,
      socketPath: join(h.dir, 'down.sock'),
      log: () => undefined,
    });
    const client = await CriClient.connect(shim.endpoint);
    try {
      const s = await client.status({});
      expect(s.status?.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
        ['RuntimeReady', false, 'DockerDaemonNotAvailable'],
        ['NetworkReady', false, 'DockerDaemonNotAvailable'],
      ]);
      await expect(client.version({})).rejects.toBeInstanceOf(UnavailableError);
      await expect(client.listContainers({})).rejects.toThrow(/is dockerd running/);
    } finally {
      client.close();
      await shim.close();
    }
  });

  it('the CLI exits 1 with a clear message', async () => {
    const run = runCli([
      '--docker-endpoint',
      `unix://${join(h.dir, 'nope.sock')}`,
      '--listen',
      join(h.dir, 'x.sock'),
    ]);
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain(`cannot reach Docker at unix://${join(h.dir, 'nope.sock')}`);
  });
});

describe('CLI', () => {
  it('serves CRI on --listen inside --runtime-cgroups and shuts down on SIGTERM', async () => {
    const cgroup = `/kh-${h.runId}`;
    const socket = join(h.dir, 'cli.sock');
    const run = runCli([
      '--listen',
      `unix://${socket}`,
      '--pod-infra-container-image',
      h.images.pause,
      '--runtime-cgroups',
      cgroup,
    ]);
    try {
      await waitFor(async () => (run.output().includes('serving CRI') ? true : undefined), 'CLI start');
      const client = await CriClient.connect(`unix://${socket}`);
      expect((await client.version({})).runtimeName).toBe('docker');
      client.close();
      const cgroups = await readFile(`/proc/${run.child.pid}/cgroup`, 'utf8');
      expect(cgroups).toContain(`:${cgroup}\n`);
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      expect(existsSync(socket)).toBe(false);
    } finally {
      run.child.kill('SIGKILL');
      for (const h of await readdir('/sys/fs/cgroup')) {
        await rmdir(join('/sys/fs/cgroup', h, cgroup)).catch(() => undefined);
      }
    }
  });

  it('prints usage with --help', async () => {
    const run = runCli(['--help']);
    expect(await run.exited).toBe(0);
    expect(run.output()).toMatch(
      /--docker-endpoint[\s\S]*--pod-infra-container-image[\s\S]*--runtime-cgroups/,
    );
  });
});

describe('exec output', () => {
  it('caps stdout and stderr together at the configured budget', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'chatty');
    const r = await h.client.execSync({
      containerId: id,
      cmd: ['sh', '-c', 'head -c 800 /dev/zero; head -c 800 /dev/zero >&2; exit 4'],
      timeout: 10n,
    });
    expect(r.stdout.length + r.stderr.length).toBe(1000);
    expect(r.exitCode).toBe(4);
  });
});

describe('images', () => {
  it('reports status, lists with a filter, and removes every tag idempotently', async () => {
    const tag = `kh-test/${h.runId}:one`;
    const other = `kh-test/${h.runId}:two`;
    const [repo1, tag1] = tag.split(':') as [string, string];
    const [repo2, tag2] = other.split(':') as [string, string];
    // An image of its own (a commit of a stopped container), so removing it touches no shared image.
    const scratch = await docker.createContainer({ Image: h.images.busybox, Labels: h.labels });
    const committed = (await scratch.commit({ repo: repo1, tag: tag1 })) as { Id: string };
    await scratch.remove();
    onTestFinished(() =>
      docker
        .getImage(committed.Id)
        .remove({ force: true })
        .catch(() => undefined),
    );
    await docker.getImage(committed.Id).tag({ repo: repo2, tag: tag2 });
    const { image } = await h.client.imageStatus({ image: { image: tag } });
    expect(image?.id).toBe(committed.Id);
    expect(image?.repoTags.sort()).toEqual([tag, other].sort());
    expect(image?.uid?.value).toBe(0n);
    expect(image?.size).toBeGreaterThan(0n);
    const listed = await h.client.listImages({ filter: { image: { image: other } } });
    expect(listed.images.map((i) => i.id)).toEqual([committed.Id]);
    expect(
      (await h.client.listImages({})).images.find((i) => i.repoTags.includes(h.images.pause))?.pinned,
    ).toBe(true);

    // Removing by one tag removes the image with all its tags; again is fine.
    await h.client.removeImage({ image: { image: tag } });
    await h.client.removeImage({ image: { image: tag } });
    expect((await h.client.imageStatus({ image: { image: other } })).image).toBeUndefined();
    expect((await h.client.imageStatus({ image: { image: committed.Id } })).image).toBeUndefined();
  });

  it('fails a pull from a registry that is not there with a clear error', async () => {
    await expect(h.client.pullImage({ image: { image: '127.0.0.1:1/kh/missing:1' } })).rejects.toThrow(
      /pull image "127.0.0.1:1\/kh\/missing:1"/,
    );
  });
});
