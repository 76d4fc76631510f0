// Real memory pressure on real containerd, as Kubernetes' node e2e eviction suite induces it: a
// node container with a memory limit runs two busybox memory hogs of different priority and an
// innocent pod. The eviction manager reads the node's memory cgroup and containerd's stats and
// evicts through the runtime manager. Expected: MemoryPressure appears, the lower-priority hog
// goes first with reason Evicted, the innocent pod survives, the condition clears after the
// transition period, and a BestEffort pod is admitted again afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { realClock } from '@kh/apimachinery';
import type { CriClient } from '@kh/cri-api';
import { type KubeGenericRuntimeManager, runningPodFromStatus } from '@kh/runtime-manager';
import type { StartedNodeContainer } from '@kh/testkit';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvictionManager } from '../../src/eviction/manager.js';
import { CriPodStatsSource } from '../../src/eviction/pod_stats.js';
import { NodeSignalSource } from '../../src/eviction/signals.js';
import { type EvictionConfig, thresholdsMet } from '../../src/eviction/thresholds.js';
import type { EvictionStatus } from '../../src/eviction/types.js';
import { parseQuantityOrPercent } from '../../src/util/quantity.js';
import { type ContainerdTestNode, startContainerdNode } from '../helpers/containerd.js';
import { Mi, pod, podIsRunning, RecordingEvents, syncPodOnce } from './helpers.js';

const NODE_MEMORY = 768 * Mi;
const HOG_MB = 200;

describe.skipIf(process.env.KH_SKIP_INTEGRATION === '1')('memory pressure on real containerd', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kh-evict-mem-'));
  let containerd: ContainerdTestNode<'busybox' | 'memhog'> | undefined;
  let node: StartedNodeContainer | undefined;
  let cri: CriClient;
  let runtime: KubeGenericRuntimeManager;
  const pods: V1Pod[] = [];
  const evicted: { pod: V1Pod; status: EvictionStatus }[] = [];

  beforeAll(async () => {
    containerd = await startContainerdNode(['busybox', 'memhog'], { memoryLimitBytes: NODE_MEMORY });
    ({ node, cri } = containerd);
    const { refs } = containerd;
    runtime = await containerd.runtimeManager();
    const hog = (name: string, priority: number) =>
      pod(name, {
        priority,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'hog',
            image: `docker.io/${refs.memhog}`,
            imagePullPolicy: 'Never',
            env: [
              { name: 'MEMHOG_MB', value: String(HOG_MB) },
              { name: 'MEMHOG_STEP_MB', value: '25' },
            ],
          },
        ],
      });
    const innocent = pod('innocent', {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'app',
          image: `docker.io/${refs.busybox}`,
          imagePullPolicy: 'Never',
          command: ['sleep', '3600'],
          resources: { requests: { memory: '64Mi' } },
        },
      ],
    });
    pods.push(hog('hog-low', -10), hog('hog-high', 10), innocent);
  }, 600_000);

  afterAll(async () => {
    await containerd?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('evicts the lower-priority hog, spares the rest, and recovers', async () => {
    if (!node) throw new Error('no node');
    // The node's own memory cgroup (cgroup v1 on this host): the pods' parent.
    const signals = new NodeSignalSource({
      memoryCgroupDir: join('/sys/fs/cgroup/memory', dirname(node.cgroupParent)),
      rootDir: dir,
    });
    const baseline = await signals.memory();
    expect(baseline?.capacity).toBe(NODE_MEMORY);
    // Pressure once the hogs together hold more than 1.5 hogs' worth.
    const thresholdBytes = (baseline?.available ?? 0) - 1.5 * HOG_MB * Mi;
    const threshold = `${Math.floor(thresholdBytes / Mi)}Mi`;
    console.log(
      `baseline available ${Math.round((baseline?.available ?? 0) / Mi)}Mi, threshold ${threshold}`,
    );
    const config: EvictionConfig = {
      thresholds: [
        {
          signal: 'memory.available',
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
    const events = new RecordingEvents();
    const manager = new EvictionManager({
      config,
      signals,
      podStats: new CriPodStatsSource(cri, { podsDir: containerd?.podsDir ?? '' }),
      activePods: () => pods.filter((p) => !evicted.some((e) => e.pod === p)),
      killer: {
        killPod: async (p, _isEvicted, grace, status) => {
          const s = await runtime.getPodStatus(p.metadata?.uid ?? '', p.metadata?.name ?? '', 'default');
          await runtime.killPod(p, runningPodFromStatus(s), grace);
          evicted.push({ pod: p, status });
        },
      },
      recorder: events,
      clock: realClock,
    });

    for (const p of pods) await syncPodOnce(runtime, p);
    const seen = new Set<string>();
    const deadline = Date.now() + 120_000;
    while (evicted.length === 0 && Date.now() < deadline) {
      const r = await manager.synchronize();
      for (const c of r.conditions) seen.add(c);
      const avail = r.observations['memory.available']?.available ?? 0;
      console.log(`memory.available ${Math.round(avail / Mi)}Mi conditions [${r.conditions.join(' ')}]`);
      if (evicted.length === 0) await new Promise((res) => setTimeout(res, 1_000));
    }
    expect(seen.has('MemoryPressure')).toBe(true);
    expect(evicted.map((e) => e.pod.metadata?.name)).toEqual(['hog-low']);
    expect(evicted[0]?.status.reason).toBe('Evicted');
    expect(evicted[0]?.status.message).toMatch(
      /^The node was low on resource: memory\. Threshold quantity: \d+Mi, available: \S+\. Container hog was using \S+, request is 0, has larger consumption of memory\. $/,
    );
    expect(events.events[0]?.annotations).toMatchObject({
      offending_containers: 'hog',
      starved_resource: 'memory',
    });
    expect(await podIsRunning(runtime, pods[0] as V1Pod)).toBe(false);

    // Memory comes back; the condition holds for the transition period, then clears.
    const cleared = Date.now() + 60_000;
    let last = await manager.synchronize();
    while (last.conditions.length > 0 && Date.now() < cleared) {
      await new Promise((res) => setTimeout(res, 1_000));
      last = await manager.synchronize();
    }
    expect(thresholdsMet(config.thresholds, last.observations, false)).toEqual([]);
    expect(last.conditions).toEqual([]);
    expect(evicted).toHaveLength(1);
    expect(await podIsRunning(runtime, pods[1] as V1Pod)).toBe(true);
    expect(await podIsRunning(runtime, pods[2] as V1Pod)).toBe(true);
    expect(manager.admit({ pod: pod('besteffort-after'), otherPods: [] })).toEqual({ admit: true });
  }, 240_000);
});
