// Real disk pressure on real containerd: a busybox disk hog fills an emptyDir on the node's
// nodefs (a 1Gi tmpfs of its own) against a threshold computed from the free space at the start, as Kubernetes'
// node e2e eviction suite does. Node-level reclaim runs first and cannot help; the hog is
// evicted by its ephemeral storage, the innocent pod survives, and the condition clears once
// the hog's volume is cleaned up. Local storage isolation evicts a pod that overfills its
// emptyDir sizeLimit with no node pressure at all.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { realClock } from '@kh/apimachinery';
import type { CriClient } from '@kh/cri-api';
import { type KubeGenericRuntimeManager, runningPodFromStatus } from '@kh/runtime-manager';
import type { StartedNodeContainer } from '@kh/testkit';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvictionManager } from '../../src/eviction/manager.js';
import { CriPodStatsSource } from '../../src/eviction/pod_stats.js';
import { NodeSignalSource } from '../../src/eviction/signals.js';
import type { EvictionConfig } from '../../src/eviction/thresholds.js';
import type { EvictionStatus, PodKiller } from '../../src/eviction/types.js';
import { DEFAULT_CONTAINER_GC_POLICY } from '../../src/gc/garbage_collector.js';
import { runtimeReclaimer } from '../../src/gc/reclaimer.js';
import { parseQuantityOrPercent } from '../../src/util/quantity.js';
import { type ContainerdTestNode, startContainerdNode } from '../helpers/containerd.js';
import { Mi, pod, podIsRunning, RecordingEvents, syncPodOnce } from './helpers.js';

describe.skipIf(process.env.KH_SKIP_INTEGRATION === '1')('disk pressure on real containerd', () => {
  let containerd: ContainerdTestNode<'busybox' | 'diskhog'> | undefined;
  let node: StartedNodeContainer | undefined;
  let cri: CriClient;
  let runtime: KubeGenericRuntimeManager;
  let refs: Record<'pause' | 'busybox' | 'diskhog' | 'node', string>;
  let podsDir: string;

  beforeAll(async () => {
    // The pods' directory on a tmpfs of its own: other writers on the host's disk (the other
    // packages' tests, image builds) once took 1.6Gi during a case and held the pressure up.
    containerd = await startContainerdNode(['busybox', 'diskhog'], { sharedDirOnTmpfs: 'size=1g' });
    ({ node, cri, refs, podsDir } = containerd);
    runtime = await containerd.runtimeManager();
  }, 600_000);

  afterAll(async () => {
    await containerd?.stop();
  }, 120_000);

  const diskhog = (name: string, mb: number, sizeLimit?: string): V1Pod =>
    pod(name, {
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: 'scratch', emptyDir: sizeLimit ? { sizeLimit } : {} }],
      containers: [
        {
          name: 'hog',
          image: `docker.io/${refs.diskhog}`,
          imagePullPolicy: 'Never',
          env: [
            { name: 'DISKHOG_MB', value: String(mb) },
            { name: 'DISKHOG_STEP_MB', value: '50' },
            { name: 'DISKHOG_DIR', value: '/scratch' },
          ],
          volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
        },
      ],
    });
  const innocent = (): V1Pod =>
    pod('innocent', {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'app',
          image: `docker.io/${refs.busybox}`,
          imagePullPolicy: 'Never',
          command: ['sleep', '3600'],
        },
      ],
    });

  function killer(evicted: { pod: V1Pod; status: EvictionStatus }[]): PodKiller {
    return {
      async killPod(p, _isEvicted, grace, status) {
        const s = await runtime.getPodStatus(p.metadata?.uid ?? '', p.metadata?.name ?? '', 'default');
        await runtime.killPod(p, runningPodFromStatus(s), grace);
        // The kubelet's volume manager removes a terminated pod's emptyDirs; do it here.
        await rm(join(podsDir, p.metadata?.uid ?? '', 'volumes'), { recursive: true, force: true });
        evicted.push({ pod: p, status });
      },
    };
  }

  async function untilEvicted(manager: EvictionManager, evicted: unknown[], seen: Set<string>) {
    const deadline = Date.now() + 120_000;
    while (evicted.length === 0 && Date.now() < deadline) {
      const r = await manager.synchronize();
      for (const c of r.conditions) seen.add(c);
      const avail = r.observations['nodefs.available']?.available ?? 0;
      console.log(`nodefs.available ${Math.round(avail / Mi)}Mi conditions [${r.conditions.join(' ')}]`);
      if (evicted.length === 0) await new Promise((res) => setTimeout(res, 1_000));
    }
  }

  it('reclaims at node level, then evicts the disk hog and spares the innocent pod', async () => {
    if (!node) throw new Error('no node');
    const signals = new NodeSignalSource({ memoryCgroupDir: '', rootDir: node.sharedDirOnHost });
    const free0 = (await signals.observe())['nodefs.available']?.available ?? 0;
    // The hog writes 600Mi against a 250Mi margin.
    const threshold = `${Math.floor((free0 - 250 * Mi) / Mi)}Mi`;
    console.log(`free ${Math.round(free0 / Mi)}Mi, nodefs threshold ${threshold}`);
    const config: EvictionConfig = {
      thresholds: [
        {
          signal: 'nodefs.available',
          operator: 'LessThan',
          value: parseQuantityOrPercent(threshold),
          gracePeriodMs: 0,
          hard: true,
        },
      ],
      pressureTransitionPeriodMs: 5_000,
      maxPodGracePeriodSeconds: 0,
      monitoringIntervalMs: 1_000,
    };
    const hog = diskhog('diskhog', 600);
    const ok = innocent();
    const pods = [hog, ok];
    const evicted: { pod: V1Pod; status: EvictionStatus }[] = [];
    const reclaims: string[] = [];
    const reclaimer = runtimeReclaimer({
      runtime,
      containerPolicy: DEFAULT_CONTAINER_GC_POLICY,
      allSourcesReady: () => true,
      sandboxImage: refs.pause,
    });
    const events = new RecordingEvents();
    const manager = new EvictionManager({
      config,
      signals,
      podStats: new CriPodStatsSource(cri, { podsDir, podLogsDir: join(node.sharedDirOnHost, 'logs') }),
      activePods: () => pods.filter((p) => !evicted.some((e) => e.pod === p)),
      killer: killer(evicted),
      reclaimer: {
        deleteAllUnusedContainers: async () => {
          reclaims.push('containers');
          await reclaimer.deleteAllUnusedContainers();
        },
        deleteUnusedImages: async () => {
          reclaims.push('images');
          await reclaimer.deleteUnusedImages();
        },
      },
      recorder: events,
      clock: realClock,
    });
    for (const p of pods) await syncPodOnce(runtime, p);
    const seen = new Set<string>();
    await untilEvicted(manager, evicted, seen);
    expect(seen.has('DiskPressure')).toBe(true);
    expect(reclaims.slice(0, 2)).toEqual(['containers', 'images']);
    expect(evicted.map((e) => e.pod.metadata?.name)).toEqual(['diskhog']);
    expect(evicted[0]?.status.reason).toBe('Evicted');
    expect(evicted[0]?.status.message).toMatch(
      /^The node was low on resource: ephemeral-storage\. Threshold quantity: \d+Mi, available: \S+\. Container hog was using \S+, request is 0, has larger consumption of ephemeral-storage\. $/,
    );
    expect(manager.admit({ pod: pod('during'), otherPods: [] })).toMatchObject({
      admit: false,
      message: 'The node had condition: [DiskPressure]. ',
    });
    expect(await podIsRunning(runtime, hog)).toBe(false);

    const deadline = Date.now() + 60_000;
    let r = await manager.synchronize();
    while (r.conditions.length > 0 && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 1_000));
      r = await manager.synchronize();
    }
    expect(r.conditions).toEqual([]);
    expect(evicted).toHaveLength(1);
    expect(await podIsRunning(runtime, ok)).toBe(true);
    expect(manager.admit({ pod: pod('after'), otherPods: [] })).toEqual({ admit: true });
    // The images the pods use survived node-level reclaim.
    const tags = (await cri.listImages({})).images.flatMap((i) => i.repoTags).join(' ');
    expect(tags).toContain(refs.busybox);
    expect(tags).toContain(refs.pause);
  }, 240_000);

  it('evicts a pod that overfills its emptyDir sizeLimit without node pressure', async () => {
    if (!node) throw new Error('no node');
    const signals = new NodeSignalSource({ memoryCgroupDir: '', rootDir: node.sharedDirOnHost });
    const hog = diskhog('overfill', 150, '64Mi');
    const evicted: { pod: V1Pod; status: EvictionStatus }[] = [];
    const manager = new EvictionManager({
      config: {
        thresholds: [],
        pressureTransitionPeriodMs: 5_000,
        maxPodGracePeriodSeconds: 0,
        monitoringIntervalMs: 1_000,
      },
      signals,
      podStats: new CriPodStatsSource(cri, { podsDir }),
      activePods: () => (evicted.length ? [] : [hog]),
      killer: killer(evicted),
      recorder: new RecordingEvents(),
      clock: realClock,
    });
    await syncPodOnce(runtime, hog);
    const seen = new Set<string>();
    await untilEvicted(manager, evicted, seen);
    expect(seen.size).toBe(0);
    expect(evicted[0]?.status.message).toBe('Usage of EmptyDir volume "scratch" exceeds the limit "64Mi". ');
    expect(await podIsRunning(runtime, hog)).toBe(false);
  }, 180_000);
});
