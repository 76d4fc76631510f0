import { FakeClock } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import { beforeEach, describe, expect, it } from 'vitest';
import { resolveKubeletConfiguration } from '../../src/config/resolve.js';
import { defaultKubeletConfiguration, type KubeletConfiguration } from '../../src/config/types.js';
import { EvictionManager, type EvictionManagerDeps } from '../../src/eviction/manager.js';
import { evictionConfigFrom } from '../../src/eviction/thresholds.js';
import { KubeletMetrics } from '../../src/metrics/metrics.js';
import {
  Gi,
  Mi,
  memoryObs,
  pod,
  RecordingEvents,
  RecordingKiller,
  ScriptedSignals,
  ScriptedStats,
} from './helpers.js';

const guaranteed = (mem: string) => ({
  name: 'app',
  image: 'busybox',
  resources: { requests: { cpu: '100m', memory: mem }, limits: { cpu: '100m', memory: mem } },
});

function setup(patch: Partial<KubeletConfiguration> = {}, extra: Partial<EvictionManagerDeps> = {}) {
  const cfg = { ...defaultKubeletConfiguration(), ...patch };
  const clock = new FakeClock();
  const signals = new ScriptedSignals(memoryObs(4 * Gi));
  const stats = new ScriptedStats();
  const killer = new RecordingKiller();
  const events = new RecordingEvents();
  const metrics = new KubeletMetrics();
  let pods: V1Pod[] = [];
  const manager = new EvictionManager({
    config: evictionConfigFrom(cfg, resolveKubeletConfiguration(cfg)),
    signals,
    podStats: stats,
    activePods: () => pods.filter((p) => !killer.evicted.some((e) => e.pod === p)),
    killer,
    recorder: events,
    metrics,
    clock,
    ...extra,
  });
  return {
    clock,
    signals,
    stats,
    killer,
    events,
    metrics,
    manager,
    setPods: (p: V1Pod[]) => {
      pods = p;
    },
  };
}

describe('EvictionManager under memory pressure', () => {
  let t: ReturnType<typeof setup>;
  beforeEach(() => {
    t = setup();
    t.setPods([
      pod('hog', { containers: [{ name: 'hog', image: 'memhog' }] }),
      pod('innocent', { containers: [guaranteed('1Gi')] }),
      pod('low', { priority: -10, containers: [{ name: 'app', image: 'busybox' }] }),
    ]);
    t.stats.current = [
      { uid: 'uid-hog', containers: [{ name: 'hog', memoryWorkingSetBytes: 500 * Mi }], volumes: [] },
      { uid: 'uid-innocent', containers: [{ name: 'app', memoryWorkingSetBytes: 900 * Mi }], volumes: [] },
      { uid: 'uid-low', containers: [{ name: 'app', memoryWorkingSetBytes: 10 * Mi }], volumes: [] },
    ];
  });

  it('reports no pressure while the signal is above the threshold', async () => {
    const r = await t.manager.synchronize();
    expect(r.conditions).toEqual([]);
    expect(t.manager.isUnderMemoryPressure()).toBe(false);
    expect(t.killer.evicted).toEqual([]);
  });

  it('sets MemoryPressure and evicts one pod per interval: over-request pods by priority, never the innocent', async () => {
    t.signals.current = memoryObs(80 * Mi);
    const first = await t.manager.synchronize();
    expect(first.conditions).toEqual(['MemoryPressure']);
    expect(t.manager.isUnderMemoryPressure()).toBe(true);
    expect(t.manager.taints()).toEqual([{ key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' }]);
    expect(t.killer.evicted.map((e) => e.pod.metadata?.name)).toEqual(['low']);

    await t.clock.advance(10_000);
    await t.manager.synchronize();
    expect(t.killer.evicted.map((e) => e.pod.metadata?.name)).toEqual(['low', 'hog']);
    // The Guaranteed pod within its request is never chosen while an offender exists; once it is
    // the last pod, it goes too, as in the kubelet.
    const hog = t.killer.evicted[1];
    expect(hog?.grace).toBe(1);
    expect(hog?.status).toEqual({
      phase: 'Failed',
      reason: 'Evicted',
      message:
        'The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. Container hog was using 500Mi, request is 0, has larger consumption of memory. ',
      conditions: [
        {
          type: 'DisruptionTarget',
          status: 'True',
          reason: 'TerminationByKubelet',
          message: hog?.status.message,
        },
      ],
    });
    expect(t.events.events[1]).toEqual({
      pod: 'hog',
      type: 'Warning',
      reason: 'Evicted',
      message: hog?.status.message,
      annotations: {
        offending_containers: 'hog',
        offending_containers_usage: '500Mi',
        starved_resource: 'memory',
      },
    });
    const metric = await t.metrics.registry.getSingleMetricAsString('kubelet_evictions');
    expect(metric).toContain('kubelet_evictions{eviction_signal="memory.available"} 2');
  });

  it('ranks by usage above request when priorities are equal', async () => {
    t.setPods([
      pod('small', { containers: [{ name: 'app', image: 'x' }] }),
      pod('big', { containers: [{ name: 'app', image: 'x' }] }),
    ]);
    t.stats.current = [
      { uid: 'uid-small', containers: [{ name: 'app', memoryWorkingSetBytes: 100 * Mi }], volumes: [] },
      { uid: 'uid-big', containers: [{ name: 'app', memoryWorkingSetBytes: 300 * Mi }], volumes: [] },
    ];
    t.signals.current = memoryObs(10 * Mi);
    await t.manager.synchronize();
    expect(t.killer.evicted.map((e) => e.pod.metadata?.name)).toEqual(['big']);
  });

  it('keeps the condition for the transition period after the signal recovers, then clears it', async () => {
    t.signals.current = memoryObs(80 * Mi);
    await t.manager.synchronize();
    t.signals.current = memoryObs(4 * Gi);
    await t.clock.advance(10_000);
    let r = await t.manager.synchronize();
    expect(r.conditions).toEqual(['MemoryPressure']);
    expect(r.evicted).toBeUndefined();
    await t.clock.advance(5 * 60_000 - 10_000 - 1);
    r = await t.manager.synchronize();
    expect(r.conditions).toEqual(['MemoryPressure']);
    await t.clock.advance(1);
    r = await t.manager.synchronize();
    expect(r.conditions).toEqual([]);
    expect(t.manager.isUnderMemoryPressure()).toBe(false);
  });

  it('admits BestEffort pods again only once the condition has cleared', async () => {
    t.signals.current = memoryObs(80 * Mi);
    await t.manager.synchronize();
    expect(t.manager.admit({ pod: pod('new'), otherPods: [] })).toEqual({
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [MemoryPressure]. ',
    });
    expect(
      t.manager.admit({ pod: pod('burstable', { containers: [guaranteed('64Mi')] }), otherPods: [] }),
    ).toEqual({ admit: true });
    t.signals.current = memoryObs(4 * Gi);
    await t.clock.advance(300_000);
    await t.manager.synchronize();
    expect(t.manager.admit({ pod: pod('new'), otherPods: [] })).toEqual({ admit: true });
  });

  it('skips critical pods and tries the next when a kill fails', async () => {
    t.setPods([
      pod('static', { annotations: { 'kubernetes.io/config.source': 'file' } }),
      pod('system', { priority: 2_000_000_000 }),
      pod('stuck', { priority: -5 }),
      pod('victim'),
    ]);
    t.stats.current = ['static', 'system', 'stuck', 'victim'].map((n) => ({
      uid: `uid-${n}`,
      containers: [{ name: 'app', memoryWorkingSetBytes: 200 * Mi }],
      volumes: [],
    }));
    t.killer.failFor.add('stuck');
    t.signals.current = memoryObs(50 * Mi);
    const r = await t.manager.synchronize();
    expect(r.evicted?.metadata?.name).toBe('victim');
    expect(t.killer.evicted.map((e) => e.pod.metadata?.name)).toEqual(['victim']);
  });

  it('keeps a met threshold until minimum reclaim is recovered', async () => {
    const m = setup({ evictionMinimumReclaim: { 'memory.available': '200Mi' } });
    m.signals.current = memoryObs(80 * Mi);
    await m.manager.synchronize();
    m.signals.current = memoryObs(250 * Mi);
    await m.clock.advance(10_000);
    expect((await m.manager.synchronize()).thresholds.map((x) => x.signal)).toEqual(['memory.available']);
    m.signals.current = memoryObs(301 * Mi);
    await m.clock.advance(10_000);
    expect((await m.manager.synchronize()).thresholds).toEqual([]);
  });
});

describe('soft thresholds', () => {
  it('report pressure at once but evict only after the grace period, with the capped pod grace period', async () => {
    const t = setup({
      evictionSoft: { 'memory.available': '1Gi' },
      evictionSoftGracePeriod: { 'memory.available': '1m' },
      evictionMaxPodGracePeriod: 20,
    });
    t.setPods([pod('a', { terminationGracePeriodSeconds: 60 })]);
    t.stats.current = [
      { uid: 'uid-a', containers: [{ name: 'app', memoryWorkingSetBytes: Gi }], volumes: [] },
    ];
    t.signals.current = memoryObs(900 * Mi);
    let r = await t.manager.synchronize();
    expect(r.conditions).toEqual(['MemoryPressure']);
    expect(r.thresholds).toEqual([]);
    await t.clock.advance(59_999);
    r = await t.manager.synchronize();
    expect(t.killer.evicted).toEqual([]);
    await t.clock.advance(1);
    r = await t.manager.synchronize();
    expect(r.evicted?.metadata?.name).toBe('a');
    expect(t.killer.evicted[0]?.grace).toBe(20);
    expect(t.killer.evicted[0]?.isEvicted).toBe(true);
    expect(t.killer.evicted[0]?.status.message).toMatch(
      /^The node was low on resource: memory\. Threshold quantity: 1Gi, available: 900Mi\. /,
    );
  });

  it('restart their grace period when the signal recovers in between', async () => {
    const t = setup({
      evictionSoft: { 'memory.available': '1Gi' },
      evictionSoftGracePeriod: { 'memory.available': '1m' },
      evictionMaxPodGracePeriod: 30,
    });
    t.setPods([pod('a', { terminationGracePeriodSeconds: 7 })]);
    t.signals.current = memoryObs(900 * Mi);
    await t.manager.synchronize();
    await t.clock.advance(30_000);
    t.signals.current = memoryObs(2 * Gi);
    await t.manager.synchronize();
    t.signals.current = memoryObs(900 * Mi);
    await t.clock.advance(30_000);
    await t.manager.synchronize();
    await t.clock.advance(59_000);
    await t.manager.synchronize();
    expect(t.killer.evicted).toEqual([]);
    await t.clock.advance(1_000);
    await t.manager.synchronize();
    expect(t.killer.evicted[0]?.grace).toBe(7);
  });
});

describe('soft nodefs threshold (eviction_test LocalStorageSoftEviction)', () => {
  const nodefs = (availableGi: number) => ({
    ...memoryObs(4 * Gi),
    'nodefs.available': { available: availableGi * Gi, capacity: 100 * Gi },
  });
  // As the upstream cases configure the kubelet: a soft nodefs threshold, and hard thresholds
  // switched off with 0% so that only the soft one can evict.
  const softOnly = (grace: string, maxPodGrace: number) =>
    setup(
      {
        evictionHard: { 'memory.available': '0%' },
        evictionSoft: { 'nodefs.available': '20Gi' },
        evictionSoftGracePeriod: { 'nodefs.available': grace },
        evictionMaxPodGracePeriod: maxPodGrace,
      },
      { reclaimer: { deleteAllUnusedContainers: async () => {}, deleteUnusedImages: async () => {} } },
    );
  const hogAndInnocent = (t: ReturnType<typeof setup>, hogGrace?: number) => {
    t.setPods([
      pod('hog', { terminationGracePeriodSeconds: hogGrace }),
      pod('innocent', {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'app',
            image: 'busybox',
            resources: {
              requests: { 'ephemeral-storage': '50Mi' },
              limits: { 'ephemeral-storage': '50Mi' },
            },
          },
        ],
      }),
    ]);
    t.stats.current = [
      { uid: 'uid-hog', containers: [{ name: 'app', ephemeralStorageBytes: 4 * Gi }], volumes: [] },
      { uid: 'uid-innocent', containers: [{ name: 'app', ephemeralStorageBytes: Mi }], volumes: [] },
    ];
  };

  it('sets DiskPressure at once, evicts nothing before the grace period and the hog after it', async () => {
    const t = softOnly('1m', 30);
    hogAndInnocent(t, 1);
    // Memory far below what the default hard threshold would act on: 0% switched it off.
    t.signals.current = { ...nodefs(15), 'memory.available': { available: Mi, capacity: 8 * Gi } };
    let r = await t.manager.synchronize();
    expect(r.conditions).toEqual(['DiskPressure']);
    expect(t.manager.isUnderDiskPressure()).toBe(true);
    expect(t.manager.isUnderMemoryPressure()).toBe(false);
    expect(r.thresholds).toEqual([]);
    for (let i = 0; i < 5; i++) {
      await t.clock.advance(10_000);
      r = await t.manager.synchronize();
      expect(r.conditions).toEqual(['DiskPressure']);
    }
    expect(t.killer.evicted).toEqual([]);
    expect(t.events.events).toEqual([]);
    await t.clock.advance(10_000);
    r = await t.manager.synchronize();
    expect(r.evicted?.metadata?.name).toBe('hog');
    expect(r.thresholds.map((x) => [x.signal, x.hard])).toEqual([['nodefs.available', false]]);
    expect(t.killer.evicted.map((e) => e.pod.metadata?.name)).toEqual(['hog']);
    // evictionMaxPodGracePeriod 30 does not overwrite the pod's shorter grace period.
    expect(t.killer.evicted[0]?.grace).toBe(1);
    expect(t.events.events[0]).toMatchObject({
      pod: 'hog',
      reason: 'Evicted',
      annotations: { starved_resource: 'ephemeral-storage' },
    });
    expect(t.events.events[0]?.message).toMatch(
      /^The node was low on resource: ephemeral-storage\. Threshold quantity: 20Gi, available: 15Gi\. /,
    );
    expect(await t.metrics.registry.getSingleMetricAsString('kubelet_evictions')).toContain(
      'kubelet_evictions{eviction_signal="nodefs.available"} 1',
    );
  });

  it.each([
    ['the pod’s shorter grace period', 30, 1, 1],
    ['evictionMaxPodGracePeriod under a longer pod grace period', 30, 60, 30],
    ['one second when evictionMaxPodGracePeriod is 0, the default', 0, 60, 1],
    ['one second for a pod with grace period 0', 20, 0, 1],
    ['evictionMaxPodGracePeriod for a pod without a grace period', 15, undefined, 15],
  ])('kills with %s', async (_name, maxPodGrace, podGrace, want) => {
    const t = softOnly('30s', maxPodGrace);
    hogAndInnocent(t, podGrace);
    t.signals.current = nodefs(15);
    await t.manager.synchronize();
    await t.clock.advance(30_000);
    const r = await t.manager.synchronize();
    expect(r.evicted?.metadata?.name).toBe('hog');
    expect(t.killer.evicted[0]?.grace).toBe(want);
  });

  it('keeps the one-second grace period for hard evictions', async () => {
    const t = setup({ evictionHard: { 'nodefs.available': '20Gi' }, evictionMaxPodGracePeriod: 30 });
    hogAndInnocent(t, 60);
    t.signals.current = nodefs(15);
    const r = await t.manager.synchronize();
    expect(r.evicted?.metadata?.name).toBe('hog');
    expect(t.killer.evicted[0]?.grace).toBe(1);
  });

  it('does not evict when the signal recovers before the grace period ends, and the condition then clears', async () => {
    const t = softOnly('30s', 30);
    hogAndInnocent(t, 1);
    t.signals.current = nodefs(15);
    await t.manager.synchronize();
    await t.clock.advance(20_000);
    t.signals.current = nodefs(25);
    let r = await t.manager.synchronize();
    expect(r.conditions).toEqual(['DiskPressure']);
    await t.clock.advance(300_000);
    r = await t.manager.synchronize();
    expect(r.conditions).toEqual([]);
    expect(t.killer.evicted).toEqual([]);
  });
});

describe('disk and pid pressure', () => {
  const diskObs = (availableGi: number) => ({
    ...memoryObs(4 * Gi),
    'nodefs.available': { available: availableGi * Gi, capacity: 100 * Gi },
  });

  it('reclaims at node level first and evicts nothing when that suffices', async () => {
    const calls: string[] = [];
    const t = setup(
      {},
      {
        reclaimer: {
          deleteAllUnusedContainers: async () => {
            calls.push('containers');
          },
          deleteUnusedImages: async () => {
            calls.push('images');
            t.signals.current = diskObs(30);
          },
        },
      },
    );
    t.setPods([pod('a')]);
    t.signals.current = diskObs(5);
    const r = await t.manager.synchronize();
    expect(calls).toEqual(['containers', 'images']);
    expect(r.reclaimedAtNodeLevel).toBe(true);
    expect(r.conditions).toEqual(['DiskPressure']);
    expect(t.killer.evicted).toEqual([]);
    expect(t.manager.taints()).toEqual([{ key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule' }]);
  });

  it('reclaims only for imagefs signals when the image filesystem is its own device', async () => {
    const calls: string[] = [];
    const reclaimer = {
      deleteAllUnusedContainers: async () => {
        calls.push('containers');
      },
      deleteUnusedImages: async () => {
        calls.push('images');
      },
    };
    const t = setup({}, { reclaimer, dedicatedImageFs: true });
    t.setPods([pod('a')]);
    t.signals.current = diskObs(5);
    expect((await t.manager.synchronize()).evicted?.metadata?.name).toBe('a');
    expect(calls).toEqual([]);
    const u = setup({}, { reclaimer, dedicatedImageFs: true });
    u.signals.current = { ...memoryObs(4 * Gi), 'imagefs.available': { available: Gi, capacity: 100 * Gi } };
    await u.manager.synchronize();
    expect(calls).toEqual(['containers', 'images']);
  });

  it('evicts the biggest ephemeral storage user when reclaim is not enough', async () => {
    const t = setup(
      {},
      { reclaimer: { deleteAllUnusedContainers: async () => {}, deleteUnusedImages: async () => {} } },
    );
    t.setPods([
      pod('logs', { volumes: [{ name: 'cache', emptyDir: {} }] }),
      pod('diskhog'),
      pod('tmpfs', { volumes: [{ name: 'ram', emptyDir: { medium: 'Memory' } }] }),
    ]);
    t.stats.current = [
      {
        uid: 'uid-logs',
        containers: [{ name: 'app', ephemeralStorageBytes: Gi }],
        volumes: [{ name: 'cache', usedBytes: Gi }],
      },
      { uid: 'uid-diskhog', containers: [{ name: 'app', ephemeralStorageBytes: 3 * Gi }], volumes: [] },
      // Memory-backed volumes do not count against the disk.
      { uid: 'uid-tmpfs', containers: [], volumes: [{ name: 'ram', usedBytes: 10 * Gi }] },
    ];
    t.signals.current = diskObs(5);
    const r = await t.manager.synchronize();
    expect(r.evicted?.metadata?.name).toBe('diskhog');
    expect(t.killer.evicted[0]?.status.message).toBe(
      'The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 5Gi. Container app was using 3Gi, request is 0, has larger consumption of ephemeral-storage. ',
    );
    expect(t.manager.admit({ pod: pod('new', { containers: [guaranteed('1Gi')] }), otherPods: [] })).toEqual({
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [DiskPressure]. ',
    });
    expect(
      t.manager.admit({
        pod: pod('static', { annotations: { 'kubernetes.io/config.source': 'file' } }),
        otherPods: [],
      }),
    ).toEqual({
      admit: true,
    });
  });

  // eviction_test InodeEviction's pods, plus a byte-heavy one: inode pressure ranks by inodes
  // (writable layers, logs and disk-backed emptyDirs), not by bytes.
  it('ranks nodefs.inodesFree pressure by inode use, not bytes', async () => {
    const t = setup({ evictionHard: { 'nodefs.inodesFree': '100k' } });
    const innocentResources = { requests: { 'ephemeral-storage': '50Mi', memory: '50Mi' } };
    t.setPods([
      pod('innocent', { containers: [{ name: 'app', image: 'busybox', resources: innocentResources }] }),
      pod('bytes'),
      pod('inode-hog', { volumes: [{ name: 'test-volume', emptyDir: {} }] }),
      pod('tmpfs-files', { volumes: [{ name: 'ram', emptyDir: { medium: 'Memory' } }] }),
    ]);
    t.stats.current = [
      {
        uid: 'uid-innocent',
        containers: [{ name: 'app', ephemeralStorageBytes: Mi, inodesUsed: 20 }],
        volumes: [],
      },
      {
        uid: 'uid-bytes',
        containers: [{ name: 'app', ephemeralStorageBytes: 3 * Gi, inodesUsed: 30 }],
        volumes: [],
      },
      {
        uid: 'uid-inode-hog',
        containers: [{ name: 'app', ephemeralStorageBytes: 0, inodesUsed: 10 }],
        volumes: [{ name: 'test-volume', usedBytes: 4096, inodesUsed: 150_000 }],
      },
      // Files in memory take no inode of the node's disk.
      {
        uid: 'uid-tmpfs-files',
        containers: [],
        volumes: [{ name: 'ram', usedBytes: 0, inodesUsed: 900_000 }],
      },
    ];
    t.signals.current = {
      ...memoryObs(4 * Gi),
      'nodefs.inodesFree': { available: 50_000, capacity: 6_000_000 },
    };
    const r = await t.manager.synchronize();
    expect(r.conditions).toEqual(['DiskPressure']);
    expect(r.evicted?.metadata?.name).toBe('inode-hog');
    expect(t.killer.evicted[0]?.status.message).toBe(
      'The node was low on resource: inodes. Threshold quantity: 100k, available: 50k. ',
    );
    expect(t.events.events[0]?.annotations).toMatchObject({ starved_resource: 'inodes' });
  });

  it('ranks pid pressure by priority, then process count', async () => {
    const t = setup({ evictionHard: { 'pid.available': '1000' } });
    t.setPods([pod('many', { priority: 10 }), pod('few-low'), pod('more-low')]);
    t.stats.current = [
      { uid: 'uid-many', containers: [], volumes: [], processCount: 5000 },
      { uid: 'uid-few-low', containers: [], volumes: [], processCount: 5 },
      { uid: 'uid-more-low', containers: [], volumes: [], processCount: 50 },
    ];
    t.signals.current = { 'pid.available': { available: 500, capacity: 32768 } };
    const r = await t.manager.synchronize();
    expect(r.conditions).toEqual(['PIDPressure']);
    expect(t.manager.isUnderPIDPressure()).toBe(true);
    expect(r.evicted?.metadata?.name).toBe('more-low');
    expect(t.killer.evicted[0]?.status.message).toBe(
      'The node was low on resource: pids. Threshold quantity: 1k, available: 500. ',
    );
  });
});

describe('local storage isolation', () => {
  it.each([
    [
      'an emptyDir over its sizeLimit',
      pod('p', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '100Mi' } }] }),
      { containers: [], volumes: [{ name: 'scratch', usedBytes: 101 * Mi }] },
      'Usage of EmptyDir volume "scratch" exceeds the limit "100Mi". ',
    ],
    [
      'a memory-backed emptyDir over its sizeLimit',
      pod('p', { volumes: [{ name: 'ram', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } }] }),
      { containers: [], volumes: [{ name: 'ram', usedBytes: 65 * Mi }] },
      'Usage of EmptyDir volume "ram" exceeds the limit "64Mi". ',
    ],
    [
      'a container over its ephemeral-storage limit',
      pod('p', {
        containers: [
          { name: 'a', image: 'x', resources: { limits: { 'ephemeral-storage': '1Gi' } } },
          { name: 'b', image: 'x' },
        ],
      }),
      { containers: [{ name: 'a', ephemeralStorageBytes: Gi + 1 }], volumes: [] },
      'Container a exceeded its local ephemeral storage limit "1Gi". ',
    ],
    [
      'a pod over the sum of its containers’ limits',
      pod('p', {
        containers: [{ name: 'a', image: 'x', resources: { limits: { 'ephemeral-storage': '1Gi' } } }],
        volumes: [{ name: 'v', emptyDir: {} }],
      }),
      {
        containers: [{ name: 'a', ephemeralStorageBytes: 512 * Mi }],
        volumes: [{ name: 'v', usedBytes: 600 * Mi }],
      },
      'Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ',
    ],
  ])('evicts %s without node pressure', async (_name, p, usage, message) => {
    const t = setup();
    t.setPods([p, pod('fine')]);
    t.stats.current = [
      { uid: 'uid-p', ...usage },
      { uid: 'uid-fine', containers: [], volumes: [] },
    ];
    const r = await t.manager.synchronize();
    expect(r.conditions).toEqual([]);
    expect(r.evicted?.metadata?.name).toBe('p');
    expect(t.killer.evicted[0]?.status.message).toBe(message);
    expect(t.events.events[0]).toMatchObject({ pod: 'p', reason: 'Evicted', message });
  });

  // eviction_test LocalStorageCapacityIsolationEviction's six pods, as the agent measures them:
  // the three over their budgets go in one pass, as the kubelet evicts every violator at once;
  // the memory-backed emptyDir is full at its sizeLimit (its tmpfs is that large) and stays.
  it("evicts upstream's violators together in one pass and keeps the rest", async () => {
    const t = setup();
    const limit = { limits: { 'ephemeral-storage': '100Mi' } };
    const vol = (emptyDir: object) => ({ volumes: [{ name: 'test-volume', emptyDir }] });
    const ctr = (resources?: object) => ({
      containers: [{ name: 'app', image: 'x', ...(resources ? { resources } : {}) }],
    });
    t.setPods([
      pod('emptydir-disk-sizelimit', vol({ sizeLimit: '100Mi' })),
      pod('container-disk-limit', ctr(limit)),
      pod('container-emptydir-disk-limit', { ...ctr(limit), ...vol({}) }),
      pod('emptydir-memory-sizelimit', vol({ medium: 'Memory', sizeLimit: '100Mi' })),
      pod('emptydir-disk-below-sizelimit', vol({ sizeLimit: '100Mi' })),
      pod('container-disk-below-sizelimit', ctr(limit)),
    ]);
    const inVolume = (mib: number) => ({
      containers: [{ name: 'app', ephemeralStorageBytes: 8192 }],
      volumes: [{ name: 'test-volume', usedBytes: mib * Mi }],
    });
    const inLayer = (mib: number) => ({
      containers: [{ name: 'app', ephemeralStorageBytes: mib * Mi }],
      volumes: [],
    });
    t.stats.current = [
      { uid: 'uid-emptydir-disk-sizelimit', ...inVolume(101) },
      { uid: 'uid-container-disk-limit', ...inLayer(101) },
      { uid: 'uid-container-emptydir-disk-limit', ...inVolume(101) },
      { uid: 'uid-emptydir-memory-sizelimit', ...inVolume(100) },
      { uid: 'uid-emptydir-disk-below-sizelimit', ...inVolume(99) },
      { uid: 'uid-container-disk-below-sizelimit', ...inLayer(99) },
    ];
    const r = await t.manager.synchronize();
    expect(r.conditions).toEqual([]);
    expect(r.evictedPods?.map((p) => p.metadata?.name)).toEqual([
      'emptydir-disk-sizelimit',
      'container-disk-limit',
      'container-emptydir-disk-limit',
    ]);
    expect(t.killer.evicted.map((e) => e.status.message)).toEqual([
      'Usage of EmptyDir volume "test-volume" exceeds the limit "100Mi". ',
      'Pod ephemeral local storage usage exceeds the total limit of containers 100Mi. ',
      'Pod ephemeral local storage usage exceeds the total limit of containers 100Mi. ',
    ]);
    expect(t.killer.evicted.every((e) => e.status.conditions[0]?.type === 'DisruptionTarget')).toBe(true);
  });

  it('leaves pods within their limits alone', async () => {
    const t = setup();
    t.setPods([pod('p', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '100Mi' } }] })]);
    t.stats.current = [{ uid: 'uid-p', containers: [], volumes: [{ name: 'scratch', usedBytes: 100 * Mi }] }];
    expect((await t.manager.synchronize()).evicted).toBeUndefined();
  });
});

describe('run loop', () => {
  it('synchronizes every monitoring interval until aborted, surviving signal errors', async () => {
    const t = setup();
    let fail = true;
    const observe = t.signals.observe.bind(t.signals);
    t.signals.observe = async () => {
      if (fail) {
        fail = false;
        t.signals.calls++;
        throw new Error('cgroup read failed');
      }
      return observe();
    };
    const ac = new AbortController();
    const done = t.manager.run(ac.signal);
    await t.clock.advance(0);
    expect(t.signals.calls).toBe(1);
    await t.clock.advance(10_000);
    expect(t.signals.calls).toBe(2);
    t.signals.current = memoryObs(10 * Mi);
    await t.clock.advance(10_000);
    expect(t.manager.isUnderMemoryPressure()).toBe(true);
    ac.abort();
    await done;
  });
});

describe('run loop after an eviction', () => {
  // Pressure stays until the evicted pod's resources are gone; looking before that would evict
  // a second pod for the same pressure.
  it('waits for the evicted pod to be cleaned up, then looks again at once', async () => {
    let cleanedUp = false;
    const cleanupChecks: string[] = [];
    const t = setup(
      {},
      {
        podCleanedUp: async (p) => {
          cleanupChecks.push(p.metadata?.name ?? '');
          return cleanedUp;
        },
      },
    );
    t.setPods([
      pod('hog', { containers: [{ name: 'hog', image: 'memhog' }] }),
      pod('innocent', { containers: [{ name: 'app', image: 'busybox' }] }),
    ]);
    t.stats.current = [
      { uid: 'uid-hog', containers: [{ name: 'hog', memoryWorkingSetBytes: 900 * Mi }], volumes: [] },
      { uid: 'uid-innocent', containers: [{ name: 'app', memoryWorkingSetBytes: 10 * Mi }], volumes: [] },
    ];
    t.signals.current = memoryObs(10 * Mi);
    const ac = new AbortController();
    const done = t.manager.run(ac.signal);
    await t.clock.advance(0);
    expect(t.killer.evicted.map((e) => e.pod.metadata?.name)).toEqual(['hog']);
    // Still under pressure, but no second eviction while the hog is not cleaned up: one check
    // a second, no synchronize.
    const observed = t.signals.calls;
    await t.clock.advance(5_000);
    expect(cleanupChecks.length).toBeGreaterThanOrEqual(5);
    expect(t.signals.calls).toBe(observed);
    expect(t.killer.evicted).toHaveLength(1);
    // Cleaned up, and the memory came back: the next look is right away, and evicts nobody.
    cleanedUp = true;
    t.signals.current = memoryObs(4 * Gi);
    await t.clock.advance(1_000);
    expect(t.signals.calls).toBe(observed + 1);
    expect(t.killer.evicted).toHaveLength(1);
    ac.abort();
    await done;
  });

  it('gives up waiting after 30 s and synchronizes again', async () => {
    const t = setup({}, { podCleanedUp: async () => false });
    t.setPods([pod('hog', { containers: [{ name: 'hog', image: 'memhog' }] })]);
    t.stats.current = [
      { uid: 'uid-hog', containers: [{ name: 'hog', memoryWorkingSetBytes: 900 * Mi }], volumes: [] },
    ];
    t.signals.current = memoryObs(10 * Mi);
    const ac = new AbortController();
    const done = t.manager.run(ac.signal);
    await t.clock.advance(0);
    const observed = t.signals.calls;
    await t.clock.advance(29_000);
    expect(t.signals.calls).toBe(observed);
    await t.clock.advance(1_000);
    expect(t.signals.calls).toBe(observed + 1);
    ac.abort();
    await done;
  });
});
