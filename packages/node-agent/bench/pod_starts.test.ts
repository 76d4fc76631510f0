// The benchmark's observer must survive what ended the 110-pod step: a watch that closes (as
// client-node's does after 30 s of silence), one that fails, and 410 Gone.
import { FakeClock } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  type PodListWatch,
  ResourceExpiredError,
  type WatchEventType,
} from '../src/podconfig/apiserver_source.js';
import { PodStarts } from './pod_starts.js';

function pod(name: string, rv: string, started: boolean): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: rv },
    spec: { nodeName: 'bench-node', containers: [{ name: 'main', image: 'busybox' }] },
    status: {
      containerStatuses: [
        {
          name: 'main',
          image: 'busybox',
          imageID: '',
          ready: started,
          restartCount: 0,
          started,
          state: started
            ? { running: { startedAt: new Date(0) } }
            : { waiting: { reason: 'ContainerCreating' } },
        },
      ],
    },
  };
}

/** Lists and watches that the test scripts; `end(err?)` ends the current watch. */
class ScriptedListWatch implements PodListWatch {
  readonly lists: { pods: V1Pod[]; resourceVersion: string }[] = [];
  readonly watchedFrom: string[] = [];
  private active?: { emit: (t: WatchEventType, p: V1Pod) => void; end: (err?: Error) => void };

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

describe('PodStarts', () => {
  it('sees every start through a closed watch, a failed one and 410 Gone', async () => {
    const lw = new ScriptedListWatch();
    const clock = new FakeClock();
    let now = 0;
    lw.lists.push({ pods: [pod('p-0', '10', false)], resourceVersion: '10' });
    const starts = new PodStarts(lw, clock, () => now);
    await clock.advance(0);
    expect(starts.ready()).toBe(true);
    const names = ['p-0', 'p-1', 'p-2', 'p-3'];
    let all: Map<string, number> | undefined;
    void starts.started(names).then((m) => {
      all = m;
    });

    now = 100;
    lw.emit('MODIFIED', pod('p-0', '11', true));
    lw.emit('ADDED', pod('p-1', '12', false));
    expect(starts.count(names)).toBe(1);

    // Closed from the server's side (or client-node's idle timeout): resume where it left off.
    lw.end();
    await clock.advance(0);
    expect(lw.watchedFrom).toEqual(['10', '12']);
    now = 200;
    lw.emit('MODIFIED', pod('p-1', '13', true));

    // A failed watch backs off, then resumes.
    lw.end(new Error('socket hang up'));
    await clock.advance(1_000);
    expect(lw.watchedFrom).toEqual(['10', '12', '13']);
    now = 300;
    lw.emit('ADDED', pod('p-2', '14', true));

    // 410 Gone: list again; a pod that started meanwhile is seen in the list.
    lw.lists.push({
      pods: ['p-0', 'p-1', 'p-2'].map((n) => pod(n, '20', true)).concat(pod('p-3', '21', true)),
      resourceVersion: '21',
    });
    now = 400;
    lw.end(new ResourceExpiredError('too old resource version: 14 (18)'));
    await clock.advance(0);
    expect(lw.watchedFrom).toEqual(['10', '12', '13', '21']);
    expect(starts.requests).toEqual({ lists: 2, watches: 4 });
    expect(all && Object.fromEntries(all)).toEqual({ 'p-0': 100, 'p-1': 200, 'p-2': 300, 'p-3': 400 });
    await starts.stop();
  });

  it('gives up waiting when its signal aborts', async () => {
    const lw = new ScriptedListWatch();
    const clock = new FakeClock();
    lw.lists.push({ pods: [], resourceVersion: '1' });
    const starts = new PodStarts(lw, clock);
    await clock.advance(0);
    const abort = new AbortController();
    const waiting = starts.started(['never'], abort.signal);
    abort.abort(new Error('only 0/1 pods started'));
    await expect(waiting).rejects.toThrow('only 0/1 pods started');
    await starts.stop();
  });
});
