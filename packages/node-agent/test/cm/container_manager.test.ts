// The pod and QoS cgroup hierarchy over a fake cgroupfs, on cgroup v1 (hybrid, as on these
// machines) and v2, with both drivers: what pods_container_manager_test.go checks on a node.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, test } from 'vitest';
import { type ContainerManagerOptions, startContainerManager } from '../../src/cm/container_manager.js';
import { FakeCgroupFs } from './fake_cgroup_fs.js';

const NODE = '/docker/node1';

function mkPod(uid: string, ...containers: V1Container['resources'][]): V1Pod {
  return {
    metadata: { name: uid, namespace: 'default', uid },
    spec: {
      containers: containers.map((resources, i) => ({ name: `c${i}`, ...(resources ? { resources } : {}) })),
    },
  };
}
const guaranteed = mkPod('g-1', {
  requests: { cpu: '100m', memory: '100Mi' },
  limits: { cpu: '100m', memory: '100Mi' },
});
const burstable = mkPod('b-1', {
  requests: { cpu: '100m', memory: '100Mi' },
  limits: { cpu: '200m', memory: '200Mi' },
});
const burstable2 = mkPod('b-2', { requests: { cpu: '300m' } });
const bestEffort = mkPod('e-1', undefined);

async function start(fs: FakeCgroupFs, extra: Partial<ContainerManagerOptions> = {}) {
  const active: V1Pod[] = [];
  const cm = await startContainerManager({
    cgroupsPerQOS: true,
    cgroupRoot: NODE,
    cgroupDriver: 'cgroupfs',
    podPidsLimit: -1,
    // No capacity: kubepods gets no limits here (node_container_manager.test.ts covers them).
    nodeAllocatable: {
      enforce: ['pods'],
      kubeReserved: {},
      systemReserved: {},
      evictionHard: [],
      kubeReservedCgroup: '',
      systemReservedCgroup: '',
      capacity: {},
    },
    activePods: () => active,
    fs,
    mount: '/cg',
    ...extra,
  });
  return { cm, active };
}

describe('cgroup v1 (hybrid), cgroupfs driver', () => {
  const v1 = () => {
    const fs = FakeCgroupFs.v1();
    for (const c of ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids']) fs.add(`/cg/${c}${NODE}`);
    return fs;
  };

  test('start makes kubepods and the two QoS tiers in every controller, BestEffort at 2 shares', async () => {
    const fs = v1();
    await start(fs);
    for (const c of ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'devices', 'freezer', 'blkio'])
      for (const tier of ['', '/burstable', '/besteffort'])
        expect(fs.dirs).toContain(`/cg/${c}${NODE}/kubepods${tier}`);
    expect(fs.dirs).not.toContain(`/cg/systemd${NODE}/kubepods`);
    expect(fs.files.get(`/cg/cpu${NODE}/kubepods/besteffort/cpu.shares`)).toBe('2');
    expect(fs.files.get(`/cg/cpu${NODE}/kubepods/burstable/cpu.shares`)).toBe('2');
    // cpuset: every new level inherits the root's CPUs and memory nodes, or no task could join.
    expect(fs.files.get(`/cg/cpuset${NODE}/kubepods/besteffort/cpuset.cpus`)).toBe('0-1');
    expect(fs.files.get(`/cg/cpuset${NODE}/kubepods/cpuset.mems`)).toBe('0');
  });

  test('the sandbox parent is pod<uid> under its QoS tier; Guaranteed directly under kubepods', async () => {
    const { cm } = await start(v1());
    expect(cm.cgroupParent(guaranteed)).toBe(`${NODE}/kubepods/podg-1`);
    expect(cm.cgroupParent(burstable)).toBe(`${NODE}/kubepods/burstable/podb-1`);
    expect(cm.cgroupParent(bestEffort)).toBe(`${NODE}/kubepods/besteffort/pode-1`);
  });

  test('ensureExists writes ResourceConfigForPod and podPidsLimit into the pod cgroup', async () => {
    const fs = v1();
    const { cm } = await start(fs, { podPidsLimit: 1024 });
    await cm.ensureExists(guaranteed);
    const dir = (c: string) => `/cg/${c}${NODE}/kubepods/podg-1`;
    expect(fs.files.get(`${dir('cpu')}/cpu.shares`)).toBe('102');
    expect(fs.files.get(`${dir('cpu')}/cpu.cfs_period_us`)).toBe('100000');
    expect(fs.files.get(`${dir('cpu')}/cpu.cfs_quota_us`)).toBe('10000');
    expect(fs.files.get(`${dir('memory')}/memory.limit_in_bytes`)).toBe(String(100 * 1024 * 1024));
    expect(fs.files.get(`${dir('pids')}/pids.max`)).toBe('1024');
    await cm.ensureExists(bestEffort);
    const be = (c: string) => `/cg/${c}${NODE}/kubepods/besteffort/pode-1`;
    expect(fs.files.get(`${be('cpu')}/cpu.shares`)).toBe('2');
    expect(fs.files.has(`${be('cpu')}/cpu.cfs_quota_us`)).toBe(false);
    expect(fs.files.has(`${be('memory')}/memory.limit_in_bytes`)).toBe(false);
    expect(fs.files.get(`${be('pids')}/pids.max`)).toBe('1024');
  });

  test('podPidsLimit -1 (the default) leaves pids.max alone', async () => {
    const fs = v1();
    const { cm } = await start(fs);
    await cm.ensureExists(burstable);
    expect(fs.files.has(`/cg/pids${NODE}/kubepods/burstable/podb-1/pids.max`)).toBe(false);
  });

  test('Burstable shares follow the burstable pods as they come and go', async () => {
    const fs = v1();
    const { cm, active } = await start(fs);
    const shares = () => fs.files.get(`/cg/cpu${NODE}/kubepods/burstable/cpu.shares`);
    active.push(burstable);
    await cm.ensureExists(burstable);
    expect(shares()).toBe('102');
    active.push(burstable2, guaranteed, bestEffort);
    await cm.ensureExists(burstable2);
    expect(shares()).toBe('409'); // 100m + 300m
    active.splice(0, 1);
    await cm.cleanupOrphaned(new Set(active.map((p) => p.metadata?.uid ?? '')));
    expect(shares()).toBe('307');
  });

  test('a burst of new pods shares the QoS updates, counts every pod, and lists the hierarchies only at start', async () => {
    const fs = v1();
    const { cm, active } = await start(fs);
    const writes: string[] = [];
    const listed: string[] = [];
    const { write, subdirs } = fs;
    fs.write = (path, data) => {
      writes.push(path);
      return write.call(fs, path, data);
    };
    fs.subdirs = (path) => {
      listed.push(path);
      return subdirs.call(fs, path);
    };
    const pods = Array.from({ length: 30 }, (_, i) => mkPod(`burst-${i}`, { requests: { cpu: '100m' } }));
    active.push(...pods);
    await Promise.all(pods.map((p) => cm.ensureExists(p)));
    for (const p of pods)
      expect(fs.dirs).toContain(`/cg/memory${NODE}/kubepods/burstable/pod${p.metadata?.uid}`);
    expect(fs.files.get(`/cg/cpu${NODE}/kubepods/burstable/cpu.shares`)).toBe('3072'); // 30 x 100m
    expect(writes.filter((p) => p.endsWith('/kubepods/burstable/cpu.shares')).length).toBeLessThanOrEqual(2);
    expect(listed).toEqual([]);
  });

  test('update re-applies the limits after a resize', async () => {
    const fs = v1();
    const { cm } = await start(fs);
    await cm.ensureExists(guaranteed);
    const resized = mkPod('g-1', {
      requests: { cpu: '500m', memory: '200Mi' },
      limits: { cpu: '500m', memory: '200Mi' },
    });
    await cm.update(resized);
    expect(fs.files.get(`/cg/cpu${NODE}/kubepods/podg-1/cpu.cfs_quota_us`)).toBe('50000');
    expect(fs.files.get(`/cg/cpu${NODE}/kubepods/podg-1/cpu.shares`)).toBe('512');
    expect(fs.files.get(`/cg/memory${NODE}/kubepods/podg-1/memory.limit_in_bytes`)).toBe(
      String(200 * 1024 * 1024),
    );
  });

  test('orphan cleanup removes pod cgroups of pods not kept, with what the runtime left inside, in every hierarchy', async () => {
    const fs = v1();
    const { cm } = await start(fs);
    await cm.ensureExists(guaranteed);
    await cm.ensureExists(bestEffort);
    // runc made the sandbox's cgroup under the pod's, also in hierarchies the agent never touches.
    fs.add(`/cg/memory${NODE}/kubepods/besteffort/pode-1/sandbox1`);
    fs.add(`/cg/unified${NODE}/kubepods/besteffort/pode-1/sandbox1`);
    await cm.cleanupOrphaned(new Set(['g-1']));
    expect([...fs.dirs].filter((d) => d.includes('pode-1'))).toEqual([]);
    expect(fs.dirs).toContain(`/cg/memory${NODE}/kubepods/podg-1`);
    expect(fs.dirs).toContain(`/cg/memory${NODE}/kubepods/besteffort`);
  });

  test('ensureExists keeps an existing pod cgroup as it is (limits change only through update)', async () => {
    const fs = v1();
    const { cm } = await start(fs);
    await cm.ensureExists(guaranteed);
    fs.files.set(`/cg/cpu${NODE}/kubepods/podg-1/cpu.shares`, '999');
    await cm.ensureExists(guaranteed);
    expect(fs.files.get(`/cg/cpu${NODE}/kubepods/podg-1/cpu.shares`)).toBe('999');
  });

  test('a missing controller stops the start with the controllers named', async () => {
    const fs = FakeCgroupFs.v1(['cpu', 'cpuacct', 'cpuset', 'memory']);
    for (const c of ['cpu', 'cpuacct', 'cpuset', 'memory']) fs.add(`/cg/${c}${NODE}`);
    await expect(start(fs, { cgroupRoot: '' })).rejects.toThrow(
      'no cgroup v1 hierarchy under /cg for the required controllers: pids',
    );
  });

  test('a cgroupRoot that does not exist is an invalid configuration', async () => {
    await expect(start(v1(), { cgroupRoot: '/nowhere' })).rejects.toThrow(
      'invalid configuration: cgroupRoot "/nowhere" does not exist',
    );
  });
});

describe('cgroup v2', () => {
  const v2 = () => FakeCgroupFs.v2();

  test('the path from the root enables cpu, cpuset, memory and pids in subtree_control, and limits use v2 files', async () => {
    const fs = v2();
    const { cm } = await start(fs, { cgroupRoot: '', podPidsLimit: 100 });
    await cm.ensureExists(burstable);
    for (const d of ['/cg', '/cg/kubepods', '/cg/kubepods/burstable'])
      expect(fs.files.get(`${d}/cgroup.subtree_control`)?.split(' ').sort()).toEqual([
        'cpu',
        'cpuset',
        'memory',
        'pids',
      ]);
    const dir = '/cg/kubepods/burstable/podb-1';
    expect(fs.files.get(`${dir}/cpu.weight`)).toBe('4'); // 102 shares
    expect(fs.files.get(`${dir}/cpu.max`)).toBe('20000 100000');
    expect(fs.files.get(`${dir}/memory.max`)).toBe(String(200 * 1024 * 1024));
    expect(fs.files.get(`${dir}/pids.max`)).toBe('100');
    expect(fs.files.get('/cg/kubepods/besteffort/cpu.weight')).toBe('1');
  });

  test('a controller the root does not offer is named in the error', async () => {
    const fs = FakeCgroupFs.v2(['cpu', 'memory', 'io']);
    await expect(start(fs, { cgroupRoot: '' })).rejects.toThrow(
      '/cg/cgroup.controllers (cgroup v2) does not list the required controllers: cpuset, pids',
    );
  });

  test('orphan cleanup on v2 removes the pod cgroup and its children', async () => {
    const fs = v2();
    const { cm } = await start(fs, { cgroupRoot: '' });
    await cm.ensureExists(bestEffort);
    fs.add('/cg/kubepods/besteffort/pode-1/ctr');
    await cm.cleanupOrphaned(new Set());
    expect(fs.dirs).not.toContain('/cg/kubepods/besteffort/pode-1');
  });
});

describe('systemd driver', () => {
  test('the sandbox parent is the nested slices, written as such on disk, and found again for cleanup', async () => {
    const fs = FakeCgroupFs.v2();
    const { cm } = await start(fs, { cgroupRoot: '/', cgroupDriver: 'systemd' });
    const uid = '0b3e9b79-85f2-4fb7-9a64-1d6d5b0e5d8c';
    const pod = { ...burstable, metadata: { ...burstable.metadata, uid } };
    const parent = `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid.replaceAll('-', '_')}.slice`;
    expect(cm.cgroupParent(pod)).toBe(parent);
    expect(cm.cgroupParent(guaranteed)).toBe('/kubepods.slice/kubepods-podg_1.slice');
    await cm.ensureExists(pod);
    expect(fs.dirs).toContain(`/cg${parent}`);
    await cm.cleanupOrphaned(new Set([uid]));
    expect(fs.dirs).toContain(`/cg${parent}`);
    await cm.cleanupOrphaned(new Set());
    expect(fs.dirs).not.toContain(`/cg${parent}`);
  });
});

test('cgroupsPerQOS false: every pod goes under cgroupRoot and nothing is made', async () => {
  const fs = FakeCgroupFs.v1();
  const { cm } = await start(fs, { cgroupsPerQOS: false });
  expect(cm.cgroupParent(guaranteed)).toBe(NODE);
  await cm.ensureExists(guaranteed);
  expect([...fs.dirs].some((d) => d.includes('kubepods'))).toBe(false);
});
