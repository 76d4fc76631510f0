import { UnavailableError } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import type { PodLifecycleEvent, PodStatus } from '../../src/container/runtime.js';
import { EventedPLEG } from '../../src/pleg/evented.js';
import { GenericPLEG, type RelistTiming } from '../../src/pleg/generic.js';
import { ctr, type Harness, harnessPerTest, makePod } from './harness.js';

let h: Harness;
harnessPerTest((started) => {
  h = started;
});

const kinds = (events: PodLifecycleEvent[]) => events.map((e) => e.type);

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('generic (relisting) PLEG', () => {
  it('emits ContainerStarted, ContainerDied and ContainerRemoved between relists and caches pod status', async () => {
    const pleg = new GenericPLEG(h.manager, { clock: h.clock });
    const events: PodLifecycleEvent[] = [];
    pleg.watch((e) => events.push(e));
    await pleg.relist();
    expect(events).toEqual([]);

    const pod = makePod('pl', [ctr('app')]);
    await h.sync(pod);
    await pleg.relist();
    expect(kinds(events).sort()).toEqual(['ContainerStarted', 'ContainerStarted']); // sandbox + app
    expect(pleg.cache.get(pod.metadata!.uid!).containerStatuses[0]?.state).toBe('running');

    const app = (await h.status(pod)).containerStatuses[0]!;
    events.length = 0;
    h.fake.exitContainer(app.id.id, 137);
    await pleg.relist();
    expect(events).toEqual([{ podUid: pod.metadata!.uid, type: 'ContainerDied', data: app.id.id }]);
    expect(pleg.cache.get(pod.metadata!.uid!).containerStatuses[0]).toMatchObject({
      state: 'exited',
      exitCode: 137,
    });

    events.length = 0;
    await h.manager.context.cri.removeContainer({ containerId: app.id.id });
    await pleg.relist();
    expect(kinds(events)).toEqual(['ContainerRemoved']);

    // Gone from the runtime altogether: gone from the cache, which then reads it as empty.
    const sandbox = (await h.status(pod)).sandboxStatuses[0]!;
    await h.manager.context.cri.stopPodSandbox({ podSandboxId: sandbox.id });
    await h.manager.context.cri.removePodSandbox({ podSandboxId: sandbox.id });
    await pleg.relist();
    expect(pleg.cache.get(pod.metadata!.uid!)).toMatchObject({ sandboxStatuses: [], containerStatuses: [] });
  });

  it('reports a container that vanished while running as died and removed', async () => {
    const pleg = new GenericPLEG(h.manager, { clock: h.clock });
    const pod = makePod('vanish', [ctr('app')]);
    await h.sync(pod);
    await pleg.relist();
    const events: PodLifecycleEvent[] = [];
    pleg.watch((e) => events.push(e));
    const app = (await h.status(pod)).containerStatuses[0]!;
    await h.manager.context.cri.removeContainer({ containerId: app.id.id });
    await pleg.relist();
    expect(kinds(events)).toEqual(['ContainerDied', 'ContainerRemoved']);
  });

  it('is unhealthy until the first relist and when no relist finished within 3 minutes', async () => {
    const pleg = new GenericPLEG(h.manager, { clock: h.clock });
    expect(pleg.healthy()).toEqual({ ok: false, message: 'pleg has yet to be successful' });
    await pleg.relist();
    h.advance(180_000);
    expect(pleg.healthy().ok).toBe(true);
    h.advance(1);
    expect(pleg.healthy()).toMatchObject({ ok: false });
    expect(pleg.healthy().message).toMatch(/^pleg was last seen active 3m0s ago; threshold is 3m0s/);
    h.fake.failNext('ListPodSandbox', new UnavailableError('runtime down'));
    await expect(pleg.relist()).rejects.toThrow(/runtime down/);
    expect(pleg.healthy().ok).toBe(false);
    await pleg.relist();
    expect(pleg.healthy().ok).toBe(true);
    expect(pleg.mode()).toBe('generic');
  });

  it('feeds the pod cache: a relist makes every pod as fresh as itself, changed or not', async () => {
    const pleg = new GenericPLEG(h.manager, { clock: h.clock });
    const { cache } = pleg;
    const pod = makePod('fresh', [ctr('app')]);
    const uid = pod.metadata!.uid!;
    // Before its first relist, the cache cannot say the pod has nothing.
    const seen: { status?: PodStatus } = {};
    const states = () => seen.status?.containerStatuses.map((c) => c.state);
    void cache.getNewerThan(uid, Number.NEGATIVE_INFINITY).then((s) => {
      seen.status = s;
    });
    await h.sync(pod);
    expect(states()).toBeUndefined();
    await pleg.relist();
    expect(states()).toEqual(['running']);

    // A worker's sync ended: it waits for a relist that started after, though the pod is unchanged.
    const syncEnded = cache.now();
    delete seen.status;
    const waiting = cache.getNewerThan(uid, syncEnded).then((s) => {
      seen.status = s;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(states()).toBeUndefined();
    const reads = h.fake.calls.length;
    await pleg.relist();
    await waiting;
    expect(states()).toEqual(['running']);
    // Unchanged: the relist listed the runtime and read no pod's status.
    expect(h.callsSince(reads).filter((m) => m.endsWith('Status'))).toEqual([]);
  });

  it("puts a failed status read into the cache, so no worker syncs on the pod's older status", async () => {
    const errors: Error[] = [];
    const pleg = new GenericPLEG(h.manager, { clock: h.clock, onError: (e) => errors.push(e) });
    const pod = makePod('flaky', [ctr('app')]);
    const uid = pod.metadata!.uid!;
    await h.sync(pod);
    h.fake.failNext('ContainerStatus', new UnavailableError('runtime busy'));
    await pleg.relist();
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/runtime busy/)]);
    await expect(pleg.cache.getNewerThan(uid, Number.NEGATIVE_INFINITY)).rejects.toThrow(/runtime busy/);
    // The pod's change is seen again on the next relist, and read.
    const events: PodLifecycleEvent[] = [];
    pleg.watch((e) => events.push(e));
    await pleg.relist();
    expect(kinds(events).sort()).toEqual(['ContainerStarted', 'ContainerStarted']);
    expect(pleg.cache.get(uid).containerStatuses.map((c) => c.state)).toEqual(['running']);
  });

  it("times each relist for the kubelet's metrics: its duration, the interval since the last one, when that one started", async () => {
    const timings: RelistTiming[] = [];
    const pleg = new GenericPLEG(h.manager, { clock: h.clock, onRelist: (t) => timings.push(t) });
    const first = h.clock.now();
    await pleg.relist();
    h.advance(1_500);
    await pleg.relist();
    expect(timings).toHaveLength(2);
    expect(timings[0]).toMatchObject({ intervalMs: undefined, lastSeenMs: first });
    expect(timings[1]).toMatchObject({ intervalMs: 1_500, lastSeenMs: first + 1_500 });
    expect(timings.every((t) => t.durationMs >= 0)).toBe(true);
  });

  it('relists on its own once started', async () => {
    const pleg = new GenericPLEG(h.manager, { clock: h.clock, relistPeriodMs: 10 });
    const events: PodLifecycleEvent[] = [];
    pleg.watch((e) => events.push(e));
    pleg.start();
    await h.sync(makePod('auto', [ctr('app')]));
    await until(() => events.length >= 2, 'relist events');
    await pleg.stop();
  });
});

describe('evented PLEG', () => {
  it('turns CRI container events into lifecycle events and cached statuses', async () => {
    const generic = new GenericPLEG(h.manager, { clock: h.clock });
    const pleg = new EventedPLEG(h.manager.context.cri, generic, {
      podStatusFromEvent: (ev) => h.manager.podStatusFromEvent(ev),
    });
    const events: PodLifecycleEvent[] = [];
    pleg.watch((e) => events.push(e));
    pleg.start();
    await until(() => h.fake.eventSubscribers > 0, 'event subscription');
    expect(pleg.mode()).toBe('evented');
    const pod = makePod('ev', [ctr('app')]);
    await h.sync(pod);
    await until(() => kinds(events).filter((k) => k === 'ContainerStarted').length === 2, 'started events');
    const app = (await h.status(pod)).containerStatuses[0]!;
    h.fake.exitContainer(app.id.id, 1);
    await until(() => events.some((e) => e.type === 'ContainerDied' && e.data === app.id.id), 'died event');
    await until(
      () => generic.cache.get(pod.metadata!.uid!).containerStatuses[0]?.state === 'exited',
      'cached exited status',
    );
    expect(pleg.healthy().ok).toBe(true);
    // Removing the pod's sandbox takes the pod out of the cache.
    const sandbox = (await h.status(pod)).sandboxStatuses[0]!;
    await h.manager.context.cri.stopPodSandbox({ podSandboxId: sandbox.id });
    await h.manager.context.cri.removePodSandbox({ podSandboxId: sandbox.id });
    await until(() => events.some((e) => e.type === 'ContainerRemoved' && e.data === sandbox.id), 'removed');
    expect(generic.cache.get(pod.metadata!.uid!).sandboxStatuses).toEqual([]);
    await pleg.stop();
  });

  it("moves the cache's global timestamp on by itself, so a worker waiting for a pod without events is not stuck", async () => {
    const generic = new GenericPLEG(h.manager, { clock: h.clock });
    const pleg = new EventedPLEG(h.manager.context.cri, generic, {
      podStatusFromEvent: (ev) => h.manager.podStatusFromEvent(ev),
      globalCacheUpdatePeriodMs: 10,
    });
    pleg.start();
    await until(() => h.fake.eventSubscribers > 0, 'event subscription');
    // The clock stands still; the cache's own times still move on.
    const quiet = await generic.cache.getNewerThan('no-events', generic.cache.now());
    expect(quiet).toMatchObject({ uid: 'no-events', containerStatuses: [] });
    await pleg.stop();
  });

  it('keeps relisting at its own slow pace while events are the source, as a safety net', async () => {
    const generic = new GenericPLEG(h.manager, { clock: h.clock, relistPeriodMs: 3_600_000 });
    const pleg = new EventedPLEG(h.manager.context.cri, generic, {
      podStatusFromEvent: (ev) => h.manager.podStatusFromEvent(ev),
      relistPeriodMs: 10,
    });
    const relists = () =>
      h.fake.callLog.filter(
        (c) => c.method === 'ListPodSandbox' && !(c.request as { filter?: unknown }).filter,
      ).length;
    const before = relists();
    pleg.start();
    await until(() => h.fake.eventSubscribers > 0, 'event subscription');
    await until(() => relists() - before >= 3, 'relists every 10 ms');
    expect(pleg.mode()).toBe('evented');
    expect(generic.relistPeriodMs).toBe(10);
    await pleg.stop();
    // Stopped, the relisting PLEG has its own period back, so a restart keeps it as the fallback's.
    expect(generic.relistPeriodMs).toBe(3_600_000);
  });

  it('falls back to relisting when the event stream keeps failing, and says so', async () => {
    h.fake.failNext('GetContainerEvents', new UnavailableError('events not supported'), 10);
    const generic = new GenericPLEG(h.manager, { clock: h.clock, relistPeriodMs: 10 });
    const pleg = new EventedPLEG(h.manager.context.cri, generic, {
      podStatusFromEvent: (ev) => h.manager.podStatusFromEvent(ev),
      maxStreamRetries: 2,
      retryDelayMs: 1,
    });
    const events: PodLifecycleEvent[] = [];
    pleg.watch((e) => events.push(e));
    pleg.start();
    await until(() => pleg.mode() === 'generic', 'fallback');
    expect(pleg.healthy().message).toMatch(/^evented pleg fell back to relisting \(.*events not supported\)/);
    await h.sync(makePod('after', [ctr('app')]));
    await until(() => events.filter((e) => e.type === 'ContainerStarted').length >= 2, 'relisted events');
    await pleg.stop();
  });
});
