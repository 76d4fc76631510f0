import { describe, expect, it } from 'vitest';
import type { PodStatus, RunningPod } from '../../src/container/runtime.js';
import { PodStatusCache } from '../../src/kuberuntime/pod_status_cache.js';

const status = (uid: string, state: 'running' | 'exited' = 'running'): PodStatus => ({
  uid,
  name: uid,
  namespace: 'default',
  ips: [],
  sandboxStatuses: [
    {
      id: `sb-${uid}`,
      state: 'ready',
      attempt: 0,
      createdAt: new Date(0),
      additionalIps: [],
      hostNetwork: false,
    } as PodStatus['sandboxStatuses'][number],
  ],
  containerStatuses: [{ id: { type: 't', id: `c-${uid}` }, state } as PodStatus['containerStatuses'][number]],
  timestamp: new Date(0),
});

const listed = (uid: string, state: 'running' | 'exited' = 'running'): RunningPod =>
  ({
    uid,
    name: uid,
    namespace: 'default',
    sandboxes: [{ id: `sb-${uid}`, state: 'ready' }],
    containers: [{ id: { type: 't', id: `c-${uid}` }, state }],
  }) as RunningPod;

describe('PodStatusCache', () => {
  it('does not keep a read that overlapped an invalidation, even if the pod was forgotten meanwhile', async () => {
    const cache = new PodStatusCache(10_000, () => 0);
    let finish: (s: PodStatus) => void = () => {};
    const reading = cache.getOrRead(
      'a',
      () =>
        new Promise<PodStatus>((resolve) => {
          finish = resolve;
        }),
    );
    cache.reconcile([]); // 'a' not listed: forgotten
    cache.invalidate('a');
    finish(status('a'));
    await reading;
    expect(cache.get('a')).toBeUndefined();
  });

  it('keeps what a listing agrees with, drops what it contradicts or no longer lists', async () => {
    const cache = new PodStatusCache(10_000, () => 0);
    for (const uid of ['a', 'b', 'c']) await cache.getOrRead(uid, async () => status(uid));
    cache.reconcile([listed('a'), listed('b', 'exited')]);
    expect(cache.get('a')?.uid).toBe('a');
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('c')).toBeUndefined();
    // A container the status does not know of contradicts it too.
    const extra = listed('a');
    extra.containers.push({ ...extra.containers[0]!, id: { type: 't', id: 'new' } });
    cache.reconcile([extra]);
    expect(cache.get('a')).toBeUndefined();
  });
});
