// Node allocatable enforcement over a fake cgroupfs, as node_container_manager_test.go checks it
// on a node: kubepods gets capacity − kubeReserved − systemReserved (not the hard eviction
// threshold), the reserved cgroups get their reservations, on v1 and v2 and with both drivers.
import { afterEach, describe, expect, test, vi } from 'vitest';
import { type ContainerManagerOptions, startContainerManager } from '../../src/cm/container_manager.js';
import type { NodeAllocatableOptions } from '../../src/cm/node_container_manager.js';
import type { ResourceList } from '../../src/config/resolve.js';
import { stderrLogger } from '../../src/util/log.js';
import { Quantity } from '../../src/util/quantity.js';
import { FakeCgroupFs } from './fake_cgroup_fs.js';

const NODE = '/docker/node1';
const Mi = 1024n * 1024n;
const list = (m: Record<string, string>): ResourceList =>
  Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Quantity.parse(v)]));

/** setDesiredConfiguration: 100m/100Mi/1000 pids system, 100m/100Mi/738 pids kube, 100Mi hard eviction. */
function upstreamConfig(over: Partial<NodeAllocatableOptions> = {}): NodeAllocatableOptions {
  return {
    enforce: ['pods', 'kube-reserved', 'system-reserved'],
    systemReserved: list({ cpu: '100m', memory: '100Mi', pid: '1000' }),
    kubeReserved: list({ cpu: '100m', memory: '100Mi', pid: '738' }),
    evictionHard: [
      {
        signal: 'memory.available',
        operator: 'LessThan',
        value: { quantity: Quantity.parse('100Mi') },
        gracePeriodMs: 0,
      },
    ],
    kubeReservedCgroup: `${NODE}/kube-reserved`,
    systemReservedCgroup: `${NODE}/system-reserved`,
    capacity: list({ cpu: '2', memory: '8Gi', 'ephemeral-storage': '100Gi' }),
    maxPID: 4194304n,
    ...over,
  };
}

function start(fs: FakeCgroupFs, na: NodeAllocatableOptions, extra: Partial<ContainerManagerOptions> = {}) {
  return startContainerManager({
    cgroupsPerQOS: true,
    cgroupRoot: NODE,
    cgroupDriver: 'cgroupfs',
    podPidsLimit: -1,
    nodeAllocatable: na,
    activePods: () => [],
    fs,
    mount: '/cg',
    ...extra,
  });
}

const V1 = ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids'];
function v1(...cgroups: string[]) {
  const fs = FakeCgroupFs.v1();
  for (const c of V1) for (const cg of [NODE, ...cgroups]) fs.add(`/cg/${c}${cg}`);
  return fs;
}

describe('cgroup v1, cgroupfs: the upstream e2e configuration', () => {
  const reserved = [`${NODE}/kube-reserved`, `${NODE}/system-reserved`];

  test('kubepods: shares of 1800m, memory capacity − 200Mi (no eviction), pids max − 1738', async () => {
    const fs = v1(...reserved);
    await start(fs, upstreamConfig());
    const kubepods = (c: string) => `/cg/${c}${NODE}/kubepods`;
    expect(fs.files.get(`${kubepods('cpu')}/cpu.shares`)).toBe('1843');
    expect(fs.files.get(`${kubepods('memory')}/memory.limit_in_bytes`)).toBe(
      String(8n * 1024n * Mi - 200n * Mi),
    );
    expect(fs.files.get(`${kubepods('pids')}/pids.max`)).toBe(String(4194304n - 1738n));
  });

  test("the agent's log line names the kubepods limits", async () => {
    const lines: string[] = [];
    await start(v1(...reserved), upstreamConfig(), { log: stderrLogger(0, (l) => lines.push(l)) });
    expect(lines.find((l) => l.includes('Enforced node allocatable on kubepods'))).toContain(
      `memory="${8n * 1024n * Mi - 200n * Mi}"`,
    );
  });

  test('kube-reserved and system-reserved get their reservations', async () => {
    const fs = v1(...reserved);
    await start(fs, upstreamConfig());
    for (const [cg, pids] of [
      ['kube-reserved', '738'],
      ['system-reserved', '1000'],
    ]) {
      expect(fs.files.get(`/cg/cpu${NODE}/${cg}/cpu.shares`)).toBe('102');
      expect(fs.files.get(`/cg/memory${NODE}/${cg}/memory.limit_in_bytes`)).toBe(String(100n * Mi));
      expect(fs.files.get(`/cg/pids${NODE}/${cg}/pids.max`)).toBe(pids);
    }
  });

  test('without pods enforcement kubepods gets the capacity (default shares are too low)', async () => {
    const fs = v1();
    await start(fs, upstreamConfig({ enforce: ['none'] }));
    expect(fs.files.get(`/cg/cpu${NODE}/kubepods/cpu.shares`)).toBe('2048');
    expect(fs.files.get(`/cg/memory${NODE}/kubepods/memory.limit_in_bytes`)).toBe(String(8n * 1024n * Mi));
    expect(fs.files.get(`/cg/pids${NODE}/kubepods/pids.max`)).toBe('4194304');
  });

  test('a restart with other reservations re-applies the limits to the existing kubepods', async () => {
    const fs = v1();
    await start(fs, upstreamConfig({ enforce: ['pods'] }));
    await start(fs, upstreamConfig({ enforce: ['pods'], kubeReserved: {}, systemReserved: {} }));
    expect(fs.files.get(`/cg/memory${NODE}/kubepods/memory.limit_in_bytes`)).toBe(String(8n * 1024n * Mi));
    expect(fs.files.get(`/cg/cpu${NODE}/kubepods/cpu.shares`)).toBe('2048');
  });

  test('an enforced reserved cgroup that does not exist stops the start, with a Warning event', async () => {
    const events: string[] = [];
    const fs = v1(`${NODE}/system-reserved`);
    await expect(
      start(
        fs,
        upstreamConfig({ record: (type, reason, message) => events.push(`${type} ${reason} ${message}`) }),
      ),
    ).rejects.toThrow(
      `Failed to enforce Kube Reserved Cgroup Limits on "${NODE}/kube-reserved": "${NODE}/kube-reserved" cgroup does not exist`,
    );
    expect(events).toContain(
      `Warning FailedNodeAllocatableEnforcement Failed to enforce Kube Reserved Cgroup Limits on "${NODE}/kube-reserved": "${NODE}/kube-reserved" cgroup does not exist`,
    );
    expect(events).toContain('Normal NodeAllocatableEnforced Updated Node Allocatable limit across pods');
  });

  test('reservations above capacity refuse to start', async () => {
    await expect(
      start(v1(), upstreamConfig({ enforce: ['pods'], kubeReserved: list({ memory: '8Gi' }) })),
    ).rejects.toThrow(/^invalid Node Allocatable configuration: resource "memory"/);
  });

  test('cgroupsPerQOS false: no kubepods, but the reserved cgroups are still enforced', async () => {
    const fs = v1(...reserved);
    await start(fs, upstreamConfig({ enforce: ['kube-reserved', 'system-reserved'] }), {
      cgroupsPerQOS: false,
    });
    expect([...fs.dirs].some((d) => d.includes('kubepods'))).toBe(false);
    expect(fs.files.get(`/cg/memory${NODE}/kube-reserved/memory.limit_in_bytes`)).toBe(String(100n * Mi));
  });
});

describe('cgroup v2', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  test('kubepods gets cpu.weight, memory.max and pids.max from node allocatable', async () => {
    const fs = FakeCgroupFs.v2();
    await start(fs, upstreamConfig({ enforce: ['pods'] }), { cgroupRoot: '' });
    // 1843 shares as cgroup v2 weight: 1 + (1843 − 2) × 9999 / 262142.
    expect(fs.files.get('/cg/kubepods/cpu.weight')).toBe('71');
    expect(fs.files.get('/cg/kubepods/memory.max')).toBe(String(8n * 1024n * Mi - 200n * Mi));
    expect(fs.files.get('/cg/kubepods/pids.max')).toBe(String(4194304n - 1738n));
  });

  test('a limit below the memory in use is not written; it is retried until the use drops', async () => {
    vi.useFakeTimers();
    const fs = FakeCgroupFs.v2();
    fs.add('/cg/kubepods');
    fs.files.set('/cg/kubepods/memory.current', String(8n * 1024n * Mi));
    const events: string[] = [];
    const record = (type: string, reason: string) => events.push(`${type} ${reason}`);
    await start(fs, upstreamConfig({ enforce: ['pods'], record, retryMs: 60_000 }), { cgroupRoot: '' });
    expect(fs.files.get('/cg/kubepods/memory.max')).toBeUndefined();
    expect(events).toEqual(['Warning FailedNodeAllocatableEnforcement']);

    fs.files.set('/cg/kubepods/memory.current', String(100n * Mi));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(fs.files.get('/cg/kubepods/memory.max')).toBe(String(8n * 1024n * Mi - 200n * Mi));
    expect(events).toEqual(['Warning FailedNodeAllocatableEnforcement', 'Normal NodeAllocatableEnforced']);
  });
});

test('systemd driver: kubepods.slice and a reserved slice named as systemd names it', async () => {
  const fs = FakeCgroupFs.v1();
  for (const c of V1) fs.add(`/cg/${c}/system.slice`);
  await start(
    fs,
    upstreamConfig({ enforce: ['pods', 'system-reserved'], systemReservedCgroup: 'system.slice' }),
    {
      cgroupRoot: '/',
      cgroupDriver: 'systemd',
    },
  );
  expect(fs.files.get('/cg/memory/kubepods.slice/memory.limit_in_bytes')).toBe(
    String(8n * 1024n * Mi - 200n * Mi),
  );
  expect(fs.files.get('/cg/memory/system.slice/memory.limit_in_bytes')).toBe(String(100n * Mi));
});
