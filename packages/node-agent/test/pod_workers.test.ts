import { FakeClock, flushMicrotasks } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PodManager } from '../src/pods/pod_manager.js';
import { BACKOFF_EXPIRY_SLACK_MS, PodWorkerPool } from '../src/pods/pod_workers.js';
import { CrashLoopBackOffError, type PodSyncer } from '../src/pods/types.js';

const pod = (name: string, version = '1', over: Partial<V1Pod['metadata']> = {}): V1Pod => ({
  metadata: { name, uid: name, resourceVersion: version, ...over },
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

  async syncPod(p: V1Pod, signal?: AbortSignal) {
    this.signals.push(signal);
    await this.gate(`sync ${p.metadata?.name}@${p.metadata?.resourceVersion}`);
    return false;
  }

  syncTerminatingPod(p: V1Pod, grace?: number) {
    return this.gate(`kill ${p.metadata?.name} grace=${grace}`);
  }

  async releaseAll() {
    while (this.gates.length > 0) {
      for (const g of this.gates.splice(0)) g();
      await flushMicrotasks();
    }
  }
}

describe('PodWorkerPool', () => {
  it('serialises work per pod, runs pods in parallel, and coalesces updates', async () => {
    const syncer = new GatedSyncer();
    const pool = new PodWorkerPool({ syncer, terminated: new PodManager(), clock: new FakeClock() });
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
    const pool = new PodWorkerPool({ syncer, terminated: new PodManager(), clock: new FakeClock() });
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
    expect(syncer.log).toEqual(['sync a@1', 'kill a grace=5']);
    expect(pool.isPodTerminated('a')).toBe(true);
    pool.syncKnownPods([]);
    expect(pool.isPodTerminationRequested('a')).toBe(false); // forgotten
  });

  it('aborts the normal pass in flight when termination is requested, then only terminates', async () => {
    for (const terminate of [
      (p: PodWorkerPool) =>
        p.updatePod({ pod: pod('a', '2', { deletionTimestamp: new Date(1) }), op: 'update' }),
      (p: PodWorkerPool) => p.updatePod({ pod: pod('a', '2'), op: 'kill', gracePeriodSeconds: 1 }),
    ]) {
      const syncer = new GatedSyncer();
      const pool = new PodWorkerPool({ syncer, terminated: new PodManager(), clock: new FakeClock() });
      pool.updatePod({ pod: pod('a'), op: 'create' });
      await flushMicrotasks();
      expect(syncer.signals[0]?.aborted).toBe(false);
      // A liveness failure's sync, then the deletion, while the first pass still runs.
      pool.updatePod({ pod: pod('a'), op: 'sync' });
      terminate(pool);
      expect(syncer.signals[0]?.aborted).toBe(true);
      await syncer.releaseAll();
      await pool.settle();
      expect(syncer.log).toEqual(['sync a@1', expect.stringMatching(/^kill a grace=/)]);
    }
  });

  it('retries a failed sync after the backoff', async () => {
    const syncer = new GatedSyncer();
    const clock = new FakeClock();
    const pool = new PodWorkerPool({ syncer, terminated: new PodManager(), clock, retryMs: 10_000 });
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
    const pool = new PodWorkerPool({ syncer, terminated: new PodManager(), clock, retryMs: 10_000 });
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
