import { CgroupDriver, UnavailableError } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { LATENCY_BUCKETS_SECONDS } from '../src/index.js';
import { fakeShim } from './harness.js';

// Version, Status, RuntimeConfig and the timing of Engine calls, on the fake Engine.
const { fake, h } = fakeShim();

describe('runtime info', () => {
  it("reports docker and the Engine's version", async () => {
    expect(await h.client.version({})).toMatchObject({
      runtimeName: 'docker',
      runtimeVersion: fake.engineVersion.Version,
      runtimeApiVersion: 'v1',
    });
  });

  it("reports the Engine's cgroup driver, read from the Engine once (critest asks before every pod)", async () => {
    const from = fake.calls.length;
    for (let i = 0; i < 3; i++) {
      const { linux } = await h.client.runtimeConfig({});
      expect(linux?.cgroupDriver).toBe(CgroupDriver.SYSTEMD);
    }
    expect(fake.calls.slice(from).filter((c) => c === 'info').length).toBeLessThanOrEqual(1);
  });

  it('says it cannot do SupplementalGroupsPolicy Strict (the Engine always merges the image groups)', async () => {
    const { features } = await h.client.status({});
    expect(features).toEqual({
      supplementalGroupsPolicy: false,
      userNamespacesHostNetwork: false,
      mountOptions: false,
    });
  });

  it('is ready while the Engine answers and the Docker network exists', async () => {
    const s = await h.client.status({});
    expect(s.status?.conditions.map((c) => [c.type, c.status])).toEqual([
      ['RuntimeReady', true],
      ['NetworkReady', true],
    ]);
    fake.networks.delete('bridge');
    try {
      const { status } = await h.client.status({});
      expect(status?.conditions[1]).toMatchObject({ type: 'NetworkReady', status: false });
      expect(status?.conditions[1]?.message).toContain('docker network "bridge"');
    } finally {
      fake.networks.add('bridge');
    }
  });
});

describe('when the Engine is not reachable', () => {
  it('reports RuntimeReady and NetworkReady false and fails calls with UNAVAILABLE', async () => {
    fake.down = true;
    try {
      const { status } = await h.client.status({});
      expect(status?.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
        ['RuntimeReady', false, 'DockerDaemonNotAvailable'],
        ['NetworkReady', false, 'DockerDaemonNotAvailable'],
      ]);
      await expect(h.client.listPodSandbox({})).rejects.toBeInstanceOf(UnavailableError);
      await expect(h.client.listPodSandbox({})).rejects.toThrow(/is dockerd running\?/);
    } finally {
      fake.down = false;
    }
  });
});

describe('Engine call metrics', () => {
  it('counts every Engine call by operation, with its failures and latency', async () => {
    const before = new Map(h.shim.dockerOperations.snapshot().map((s) => [s.operation, s]));
    const { podId } = await h.runPod();
    await h.client.stopPodSandbox({ podSandboxId: podId });
    await h.client.containerStatus({ containerId: 'f'.repeat(64) }).catch(() => undefined);
    const after = new Map(h.shim.dockerOperations.snapshot().map((s) => [s.operation, s]));
    const delta = (op: string, key: 'count' | 'errors') =>
      (after.get(op as never)?.[key] ?? 0) - (before.get(op as never)?.[key] ?? 0);
    expect(delta('createContainer', 'count')).toBe(1);
    expect(delta('startContainer', 'count')).toBe(1);
    expect(delta('stopContainer', 'count')).toBe(1);
    // The unknown id is one inspect, a 404: a failed call.
    expect(delta('inspectContainer', 'errors')).toBeGreaterThanOrEqual(1);
    for (const s of after.values()) {
      expect(s.buckets).toHaveLength(LATENCY_BUCKETS_SECONDS.length + 1);
      expect(s.buckets.reduce((a, b) => a + b, 0)).toBe(s.count);
      expect(s.sumSeconds).toBeGreaterThanOrEqual(0);
    }
  });
});
