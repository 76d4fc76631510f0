import { FakeClock, flushMicrotasks } from '@kh/apimachinery';
import { emptyPodStatus, PodCache, type PodStatus } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { BACKOFF_EXPIRY_SLACK_MS, PodSyncStatuses, PodWorkerPool } from '../src/pods/pod_workers.js';
import { CrashLoopBackOffError, type PodSyncer } from '../src/pods/types.js';

const pod = (name: string, version = '1', over: Partial<V1Pod['metadata']> = {}): V1Pod => ({
  metadata: { name, uid: name, resourceVersion: version, ...over },
});

/** A pod cache the PLEG has always just refreshed: the rules below are the workers' own. */
let stamps = 0;
const alwaysFresh = {
  getNewerThan: async (uid: string) => emptyPodStatus(uid, 0),
  now: () => ++stamps,
};

type PoolOptions = ConstructorParameters<typeof PodWorkerPool>[0];
const newPool = (syncer: PodSyncer, opts: Partial<PoolOptions> = {}) =>
  new PodWorkerPool({
    syncer,
    podCache: alwaysFresh,
    syncStatuses: new PodSyncStatuses(),
    clock: new FakeClock(),
    ...opts,
  });

/** A syncer whose passes finish only when the test releases them. */
class GatedSyncer implements PodSyncer {
  log: string[] = [];
  private gates: (() => void)[] = [];
  /** What the next pass fails with, if anything. */
  failNext: Error | undefined;

  private gate(entry: string): Promise<void> {
    this.log.push(entry);
    return new Promise((resolve, reject) => {
      this.gates.push(() => {
        const err = this.failNext;
        this.failNext = undefined;
        if (err) reject(err);
        else resolve();
      });
    });
  }

  /** The signal of every normal pass, in order. */
  signals: (AbortSignal | undefined)[] = [];
  /** The status each pass was handed, in order. */
  statuses: PodStatus[] = [];

  async syncPod(p: V1Pod, status: PodStatus, signal?: AbortSignal) {
    this.signals.push(signal);
    this.statuses.push(status);
    await this.gate(`sync ${p.metadata?.name}@${p.metadata?.resourceVersion}`);
    return false;
  }

  syncTerminatingPod(p: V1Pod, status: PodStatus, grace?: number) {
    this.statuses.push(status);
    return this.gate(`kill ${p.metadata?.name} grace=${grace}`);
  }

  async syncTerminatedPod(p: V1Pod, status: PodStatus) {
    this.statuses.push(status);
    this.log.push(`terminated ${p.metadata?.name}`);
  }

  /** Releases every pass, including those that start meanwhile (each first waits on the cache). */
  async releaseAll() {
    await flushMicrotasks();
    while (this.gates.length > 0) {
      for (const g of this.gates.splice(0)) g();
      await flushMicrotasks();
    }
  }
}

describe('PodWorkerPool', () => {
  it('serialises work per pod, runs pods in parallel, and coalesces updates', async () => {
    const syncer = new GatedSyncer();
    const pool = newPool(syncer);
    pool.updatePod({ pod: pod('a'), op: 'create' });
    pool.updatePod({ pod: pod('b'), op: 'create' });
    await flushMicrotasks();
    expect(syncer.log).toEqual(['sync a@1', 'sync b@1']); // both started: parallel across pods
    pool.updatePod({ pod: pod('a', '2'), op: 'update' });
    pool.updatePod({ pod: pod('a', '3'), op: 'update' });
    await flushMicrotasks();
    expect(syncer.log).toHaveLength(2); // a is busy: nothing new starts for it
    await syncer.releaseAll();
    await pool.settle();
    expect(syncer.log).toEqual(['sync a@1', 'sync b@1', 'sync a@3']); // one more pass, newest pod
  });

  it('kills once with the shortest grace period and never syncs a killed pod again', async () => {
    const syncer = new GatedSyncer();
    const pool = newPool(syncer);
    pool.updatePod({ pod: pod('a'), op: 'create' });
    await flushMicrotasks();
    pool.updatePod({
      pod: pod('a', '2', { deletionTimestamp: new Date(1), deletionGracePeriodSeconds: 30 }),
      op: 'update',
    });
    pool.updatePod({ pod: pod('a', '3'), op: 'kill', gracePeriodSeconds: 5 });
    pool.updatePod({ pod: pod('a', '4'), op: 'kill', gracePeriodSeconds: 60 });
    expect(pool.isPodTerminationRequested('a')).toBe(true);
    await syncer.releaseAll();
    await pool.settle();
    pool.updatePod({ pod: pod('a', '5'), op: 'sync' });
    await syncer.releaseAll();
    expect(syncer.log).toEqual(['sync a@1', 'kill a grace=5', 'terminated a']);
    expect(pool.isPodTerminated('a')).toBe(true);
    pool.syncKnownPods([]);
    expect(pool.isPodTerminationRequested('a')).toBe(false); // forgotten
  });

  it('starts a UID created again while it terminated only after housekeeping forgot the old worker', async () => {
    const syncer = new GatedSyncer();
    const pool = newPool(syncer);
    pool.updatePod({ pod: pod('a'), op: 'create' });
    await flushMicrotasks();
    pool.updatePod({ pod: pod('a', '2'), op: 'kill', gracePeriodSeconds: 1 });
    // The same UID wanted again (a static pod's manifest removed and written back).
    pool.updatePod({ pod: pod('a', '3'), op: 'create' });
    await syncer.releaseAll();
    await pool.settle();
    expect(syncer.log).toEqual(['sync a@1', 'kill a grace=1', 'terminated a']);
    expect(pool.syncKnownPods([pod('a', '3')]).map((p) => p.metadata?.resourceVersion)).toEqual(['3']);
    expect(pool.isPodTerminated('a')).toBe(false);
    pool.updatePod({ pod: pod('a', '3'), op: 'create' });
    await syncer.releaseAll();
    await pool.settle();
    expect(syncer.log.at(-1)).toBe('sync a@3');
  });

  it('keeps a terminated worker of a desired pod that no create asked back', async () => {
    const syncer = new GatedSyncer();
    const pool = newPool(syncer);
    pool.updatePod({ pod: pod('a'), op: 'create' });
    await flushMicrotasks();
    pool.updatePod({ pod: pod('a', '2'), op: 'kill', gracePeriodSeconds: 1 });
    await syncer.releaseAll();
    await pool.settle();
    expect(pool.syncKnownPods([pod('a', '2')])).toEqual([]);
    expect(pool.isPodTerminated('a')).toBe(true);
  });

  it('aborts the normal pass in flight when termination is requested, then only terminates', async () => {
    for (const terminate of [
      (p: PodWorkerPool) =>
        p.updatePod({ pod: pod('a', '2', { deletionTimestamp: new Date(1) }), op: 'update' }),
      (p: PodWorkerPool) => p.updatePod({ pod: pod('a', '2'), op: 'kill', gracePeriodSeconds: 1 }),
    ]) {
      const syncer = new GatedSyncer();
      const pool = newPool(syncer);
      pool.updatePod({ pod: pod('a'), op: 'create' });
      await flushMicrotasks();
      expect(syncer.signals[0]?.aborted).toBe(false);
      // A liveness failure's sync, then the deletion, while the first pass still runs.
      pool.updatePod({ pod: pod('a'), op: 'sync' });
      terminate(pool);
      expect(syncer.signals[0]?.aborted).toBe(true);
      await syncer.releaseAll();
      await pool.settle();
      expect(syncer.log).toEqual(['sync a@1', expect.stringMatching(/^kill a grace=/), 'terminated a']);
    }
  });

  it('retries a failed sync after the backoff', async () => {
    const syncer = new GatedSyncer();
    const clock = new FakeClock();
    const pool = newPool(syncer, { clock, retryMs: 10_000 });
    syncer.failNext = new Error('sync failed');
    pool.updatePod({ pod: pod('a'), op: 'create' });
    await syncer.releaseAll();
    await pool.settle();
    expect(syncer.log).toEqual(['sync a@1']);
    await clock.advance(9_999);
    expect(syncer.log).toHaveLength(1);
    await clock.advance(1);
    expect(syncer.log).toEqual(['sync a@1', 'sync a@1']);
    await syncer.releaseAll();
  });

  it('retries a pass that left a container backing off when the back-off expires', async () => {
    const syncer = new GatedSyncer();
    const clock = new FakeClock();
    const pool = newPool(syncer, { clock, retryMs: 10_000 });
    syncer.failNext = new CrashLoopBackOffError('back-off 40s restarting failed container=c', 25_000);
    pool.updatePod({ pod: pod('a'), op: 'create' });
    await syncer.releaseAll();
    await pool.settle();
    await clock.advance(25_000 + BACKOFF_EXPIRY_SLACK_MS - 1);
    expect(syncer.log).toEqual(['sync a@1']); // not at the fixed 10 s retry, nor before the expiry
    await clock.advance(1);
    expect(syncer.log).toEqual(['sync a@1', 'sync a@1']);
    syncer.failNext = new CrashLoopBackOffError('back-off 5m0s restarting failed container=c', 300_000);
    await syncer.releaseAll();
    await pool.settle();
    // An update syncs at once; once it succeeds, the back-off retry it replaced never comes.
    pool.updatePod({ pod: pod('a', '2'), op: 'update' });
    await syncer.releaseAll();
    await pool.settle();
    await clock.advance(300_000 + BACKOFF_EXPIRY_SLACK_MS);
    expect(syncer.log).toEqual(['sync a@1', 'sync a@1', 'sync a@2']);
  });
});

describe("PodWorkerPool's sync status: what of a pod may be removed", () => {
  /** [shouldPodContentBeRemoved, shouldPodRuntimeBeRemoved] */
  const removable = (statuses: PodSyncStatuses, uid: string) => [
    statuses.shouldPodContentBeRemoved(uid),
    statuses.shouldPodRuntimeBeRemoved(uid),
  ];

  /** A pool with pod `a` synced once; its kills wait for finish(). */
  async function withPod() {
    const syncer = new GatedSyncer();
    const statuses = new PodSyncStatuses();
    const pool = newPool(syncer, { syncStatuses: statuses });
    pool.updatePod({ pod: pod('a'), op: 'create' });
    await syncer.releaseAll();
    await pool.settle();
    const finish = async () => {
      await syncer.releaseAll();
      await pool.settle();
    };
    return { pool, a: () => removable(statuses, 'a'), finish };
  }

  it('lets the content of a pod being deleted go once terminated', async () => {
    const { pool, a, finish } = await withPod();
    pool.updatePod({ pod: pod('a', '2', { deletionTimestamp: new Date(1) }), op: 'update' });
    expect(a()).toEqual([false, false]);
    await finish();
    expect(a()).toEqual([true, true]);
    expect(pool.shouldPodContentBeRemoved('a')).toBe(true);
  });

  it("lets an evicted pod's content and runtime objects go once terminated", async () => {
    const { pool, a, finish } = await withPod();
    const killed = pool.killPodNow(pod('a'), 1, true);
    expect(a()).toEqual([false, false]);
    await finish();
    await killed;
    expect(a()).toEqual([true, true]);
  });

  it('keeps the content of a pod killed otherwise, even once terminated', async () => {
    const { pool, a, finish } = await withPod();
    const killed = pool.killPodNow(pod('a'), 1, false);
    // A later eviction, or deletion, does not change how its termination began.
    pool.updatePod({ pod: pod('a', '2', { deletionTimestamp: new Date(1) }), op: 'kill', evict: true });
    await finish();
    await killed;
    expect(a()).toEqual([false, true]);
  });

  it('counts a pod no longer desired as deleted once housekeeping synced the workers', async () => {
    const { pool, a, finish } = await withPod();
    pool.updatePod({ pod: pod('a', '2'), op: 'kill' });
    expect(pool.syncKnownPods([])).toEqual([]);
    expect(a()).toEqual([false, false]); // still terminating
    await finish();
    expect(a()).toEqual([true, true]);
    pool.syncKnownPods([]); // forgotten: now as a pod the workers never saw, after the sync
    expect(pool.isPodTerminationRequested('a')).toBe(false);
    expect(a()).toEqual([true, true]);
  });

  it('keeps what a pod the workers never saw left until housekeeping synced them', () => {
    const statuses = new PodSyncStatuses();
    const pool = newPool(new GatedSyncer(), { syncStatuses: statuses });
    expect(removable(statuses, 'x')).toEqual([false, false]);
    pool.syncKnownPods([pod('a')]);
    expect(removable(statuses, 'x')).toEqual([true, true]);
  });
});

describe('PodWorkerPool and the pod cache', () => {
  const status = (uid: string, name: string): PodStatus => ({ ...emptyPodStatus(uid, 0), name });

  it('hands each pass the status the PLEG cached after the previous pass ended, and waits for one', async () => {
    const cache = new PodCache(new FakeClock());
    const syncer = new GatedSyncer();
    const pool = newPool(syncer, { podCache: cache });
    const first = status('a', 'first');
    cache.set(first, cache.now());
    cache.updateTime(cache.now()); // the first relist
    pool.updatePod({ pod: pod('a'), op: 'create' });
    await flushMicrotasks();
    expect(syncer.statuses).toEqual([first]);
    expect(syncer.statuses[0]).toBe(first);
    await syncer.releaseAll();

    // A resync right after: the cache holds nothing newer than that pass, so it waits.
    pool.updatePod({ pod: pod('a', '2'), op: 'sync' });
    await flushMicrotasks();
    expect(syncer.log).toEqual(['sync a@1']);
    const second = status('a', 'second');
    cache.set(second, cache.now()); // the PLEG saw what the first pass did
    await flushMicrotasks();
    expect(syncer.log).toEqual(['sync a@1', 'sync a@2']);
    expect(syncer.statuses[1]).toBe(second);
    await syncer.releaseAll();

    // Termination: the kill waits too, and takes the pod as the cache has it then (unchanged).
    pool.updatePod({ pod: pod('a', '3'), op: 'kill', gracePeriodSeconds: 1 });
    await flushMicrotasks();
    expect(syncer.log).toHaveLength(2);
    cache.updateTime(cache.now()); // a relist that saw no change
    await flushMicrotasks();
    expect(syncer.log.at(-1)).toBe('kill a grace=1');
    expect(syncer.statuses[2]).toBe(second);
    await syncer.releaseAll();
    // Terminated once the kill returned (the kubelet's completeTerminating); the last pass reports
    // from a status read after the kill, not the one it killed from, and until then the lane stays.
    expect(syncer.log.at(-1)).toBe('kill a grace=1');
    expect(pool.isPodTerminated('a')).toBe(true);
    expect(pool.syncKnownPods([])).toEqual([]);
    const stopped = status('a', 'stopped');
    cache.set(stopped, cache.now());
    await pool.settle();
    expect(syncer.log.at(-1)).toBe('terminated a');
    expect(syncer.statuses[3]).toBe(stopped);
  });

  it("resolves killPodNow when the kill returns, before the last pass's status is newer", async () => {
    const clock = new FakeClock();
    const cache = new PodCache(clock);
    const syncer = new GatedSyncer();
    const pool = newPool(syncer, { podCache: cache, clock });
    cache.updateTime(cache.now());
    pool.updatePod({ pod: pod('a'), op: 'create' });
    await syncer.releaseAll();
    let killed = false;
    void pool.killPodNow(pod('a'), 1, false).then(() => {
      killed = true;
    });
    cache.updateTime(cache.now());
    await syncer.releaseAll();
    expect(syncer.log.at(-1)).toBe('kill a grace=1');
    expect(killed).toBe(true);
    // A kill asked for now, before the last pass ran, returns at once and kills nothing more.
    await pool.killPodNow(pod('a'), 0, false);
    cache.updateTime(cache.now());
    await pool.settle();
    expect(syncer.log.filter((l) => l.startsWith('kill'))).toEqual(['kill a grace=1']);
    expect(syncer.log.at(-1)).toBe('terminated a');
  });

  it('retries a failed last pass alone: the pod is not killed again', async () => {
    const clock = new FakeClock();
    const syncer = new GatedSyncer();
    let fail = true;
    const terminated = syncer.syncTerminatedPod.bind(syncer);
    syncer.syncTerminatedPod = async (p, st) => {
      await terminated(p, st);
      if (fail) {
        fail = false;
        throw new Error('status write failed');
      }
    };
    const pool = newPool(syncer, { clock, retryMs: 1_000 });
    pool.updatePod({ pod: pod('a'), op: 'kill', gracePeriodSeconds: 2 });
    await syncer.releaseAll();
    await pool.settle();
    expect(syncer.log).toEqual(['kill a grace=2', 'terminated a']);
    expect(pool.syncKnownPods([])).toEqual([]); // not finished: kept
    await clock.advance(1_000);
    await pool.settle();
    expect(syncer.log).toEqual(['kill a grace=2', 'terminated a', 'terminated a']);
    // Finished: housekeeping forgets it, and the same UID sent again gets a new lane.
    pool.syncKnownPods([]);
    pool.updatePod({ pod: pod('a', '2'), op: 'create' });
    await syncer.releaseAll();
    await pool.settle();
    expect(syncer.log.at(-1)).toBe('sync a@2');
  });

  it('fails the pass when the PLEG could not read the pod, and retries it', async () => {
    const clock = new FakeClock();
    const cache = new PodCache(clock);
    const syncer = new GatedSyncer();
    const pool = newPool(syncer, { podCache: cache, clock, retryMs: 10_000 });
    cache.setError('a', new Error('ListContainers: deadline exceeded'), cache.now());
    cache.updateTime(cache.now());
    pool.updatePod({ pod: pod('a'), op: 'create' });
    await pool.settle();
    expect(syncer.log).toEqual([]);
    const read = status('a', 'read');
    cache.set(read, cache.now()); // the next relist read it
    await clock.advance(10_000);
    expect(syncer.log).toEqual(['sync a@1']);
    expect(syncer.statuses).toEqual([read]);
    await syncer.releaseAll();
  });
});
