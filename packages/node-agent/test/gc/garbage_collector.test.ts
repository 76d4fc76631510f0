import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import {
  type ContainerGCPolicy,
  type ImageGCResult,
  ImageGCShortfallError,
  KubeGenericRuntimeManager,
} from '@kh/runtime-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONTAINER_GC_POLICY, GarbageCollector } from '../../src/gc/garbage_collector.js';
import { runtimeReclaimer } from '../../src/gc/reclaimer.js';
import { KubeletMetrics } from '../../src/metrics/metrics.js';

function scripted(periods: { imageGCPeriodMs?: number } = {}) {
  const clock = new FakeClock();
  const gcCalls: [ContainerGCPolicy, boolean, boolean][] = [];
  const containerErrors: (Error | undefined)[] = [];
  const imageOutcomes: (ImageGCResult | Error)[] = [];
  let imageCalls = 0;
  const events: [string, string, string][] = [];
  const metrics = new KubeletMetrics();
  let sourcesReady = false;
  const gc = new GarbageCollector({
    runtime: {
      garbageCollect: async (policy, ready, evict) => {
        gcCalls.push([policy, ready, evict]);
        const e = containerErrors.shift();
        if (e) throw e;
      },
    },
    imageGC: {
      garbageCollect: async () => {
        imageCalls++;
        const o = imageOutcomes.shift() ?? { freedBytes: 0, removed: [], usagePercentBefore: 10 };
        if (o instanceof Error) throw o;
        return o;
      },
    },
    containerPolicy: { minAgeMs: 60_000, maxPerPodContainer: 2, maxContainers: 100 },
    allSourcesReady: () => sourcesReady,
    recorder: { nodeEvent: (type, reason, message) => events.push([type, reason, message]) },
    metrics,
    clock,
    ...periods,
  });
  return {
    clock,
    gc,
    gcCalls,
    containerErrors,
    imageOutcomes,
    events,
    metrics,
    imageCalls: () => imageCalls,
    ready: () => {
      sourcesReady = true;
    },
  };
}

describe('GarbageCollector', () => {
  it('runs container GC at once and every minute, image GC at once and every five minutes, until stopped', async () => {
    const t = scripted();
    const ac = new AbortController();
    const done = t.gc.run(ac.signal);
    await t.clock.advance(0);
    expect(t.gcCalls).toEqual([
      [{ minAgeMs: 60_000, maxPerPodContainer: 2, maxContainers: 100 }, false, false],
    ]);
    expect(t.imageCalls()).toBe(1);
    await t.clock.advance(59_999);
    expect(t.gcCalls).toHaveLength(1);
    t.ready();
    await t.clock.advance(1);
    expect(t.gcCalls).toHaveLength(2);
    expect(t.gcCalls[1]?.[1]).toBe(true);
    await t.clock.advance(3 * 60_000);
    expect(t.gcCalls).toHaveLength(5);
    expect(t.imageCalls()).toBe(1);
    await t.clock.advance(60_000);
    expect(t.imageCalls()).toBe(2);
    ac.abort();
    await done;
    await t.clock.advance(10 * 60_000);
    expect(t.gcCalls).toHaveLength(6);
    expect(t.clock.pendingTimers()).toBe(0);
    const runs = await t.metrics.registry.getSingleMetricAsString('kh_garbage_collection_runs_total');
    expect(runs).toContain('kh_garbage_collection_runs_total{kind="container",result="success"} 6');
    expect(runs).toContain('kh_garbage_collection_runs_total{kind="image",result="success"} 2');
  });

  it('runs image GC at the test-only period when one is given', async () => {
    const t = scripted({ imageGCPeriodMs: 10_000 });
    const ac = new AbortController();
    const done = t.gc.run(ac.signal);
    await t.clock.advance(0);
    expect(t.imageCalls()).toBe(1);
    await t.clock.advance(9_999);
    expect(t.imageCalls()).toBe(1);
    await t.clock.advance(1);
    expect(t.imageCalls()).toBe(2);
    await t.clock.advance(30_000);
    expect(t.imageCalls()).toBe(5);
    ac.abort();
    await done;
  });

  it('records ContainerGCFailed for every failed container GC', async () => {
    const t = scripted();
    t.containerErrors.push(new Error('container GC: rpc error: unavailable'));
    expect(await t.gc.collectContainers()).toBe(false);
    expect(await t.gc.collectContainers()).toBe(true);
    expect(t.events).toEqual([['Warning', 'ContainerGCFailed', 'container GC: rpc error: unavailable']]);
    const runs = await t.metrics.registry.getSingleMetricAsString('kh_garbage_collection_runs_total');
    expect(runs).toContain('result="failure"} 1');
  });

  it('records ImageGCFailed only for repeated failures, FreeDiskSpaceFailed for shortfalls, and counts removed images', async () => {
    const t = scripted();
    const result = { freedBytes: 10, removed: ['sha256:a'], usagePercentBefore: 90 };
    t.imageOutcomes.push(
      new Error('invalid capacity 0 on image filesystem'),
      new ImageGCShortfallError(
        'Failed to garbage collect required amount of images. Attempted to free 100 bytes, but only found 10 bytes eligible to free',
        result,
      ),
      { freedBytes: 20, removed: ['sha256:b', 'sha256:c'], usagePercentBefore: 90 },
      new Error('again'),
    );
    expect(await t.gc.collectImages()).toBeUndefined();
    expect(t.events).toEqual([]);
    await t.gc.collectImages();
    expect(t.events.map((e) => e[1])).toEqual(['FreeDiskSpaceFailed', 'ImageGCFailed']);
    expect(t.events[1]?.[2]).toMatch(/^Failed to garbage collect required amount of images/);
    expect((await t.gc.collectImages())?.removed).toHaveLength(2);
    await t.gc.collectImages();
    expect(t.events).toHaveLength(2);
    const collected = await t.metrics.registry.getSingleMetricAsString(
      'kubelet_image_garbage_collected_total',
    );
    expect(collected).toContain('kubelet_image_garbage_collected_total{reason="space"} 3');
  });

  it('counts images removed for imageMaximumGCAge under reason="age", the rest under reason="space"', async () => {
    const t = scripted();
    t.imageOutcomes.push({
      freedBytes: 30,
      removed: ['sha256:old', 'sha256:older', 'sha256:big'],
      removedForAge: ['sha256:old', 'sha256:older'],
      usagePercentBefore: 90,
    });
    await t.gc.collectImages();
    const collected = await t.metrics.registry.getSingleMetricAsString(
      'kubelet_image_garbage_collected_total',
    );
    expect(collected).toContain('kubelet_image_garbage_collected_total{reason="age"} 2');
    expect(collected).toContain('kubelet_image_garbage_collected_total{reason="space"} 1');
  });

  it('reclaims containers with evictNonDeletedPods, so terminated pods lose theirs', async () => {
    const calls: [ContainerGCPolicy, boolean, boolean][] = [];
    const reclaimer = runtimeReclaimer({
      runtime: {
        garbageCollect: async (p, r, e) => {
          calls.push([p, r, e]);
        },
        getPods: async () => [],
        listImages: async () => [],
        removeImage: async () => {},
      },
      containerPolicy: DEFAULT_CONTAINER_GC_POLICY,
      allSourcesReady: () => true,
    });
    await reclaimer.deleteAllUnusedContainers();
    expect(calls).toEqual([[DEFAULT_CONTAINER_GC_POLICY, true, true]]);
  });

  it('has the kubelet default container GC policy', () => {
    expect(DEFAULT_CONTAINER_GC_POLICY).toEqual({ minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 });
  });
});

describe('with the runtime manager over the fake CRI runtime', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kh-gc-'));
  let fake: FakeRuntime;
  let cri: CriClient;
  let runtime: KubeGenericRuntimeManager;
  const labels = (name: string) => ({
    'io.kubernetes.pod.uid': 'uid-1',
    'io.kubernetes.pod.name': 'web',
    'io.kubernetes.pod.namespace': 'default',
    'io.kubernetes.container.name': name,
  });

  beforeAll(async () => {
    fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock') });
    cri = await CriClient.connect(fake.endpoint);
    runtime = await KubeGenericRuntimeManager.create({
      cri,
      podLogsRootDir: join(dir, 'logs'),
      podsDir: join(dir, 'pods'),
      podSandboxImage: 'pause:1',
      imageGCPolicy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 0 },
      imageFsCapacity: async () => 1000,
    });
    fake.addImage('pause:1', 100);
    fake.addImage('app:1', 100);
    fake.addImage('old:1', 300);
    fake.addImage('older:1', 300);
    const { podSandboxId } = await cri.runPodSandbox({
      config: { metadata: { name: 'web', namespace: 'default', uid: 'uid-1' }, labels: labels('') },
    });
    // Three dead instances of one container and a running one.
    for (let attempt = 0; attempt < 4; attempt++) {
      const { containerId } = await cri.createContainer({
        podSandboxId,
        config: { metadata: { name: 'app', attempt }, image: { image: 'app:1' }, labels: labels('app') },
      });
      await cri.startContainer({ containerId });
      if (attempt < 3) await cri.stopContainer({ containerId, timeout: 0n });
    }
  });
  afterAll(async () => {
    cri?.close();
    await fake?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const exited = async () =>
    (await cri.listContainers({ filter: { state: { state: 2 } } })).containers.length;

  it('removes dead containers beyond maxPerPodContainer and unused images above the high threshold', async () => {
    const clock = new FakeClock();
    const events: string[] = [];
    const gc = new GarbageCollector({
      runtime,
      imageGC: runtime.imageGC,
      containerPolicy: DEFAULT_CONTAINER_GC_POLICY,
      allSourcesReady: () => true,
      recorder: { nodeEvent: (_t, reason) => events.push(reason) },
      clock,
    });
    expect(await exited()).toBe(3);
    expect(await gc.collectContainers()).toBe(true);
    expect(await exited()).toBe(1);

    fake.setImageFs({ usedBytes: 900 });
    const result = await gc.collectImages();
    expect(result?.usagePercentBefore).toBe(90);
    expect(result?.freedBytes).toBeGreaterThanOrEqual(100);
    const left = (await cri.listImages({})).images.flatMap((i) => i.repoTags);
    expect(left.some((t) => t.includes('app:1'))).toBe(true);
    expect(left.some((t) => t.includes('pause:1'))).toBe(true);
    expect(events).toEqual([]);
  });

  it('reclaims every dead container and unused image for the eviction manager', async () => {
    fake.addImage('spare:1', 50);
    const reclaimer = runtimeReclaimer({
      runtime,
      containerPolicy: DEFAULT_CONTAINER_GC_POLICY,
      allSourcesReady: () => true,
      sandboxImage: 'pause:1',
    });
    // The pod still exists, so the policy's newest dead instance per container stays.
    await reclaimer.deleteAllUnusedContainers();
    expect(await exited()).toBe(1);
    await reclaimer.deleteUnusedImages();
    const left = (await cri.listImages({})).images.flatMap((i) => i.repoTags).sort();
    expect(left).toEqual(['docker.io/library/app:1', 'docker.io/library/pause:1']);
  });
});
