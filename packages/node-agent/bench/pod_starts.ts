// When each pod of the benchmark was first seen with all its containers started, observed as an
// informer observes: the agent's own API pod source (list, then watch; a dropped or silent watch
// resumes from the last resourceVersion, 410 Gone lists again, failures back off). A plain
// client-node Watch ends after 30 s without an event (TimeoutError), which failed the 110-pod step
// on a loaded machine. A pod that started while the watch was down is seen when it resumes or
// relists, so its time is then an upper bound; `lists` and `watches` say whether that happened.
import type { TimerClock } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import { ApiServerPodSource, type PodListWatch } from '../src/podconfig/apiserver_source.js';

export function podStarted(p: V1Pod): boolean {
  const cs = p.status?.containerStatuses ?? [];
  return cs.length > 0 && cs.every((c) => c.started === true && c.state?.running !== undefined);
}

export class PodStarts {
  /** List and watch requests made: more than one list means a relist, more watches a resume. */
  readonly requests = { lists: 0, watches: 0 };
  private readonly startedAt = new Map<string, number>();
  private readonly waiters = new Set<() => void>();
  private readonly abort = new AbortController();
  private readonly source: ApiServerPodSource;
  private readonly running: Promise<void>;

  constructor(lw: PodListWatch, clock: TimerClock, now: () => number = () => performance.now()) {
    const counted: PodListWatch = {
      list: () => {
        this.requests.lists++;
        return lw.list();
      },
      watch: (rv, onEvent) => {
        this.requests.watches++;
        return lw.watch(rv, onEvent);
      },
    };
    this.source = new ApiServerPodSource({ lw: counted, clock });
    this.running = this.source.run(this.abort.signal, (update) => {
      for (const pod of update.pods) {
        const name = pod.metadata?.name;
        if (!name || this.startedAt.has(name) || !podStarted(pod)) continue;
        this.startedAt.set(name, now());
        for (const wake of this.waiters) wake();
      }
    });
  }

  ready(): boolean {
    return this.source.ready();
  }

  /** How many of `names` have started. */
  count(names: readonly string[]): number {
    return names.filter((n) => this.startedAt.has(n)).length;
  }

  /** Resolves with each name's start time once all of `names` have started. */
  async started(names: readonly string[], signal?: AbortSignal): Promise<Map<string, number>> {
    while (this.count(names) < names.length) {
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const done = () => {
          this.waiters.delete(done);
          signal?.removeEventListener('abort', done);
          if (signal?.aborted) reject(signal.reason);
          else resolve();
        };
        this.waiters.add(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    }
    return new Map(names.map((n) => [n, this.startedAt.get(n) as number]));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }
}
