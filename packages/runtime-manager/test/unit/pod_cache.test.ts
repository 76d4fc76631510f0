// The pod cache (container/cache.ts): what getNewerThan waits for and what it answers with.
import { FakeClock, flushMicrotasks } from '@kh/apimachinery';
import { describe, expect, it } from 'vitest';
import { PodCache } from '../../src/container/cache.js';
import type { PodStatus } from '../../src/container/runtime.js';

const status = (uid: string, name = 'web'): PodStatus => ({
  uid,
  name,
  namespace: 'default',
  ips: ['10.88.0.2'],
  sandboxStatuses: [],
  containerStatuses: [],
  timestamp: new Date(0),
});

/** Settles after the pending promise callbacks ran: 'pending' when `p` has not settled. */
async function state<T>(p: Promise<T>): Promise<T | 'pending' | Error> {
  let out: T | 'pending' | Error = 'pending';
  p.then(
    (v) => {
      out = v;
    },
    (e: Error) => {
      out = e;
    },
  );
  await flushMicrotasks(2);
  return out;
}

describe('PodCache', () => {
  it('answers nothing before its first refresh, then an empty status for a pod it does not hold', async () => {
    const cache = new PodCache(new FakeClock());
    const first = cache.getNewerThan('new', Number.NEGATIVE_INFINITY);
    expect(await state(first)).toBe('pending');
    cache.updateTime(cache.now());
    expect(await state(first)).toMatchObject({ uid: 'new', sandboxStatuses: [], containerStatuses: [] });
    expect(cache.get('new').containerStatuses).toEqual([]);
  });

  it("serves a pod's entry written after minTime at once, an older one only once the whole cache is newer", async () => {
    const cache = new PodCache(new FakeClock());
    const written = cache.now();
    const web = status('web');
    cache.set(web, written);
    cache.updateTime(written);
    expect(await state(cache.getNewerThan('web', written - 1))).toBe(web);

    // A sync that ended after the entry was read must not get it back.
    const syncEnded = cache.now();
    const waiting = cache.getNewerThan('web', syncEnded);
    expect(await state(waiting)).toBe('pending');
    // Neither a refresh that started before the sync ended nor one at the same time counts.
    cache.updateTime(syncEnded);
    expect(await state(waiting)).toBe('pending');
    const relisted = cache.now();
    cache.updateTime(relisted); // a relist that started after it, and saw no change to the pod
    expect(await state(waiting)).toBe(web);
  });

  it("wakes a waiter as soon as its pod's entry is written after minTime", async () => {
    const cache = new PodCache(new FakeClock());
    const syncEnded = cache.now();
    const waiting = cache.getNewerThan('web', syncEnded);
    const other = cache.getNewerThan('db', syncEnded);
    const fresh = status('web', 'fresh');
    cache.set(fresh, cache.now());
    expect(await state(waiting)).toBe(fresh);
    expect(await state(other)).toBe('pending');
  });

  it('hands out strictly later times within one millisecond of its clock', () => {
    const clock = new FakeClock(1_000);
    const cache = new PodCache(clock);
    const a = cache.now();
    const b = cache.now();
    expect(a).toBe(1_000);
    expect(b).toBeGreaterThan(a);
    expect(b).toBeLessThan(1_001);
    clock.step(5);
    expect(cache.now()).toBe(1_005);
  });

  it('keeps a newer entry when an older write arrives, and its timestamp never moves back', async () => {
    const cache = new PodCache(new FakeClock());
    const older = cache.now();
    const newer = cache.now();
    const current = status('web', 'current');
    expect(cache.set(current, newer)).toBe(true);
    expect(cache.set(status('web', 'stale'), older)).toBe(false);
    expect(cache.get('web')).toBe(current);
    const later = cache.now();
    cache.updateTime(later);
    cache.updateTime(older);
    expect(await state(cache.getNewerThan('db', newer))).toMatchObject({ uid: 'db' });
  });

  it("gives a failed read's error to the pod's waiters and readers, until a good read replaces it", async () => {
    const cache = new PodCache(new FakeClock());
    const syncEnded = cache.now();
    const waiting = cache.getNewerThan('web', syncEnded);
    cache.setError('web', new Error('ContainerStatus: deadline exceeded'), cache.now());
    expect(await state(waiting)).toEqual(new Error('ContainerStatus: deadline exceeded'));
    expect(() => cache.get('web')).toThrow(/deadline exceeded/);
    const web = status('web');
    cache.set(web, cache.now());
    expect(cache.get('web')).toBe(web);
  });

  it('forgets a deleted pod: it reads as empty', () => {
    const cache = new PodCache(new FakeClock());
    cache.set(status('web'), cache.now());
    cache.delete('web');
    expect(cache.get('web')).toMatchObject({ uid: 'web', ips: [], containerStatuses: [] });
  });
});
