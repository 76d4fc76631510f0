import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCommand, loopbackFlags, startAgent } from './helpers/agent.js';
import { startTestApiServer } from './helpers/apiserver.js';
import { kubectl, waitForNodeReady } from './helpers/kubectl.js';
import { freePort, httpGet } from './helpers/net.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-cli-'));

describe('node-agent command', () => {
  it('prints help with the kubelet flag names', async () => {
    const { io, cmd } = agentCommand();
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
    const { io, cmd } = agentCommand();
    expect(await cmd.execute(['--version'])).toBe(0);
    expect(io.out).toBe('Kubernetes v1.33.0-kh\n');
  });

  it('fails at start-up listing every config problem', async () => {
    const p = join(dir, 'bad.yaml');
    writeFileSync(
      p,
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nport: 0\nmaxPods: -3\nbogus: 1\n',
    );
    const { io, cmd } = agentCommand();
    expect(await cmd.execute([`--config=${p}`, '--sync-frequency=0s'])).toBe(1);
    expect(io.err).toContain(`invalid configuration (${p} and flags):`);
    expect(io.err).toContain('  - bogus: unknown field');
    expect(io.err).toContain('  - port: Invalid value: 0: must be between 1 and 65535, inclusive');
    expect(io.err).toContain('  - maxPods: Invalid value: -3: must be greater than or equal to 0');
    expect(io.err).toContain('  - syncFrequency: Invalid value: "0s": must be greater than 0');
  });

  it('fails on bad flags', async () => {
    const { io, cmd } = agentCommand();
    expect(await cmd.execute(['--max-pods=x', '--frob'])).toBe(1);
    expect(io.err).toContain('--max-pods: Invalid value: "x": must be an integer');
    expect(io.err).toContain('--frob: unknown field');
  });

  it('fails clearly when the CRI endpoint does not answer', async () => {
    const { io, cmd } = agentCommand();
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
    const agent = startAgent([
      `--container-runtime-endpoint=${fake.endpoint}`,
      `--root-dir=${join(dir, 'new-root')}`,
      ...(await loopbackFlags('cli-node', healthzPort)),
    ]);
    let health: { status: number; body: string } | undefined;
    for (let i = 0; i < 100 && health?.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      health = await httpGet(healthzPort, '/healthz').catch(() => undefined);
    }
    expect(health).toEqual({ status: 200, body: 'ok' });
    expect(await agent.stop()).toBe(0);
    expect(agent.io.err).toContain('Started kubelet');
    expect(fake.calls).toContain('Version');
    expect(fake.calls).toContain('Status');
  }, 30_000);
});

describe('node-agent with --kubeconfig against the fake apiserver', () => {
  it('registers a Ready node that kubectl sees, then stops on SIGTERM leaving it', async () => {
    const fake = await FakeRuntime.start({ socketPath: join(dir, 'fake2.sock') });
    const { kubeconfig, stop } = await startTestApiServer();
    const agent = startAgent([
      `--kubeconfig=${kubeconfig}`,
      `--container-runtime-endpoint=${fake.endpoint}`,
      `--root-dir=${dir}`,
      '--node-labels=tier=web',
      ...(await loopbackFlags('cli-api-node')),
    ]);
    try {
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
      expect(await agent.stop()).toBe(0);
      expect(agent.io.err).toContain('Kubelet stopped');
      expect((await kubectl(kubeconfig, 'get', 'node', 'cli-api-node', '-o', 'name')).trim()).toBe(
        'node/cli-api-node',
      );
    } finally {
      await agent.stop();
      await stop();
      await fake.stop();
    }
  }, 60_000);
});
