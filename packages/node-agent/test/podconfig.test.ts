import { FakeClock } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  ApiServerPodSource,
  type PodListWatch,
  ResourceExpiredError,
  type WatchEventType,
} from '../src/podconfig/apiserver_source.js';
import { PodSnapshotDiff, podsDifferSemantically } from '../src/podconfig/pod_config.js';
import type { PodUpdate } from '../src/types/pod_update.js';

function pod(
  name: string,
  over: Partial<V1Pod['metadata']> = {},
  image = 'busybox',
  phase = 'Pending',
): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, ...over },
    spec: { nodeName: 'node-a', containers: [{ name: 'c', image }] },
    status: { phase },
  };
}

const ops = (updates: PodUpdate[]) =>
  updates.map((u) => `${u.op} ${u.pods.map((p) => p.metadata?.name).join(',')}`);

describe('PodSnapshotDiff', () => {
  it('turns snapshots into ADD, UPDATE, DELETE, RECONCILE and REMOVE in the kubelet order', () => {
    const d = new PodSnapshotDiff('api');
    expect(ops(d.set([pod('a'), pod('b'), pod('c'), pod('d')]))).toEqual(['ADD a,b,c,d']);
    expect(d.set([pod('a'), pod('b'), pod('c'), pod('d')])).toEqual([]);
    const next = [
      pod('a', {}, 'busybox:2'), // spec change
      pod('b', { deletionTimestamp: new Date(1000), deletionGracePeriodSeconds: 30 }), // graceful deletion
      pod('c', {}, 'busybox', 'Running'), // status only
      pod('e'),
    ];
    expect(ops(d.set(next))).toEqual(['REMOVE d', 'ADD e', 'UPDATE a', 'DELETE b', 'RECONCILE c']);
    expect(d.set(next)).toEqual([]);
  });

  it('applies one changed pod with the same operations a full snapshot would give', () => {
    const d = new PodSnapshotDiff('api');
    d.set([pod('a'), pod('b'), pod('c')]);
    expect(ops(d.apply(pod('d')))).toEqual(['ADD d']);
    expect(ops(d.apply(pod('a', {}, 'busybox:2')))).toEqual(['UPDATE a']);
    expect(ops(d.apply(pod('b', { deletionTimestamp: new Date(1000) })))).toEqual(['DELETE b']);
    expect(ops(d.apply(pod('c', {}, 'busybox', 'Running')))).toEqual(['RECONCILE c']);
    expect(d.apply(pod('c', {}, 'busybox', 'Running'))).toEqual([]);
    expect(ops(d.apply(pod('d'), true))).toEqual(['REMOVE d']);
    expect(d.apply(pod('d'), true)).toEqual([]); // already gone
    expect(d.apply({ metadata: { name: 'no-uid' } })).toEqual([]);
    // The applied pods are the snapshot a later set() diffs against.
    expect(d.current().map((p) => p.metadata?.name)).toEqual(['a', 'b', 'c']);
    expect(
      d.set([pod('a', {}, 'busybox:2'), pod('b', { deletionTimestamp: new Date(1000) }), pod('c')]),
    ).toEqual([
      {
        op: 'RECONCILE',
        pods: [pod('c', { annotations: { 'kubernetes.io/config.source': 'api' } })],
        source: 'api',
      },
    ]);
  });

  it("marks every pod with the diff's source, over whatever source annotation it came with", () => {
    const diff = new PodSnapshotDiff('api');
    const [add] = diff.set([
      pod('a', { annotations: { 'kubernetes.io/config.source': 'file', keep: 'me' } }),
    ]);
    expect(add?.pods[0]?.metadata?.annotations).toEqual({ 'kubernetes.io/config.source': 'api', keep: 'me' });
    expect(diff.apply(pod('b'))[0]?.pods[0]?.metadata?.annotations).toEqual({
      'kubernetes.io/config.source': 'api',
    });
    // The source's own annotation is no change of the pod.
    expect(diff.set([pod('a', { annotations: { keep: 'me' } }), pod('b')])).toEqual([]);
  });

  it('compares what the kubelet acts on, not key order or status', () => {
    const a = pod('a', { labels: { x: '1', y: '2' } });
    const b = pod('a', { labels: { y: '2', x: '1' } }, 'busybox', 'Running');
    expect(podsDifferSemantically(a, b)).toBe(false);
    expect(podsDifferSemantically(a, pod('a', { annotations: { k: 'v' } }))).toBe(true);
    expect(
      podsDifferSemantically(
        pod('a', { deletionTimestamp: new Date(5) }),
        pod('a', { deletionTimestamp: new Date(5) }),
      ),
    ).toBe(false);
  });
});

/** A scripted list/watch: each watch() call takes the next script entry. */
class ScriptedListWatch implements PodListWatch {
  lists: { pods: V1Pod[]; resourceVersion: string }[] = [];
  watchedFrom: string[] = [];
  private active: { emit: (t: WatchEventType, p: V1Pod) => void; end: (err?: Error) => void } | undefined;

  async list() {
    const next = this.lists.shift();
    if (!next) throw new Error('list: connection refused');
    return next;
  }

  watch(resourceVersion: string, onEvent: (type: WatchEventType, pod: V1Pod) => void) {
    this.watchedFrom.push(resourceVersion);
    let end!: (err?: Error) => void;
    const done = new Promise<void>((resolve, reject) => {
      end = (err) => (err ? reject(err) : resolve());
    });
    this.active = { emit: onEvent, end };
    return { done, stop: () => end() };
  }

  emit(type: WatchEventType, p: V1Pod) {
    this.active?.emit(type, p);
  }

  end(err?: Error) {
    this.active?.end(err);
  }
}

const rv = (p: V1Pod, v: string): V1Pod => ({ ...p, metadata: { ...p.metadata, resourceVersion: v } });

describe('ApiServerPodSource', () => {
  it('lists, watches, resumes after a disconnect and relists after 410 Gone', async () => {
    const lw = new ScriptedListWatch();
    const clock = new FakeClock();
    lw.lists.push({ pods: [pod('a'), pod('b')], resourceVersion: '10' });
    const source = new ApiServerPodSource({ lw, clock });
    const got: string[] = [];
    const abort = new AbortController();
    const running = source.run(abort.signal, (u) => got.push(...ops([u])));
    await clock.advance(0);
    expect(source.ready()).toBe(true);
    expect(got).toEqual(['ADD a,b']);
    expect(lw.watchedFrom).toEqual(['10']);

    lw.emit('MODIFIED', rv(pod('a', { labels: { v: '2' } }), '11'));
    lw.emit('ADDED', rv(pod('c'), '12'));
    lw.emit('BOOKMARK', { metadata: { resourceVersion: '15' } });
    lw.emit('DELETED', rv(pod('b'), '16'));
    expect(got).toEqual(['ADD a,b', 'UPDATE a', 'ADD c', 'REMOVE b']);

    // A dropped connection resumes from the last version seen, with no relist.
    lw.end();
    await clock.advance(0);
    expect(lw.watchedFrom).toEqual(['10', '16']);

    // 410: list again; what changed meanwhile comes out of the diff.
    lw.lists.push({ pods: [rv(pod('a', { labels: { v: '2' } }), '30'), pod('d')], resourceVersion: '31' });
    lw.end(new ResourceExpiredError('too old resource version: 16 (25)'));
    await clock.advance(0);
    expect(got.slice(4)).toEqual(['REMOVE c', 'ADD d']);
    expect(lw.watchedFrom).toEqual(['10', '16', '31']);

    abort.abort();
    await running;
  });

  it('retries a failing list with backoff and is not ready until it succeeds', async () => {
    const lw = new ScriptedListWatch();
    const clock = new FakeClock();
    const source = new ApiServerPodSource({ lw, clock });
    const got: string[] = [];
    const abort = new AbortController();
    const running = source.run(abort.signal, (u) => got.push(...ops([u])));
    await clock.advance(0);
    expect(source.ready()).toBe(false);
    lw.lists.push({ pods: [pod('a')], resourceVersion: '5' });
    await clock.advance(999);
    expect(got).toEqual([]);
    await clock.advance(1);
    expect(got).toEqual(['ADD a']);
    expect(source.ready()).toBe(true);
    abort.abort();
    await running;
  });
});
