import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriClient } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_ENDPOINT, ShimHarness, waitFor } from './harness.js';

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
      '--docker-endpoint',
      ENGINE_ENDPOINT,
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

describe('images', () => {
  it('fails a pull from a registry that is not there with a clear error', async () => {
    await expect(h.client.pullImage({ image: { image: '127.0.0.1:1/kh/missing:1' } })).rejects.toThrow(
      /pull image "127.0.0.1:1\/kh\/missing:1"/,
    );
  });
});
