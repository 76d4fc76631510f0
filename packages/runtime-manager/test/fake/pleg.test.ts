import { UnavailableError } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import type { PodLifecycleEvent } from '../../src/container/runtime.js';
import { EventedPLEG } from '../../src/pleg/evented.js';
import { GenericPLEG } from '../../src/pleg/generic.js';
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
    expect(pleg.getCachedStatus(pod.metadata!.uid!)?.containerStatuses[0]?.state).toBe('running');

    const app = (await h.status(pod)).containerStatuses[0]!;
    events.length = 0;
    h.fake.exitContainer(app.id.id, 137);
    await pleg.relist();
    expect(events).toEqual([{ podUid: pod.metadata!.uid, type: 'ContainerDied', data: app.id.id }]);
    expect(pleg.getCachedStatus(pod.metadata!.uid!)?.containerStatuses[0]).toMatchObject({
      state: 'exited',
      exitCode: 137,
    });

    events.length = 0;
    await h.manager.context.cri.removeContainer({ containerId: app.id.id });
    await pleg.relist();
    expect(kinds(events)).toEqual(['ContainerRemoved']);
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
      () => pleg.getCachedStatus(pod.metadata!.uid!)?.containerStatuses[0]?.state === 'exited',
      'cached exited status',
    );
    expect(pleg.healthy().ok).toBe(true);
    await pleg.stop();
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
