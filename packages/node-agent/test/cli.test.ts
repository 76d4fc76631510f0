import { mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime } from '@kh/cri-api';
import { createApiServer } from '@kh/fake-apiserver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKubeletCommand } from '../src/cli.js';
import { kubectl, waitForNodeReady } from './helpers/kubectl.js';

function capture(signal?: AbortSignal) {
  const io = { out: '', err: '' };
  const cmd = newKubeletCommand({
    out: (s) => {
      io.out += s;
    },
    err: (s) => {
      io.err += s;
    },
    ...(signal ? { signal } : {}),
  });
  return { io, cmd };
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

const dir = mkdtempSync(join(tmpdir(), 'kh-cli-'));

describe('node-agent command', () => {
  it('prints help with the kubelet flag names', async () => {
    const { io, cmd } = capture();
    expect(await cmd.execute(['--help'])).toBe(0);
    for (const flag of [
      '--kubeconfig',
      '--config',
      '--container-runtime-endpoint',
      '--node-ip',
      '--register-with-taints',
      '--root-dir',
    ]) {
      expect(io.out).toContain(flag);
    }
  });

  it('prints the version', async () => {
    const { io, cmd } = capture();
    expect(await cmd.execute(['--version'])).toBe(0);
    expect(io.out).toBe('Kubernetes v1.33.0-kh\n');
  });

  it('fails at start-up listing every config problem', async () => {
    const p = join(dir, 'bad.yaml');
    writeFileSync(
      p,
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nport: 0\nmaxPods: -3\nbogus: 1\n',
    );
    const { io, cmd } = capture();
    expect(await cmd.execute([`--config=${p}`, '--sync-frequency=0s'])).toBe(1);
    expect(io.err).toContain(`invalid configuration (${p} and flags):`);
    expect(io.err).toContain('  - bogus: unknown field');
    expect(io.err).toContain('  - port: Invalid value: 0: must be between 1 and 65535, inclusive');
    expect(io.err).toContain('  - maxPods: Invalid value: -3: must be greater than or equal to 0');
    expect(io.err).toContain('  - syncFrequency: Invalid value: "0s": must be greater than 0');
  });

  it('fails on bad flags', async () => {
    const { io, cmd } = capture();
    expect(await cmd.execute(['--max-pods=x', '--frob'])).toBe(1);
    expect(io.err).toContain('--max-pods: Invalid value: "x": must be an integer');
    expect(io.err).toContain('--frob: unknown field');
  });

  it('fails clearly when the CRI endpoint does not answer', async () => {
    const { io, cmd } = capture();
    const code = await cmd.execute([
      `--container-runtime-endpoint=unix://${join(dir, 'nothing.sock')}`,
      '--runtime-request-timeout=2s',
      `--root-dir=${dir}`,
    ]);
    expect(code).toBe(1);
    expect(io.err).toMatch(/failed to run node-agent: validate CRI endpoint unix:\/\/.*nothing\.sock/);
  }, 30_000);
});

describe('node-agent against the fake CRI runtime (standalone)', () => {
  let fake: FakeRuntime;
  beforeAll(async () => {
    fake = await FakeRuntime.start({ socketPath: join(dir, 'fake.sock') });
  });
  afterAll(() => fake.stop());

  it('starts its servers, answers healthz, and exits 0 on SIGTERM', async () => {
    const healthzPort = await freePort();
    const port = await freePort();
    const abort = new AbortController();
    const { io, cmd } = capture(abort.signal);
    const running = cmd.execute([
      `--container-runtime-endpoint=${fake.endpoint}`,
      `--root-dir=${join(dir, 'new-root')}`,
      '--hostname-override=cli-node',
      '--node-ip=127.0.0.1',
      '--address=127.0.0.1',
      `--port=${port}`,
      `--healthz-port=${healthzPort}`,
    ]);
    let health: { status: number; body: string } | undefined;
    for (let i = 0; i < 100 && health?.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      health = await new Promise((resolve) => {
        httpRequest({ host: '127.0.0.1', port: healthzPort, path: '/healthz' }, (res) => {
          let body = '';
          res.on('data', (c) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        })
          .on('error', () => resolve(undefined))
          .end();
      });
    }
    expect(health).toEqual({ status: 200, body: 'ok' });
    abort.abort();
    expect(await running).toBe(0);
    expect(io.err).toContain('Started kubelet');
    expect(fake.calls).toContain('Version');
    expect(fake.calls).toContain('Status');
  }, 30_000);
});

describe('node-agent with --kubeconfig against the fake apiserver', () => {
  it('registers a Ready node that kubectl sees, then stops on SIGTERM leaving it', async () => {
    const fake = await FakeRuntime.start({ socketPath: join(dir, 'fake2.sock') });
    const server = await createApiServer({
      port: 0,
      tls: true,
      tokens: { t: 'admin' },
      scheduler: false,
      nodeLifecycle: false,
    });
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, server.kubeconfig());
    const abort = new AbortController();
    const { io, cmd } = capture(abort.signal);
    try {
      const running = cmd.execute([
        `--kubeconfig=${kubeconfig}`,
        `--container-runtime-endpoint=${fake.endpoint}`,
        `--root-dir=${dir}`,
        '--hostname-override=cli-api-node',
        '--node-ip=127.0.0.1',
        '--node-labels=tier=web',
        '--address=127.0.0.1',
        `--port=${await freePort()}`,
        '--healthz-port=0',
      ]);
      expect(await waitForNodeReady(kubeconfig, 'cli-api-node')).toContain('condition met');
      const stdout = await kubectl(
        kubeconfig,
        'get',
        'node',
        'cli-api-node',
        '-o',
        'jsonpath={.metadata.labels.tier} {.status.nodeInfo.containerRuntimeVersion}',
      );
      const [tier, runtimeVersion] = stdout.split(' ');
      expect(tier).toBe('web');
      expect(runtimeVersion).toMatch(/^[\w-]+:\/\/.+/);
      abort.abort();
      expect(await running).toBe(0);
      expect(io.err).toContain('Kubelet stopped');
      expect((await kubectl(kubeconfig, 'get', 'node', 'cli-api-node', '-o', 'name')).trim()).toBe(
        'node/cli-api-node',
      );
    } finally {
      abort.abort();
      await server.close();
      await fake.stop();
    }
  }, 60_000);
});
