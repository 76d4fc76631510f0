// The files that ship: dist/bundle/node-agent.mjs and the bundle it runs, built by
// scripts/bundle.mjs after tsc. The other tests run the sources; these run the command as its own
// process, as the harness and
// docker-compose do, so a dependency that breaks when bundled (a dynamic require, a file read
// next to a module) fails here instead of in a node container.
import { type ChildProcess, execFile, type StdioOptions, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FakeRuntime } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MMAP_THRESHOLD } from '../src/util/malloc_env.js';
import { loopbackFlags } from './helpers/agent.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { kubectl, waitForNodeReady } from './helpers/kubectl.js';

const COMMAND = join(import.meta.dirname, '..', 'dist', 'bundle', 'node-agent.mjs');
/** The agent's bundle, which the command (a small launcher) runs. */
const BUNDLE = join(import.meta.dirname, '..', 'dist', 'bundle', 'node-agent-main.mjs');
const run = (...args: string[]) => promisify(execFile)(process.execPath, [COMMAND, ...args]);

describe('the bundled node-agent command', () => {
  it('is built', () => {
    for (const file of [COMMAND, BUNDLE])
      expect(existsSync(file), `${file} missing: run npm run build -w @kh/node-agent`).toBe(true);
  });

  // The launcher execs itself once with glibc's mmap threshold set (src/util/malloc_env.ts), then
  // runs <name>-main.mjs beside it: here a stand-in that reports what it got.
  describe('its launcher', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-launcher-'));
    copyFileSync(COMMAND, join(dir, 'agent.mjs'));
    writeFileSync(
      join(dir, 'agent-main.mjs'),
      'console.log(JSON.stringify({ pid: process.pid, threshold: process.env.MALLOC_MMAP_THRESHOLD_ ?? null, argv: process.argv.slice(2), execArgv: process.execArgv }));',
    );
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const launch = (env: NodeJS.ProcessEnv, stdio: StdioOptions = 'pipe') =>
      new Promise<{ pid: number | undefined; seen: Record<string, unknown> }>((resolve, reject) => {
        const child = spawn(process.execPath, ['--no-warnings', join(dir, 'agent.mjs'), 'a', '--b=c'], {
          env: { PATH: process.env.PATH, ...env },
          stdio,
        });
        let out = '';
        child.stdout?.on('data', (d: Buffer) => {
          out += d.toString();
        });
        child.on('error', reject);
        child.on('close', () => resolve({ pid: child.pid, seen: JSON.parse(out) }));
      });

    it('runs the agent in the same process, with the same arguments and the threshold set', async () => {
      const { pid, seen } = await launch({});
      expect(seen).toEqual({
        pid,
        threshold: String(AGENT_MMAP_THRESHOLD),
        argv: ['a', '--b=c'],
        execArgv: ['--no-warnings'],
      });
    });

    // A parent's IPC channel would not survive an exec: such a parent (the benchmark) sets it.
    it('runs the agent as it is under a parent with an IPC channel', async () => {
      const { pid, seen } = await launch({}, ['pipe', 'pipe', 'pipe', 'ipc']);
      expect(seen).toMatchObject({ pid, threshold: null, argv: ['a', '--b=c'] });
    });

    it("keeps the operator's own threshold", async () => {
      expect((await launch({ MALLOC_MMAP_THRESHOLD_: '65536' })).seen.threshold).toBe('65536');
      const tunables = { GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=131072' };
      expect((await launch(tunables)).seen.threshold).toBeNull();
    });
  });

  it('prints the version and fails on bad flags with the reason', async () => {
    expect((await run('--version')).stdout).toBe('Kubernetes v1.33.0-kh\n');
    const bad = await run('--max-pods=x').catch((e: { code: number; stderr: string }) => e);
    expect(bad).toMatchObject({ code: 1 });
    expect((bad as { stderr: string }).stderr).toContain(
      '--max-pods: Invalid value: "x": must be an integer',
    );
  });

  // V8 keeps the bundle's source for the life of the process: one-byte if it is all ASCII, else
  // two-byte, which costs 5 MiB more (see scripts/bundle.mjs).
  it('is ASCII', () => {
    const bytes = readFileSync(BUNDLE);
    expect(bytes.findIndex((b) => b > 0x7f)).toBe(-1);
  });

  // Minified for the source V8 keeps; the linked source map names what it renamed.
  it('is minified, with its source map linked', () => {
    const text = readFileSync(BUNDLE, 'utf8');
    expect(text).not.toContain('generateSelfSignedCert');
    expect(text.trimEnd().endsWith('//# sourceMappingURL=node-agent-main.mjs.map')).toBe(true);
    const map = JSON.parse(readFileSync(`${BUNDLE}.map`, 'utf8')) as { names: string[] };
    expect(map.names).toContain('generateSelfSignedCert');
  });

  // The reason for bundling: importing @kubernetes/client-node loads every API group's generated
  // client; tree-shaking keeps the four the agent calls. An import that defeats it (a namespace
  // import indexed at run time, say) brings back about 17 MiB of RSS.
  // (Class names do not survive minification; each group's request paths do.)
  it('carries only the API groups the agent uses', () => {
    const text = readFileSync(BUNDLE, 'utf8');
    for (const used of [
      '/api/v1/',
      ...['coordination', 'authentication', 'authorization'].map((g) => `/apis/${g}.k8s.io/v1/`),
    ])
      expect(text).toContain(`"${used}`);
    for (const unused of ['apps/v1/', 'batch/v1/', 'rbac.authorization.k8s.io/v1/', 'storage.k8s.io/v1/'])
      expect(text).not.toContain(`"/apis/${unused}`);
  });
});

describe('the bundled node-agent against the fake apiserver and the fake CRI runtime', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kh-bundle-'));
  let fake: FakeRuntime;
  let apiserver: TestApiServer;
  let agent: ChildProcess;
  let stderr = '';

  beforeAll(async () => {
    fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock') });
    fake.addImage('docker.io/library/busybox:latest', 1_000_000);
    apiserver = await startTestApiServer();
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: ${join(dir, 'logs')}\n`,
    );
    agent = spawn(
      process.execPath,
      [
        COMMAND,
        `--kubeconfig=${apiserver.kubeconfig}`,
        `--container-runtime-endpoint=${fake.endpoint}`,
        `--root-dir=${join(dir, 'root')}`,
        `--config=${config}`,
        ...(await loopbackFlags('bundle-node')),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    agent.stderr?.on('data', (d) => {
      stderr += String(d);
    });
  }, 30_000);

  afterAll(async () => {
    if (agent.exitCode === null) {
      agent.kill('SIGKILL');
      await new Promise((r) => agent.once('exit', r));
    }
    await apiserver?.stop();
    await fake?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('registers a Ready node, runs a pod, and exits 0 on SIGTERM', async () => {
    expect(await waitForNodeReady(apiserver.kubeconfig, 'bundle-node'), stderr).toContain('condition met');
    const manifest = join(dir, 'pod.json');
    writeFileSync(
      manifest,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'bundled', namespace: 'default' },
        spec: { nodeName: 'bundle-node', containers: [{ name: 'main', image: 'busybox' }] },
      }),
    );
    await kubectl(apiserver.kubeconfig, 'apply', '-f', manifest);
    const waited = await kubectl(
      apiserver.kubeconfig,
      'wait',
      '--for=condition=Ready',
      'pod/bundled',
      '--timeout=30s',
    ).catch((e: Error) => `${e.message}\n${stderr.slice(-3000)}`);
    expect(waited).toContain('condition met');
    const exited = new Promise<number | null>((r) => agent.once('exit', (code) => r(code)));
    agent.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toContain('Kubelet stopped');
  }, 60_000);
});
