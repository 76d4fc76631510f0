// The agent's informers, as client-go's reflector feeds one: list a collection, then watch it
// from the list's resourceVersion (with bookmarks), and list again once the watch ends, fails or
// reports an error (a 410 Gone among them). The store holds what the API last showed, keyed as
// MetaNamespaceKeyFunc keys it; readers take it from memory rather than asking the API.
import { sleep, type TimerClock } from '@kh/apimachinery';
import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1ListMeta,
  Watch,
} from '@kubernetes/client-node';
import { type Logger, silentLogger } from '../util/log.js';

/** Wait before listing again after a failed list or a watch that ended. */
export const RELIST_RETRY_MS = 1_000;

/** What a reflector lists and watches. */
export interface ListWatch<T> {
  list(core: CoreV1Api): Promise<{ items: T[]; metadata?: V1ListMeta }>;
  /** The collection's path, as the list reads it. */
  path: string;
  fieldSelector?: string;
  /** How a failed list is logged. */
  logFailure: { msg: string; fields?: Record<string, unknown> };
}

/** namespace/name, or name for a cluster-scoped object. */
export function objectKey(obj: KubernetesObject): string {
  const { namespace, name } = obj.metadata ?? {};
  return namespace ? `${namespace}/${name ?? ''}` : (name ?? '');
}

export class Reflector<T extends KubernetesObject> {
  private store = new Map<string, T>();
  private synced = false;

  constructor(
    private readonly opts: {
      kubeConfig: KubeConfig;
      listWatch: ListWatch<T>;
      clock: TimerClock;
      retryMs?: number;
      log?: Logger;
    },
  ) {}

  /** True once a list has filled the store (the informer's HasSynced). */
  hasSynced(): boolean {
    return this.synced;
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  async run(signal: AbortSignal): Promise<void> {
    const { kubeConfig, listWatch, clock } = this.opts;
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const watcher = new Watch(kubeConfig);
    while (!signal.aborted) {
      try {
        const list = await listWatch.list(core);
        this.store = new Map(list.items.map((o) => [objectKey(o), o]));
        this.synced = true;
        await this.watch(watcher, list.metadata?.resourceVersion, signal);
      } catch (err) {
        (this.opts.log ?? silentLogger).error(listWatch.logFailure.msg, {
          ...listWatch.logFailure.fields,
          err,
        });
      }
      await sleep(clock, this.opts.retryMs ?? RELIST_RETRY_MS, signal).catch(() => {});
    }
  }

  /** Applies the watch's events to the store until it ends, fails, reports an error or the signal aborts. */
  private watch(watcher: Watch, resourceVersion: string | undefined, signal: AbortSignal): Promise<void> {
    const { path, fieldSelector } = this.opts.listWatch;
    return new Promise<void>((resolve) => {
      let request: AbortController | undefined;
      let ended = false;
      const end = () => {
        ended = true;
        signal.removeEventListener('abort', end);
        request?.abort();
        resolve();
      };
      if (signal.aborted) return end();
      signal.addEventListener('abort', end, { once: true });
      const query = {
        ...(fieldSelector ? { fieldSelector } : {}),
        resourceVersion,
        allowWatchBookmarks: true,
      };
      watcher
        .watch(
          path,
          query,
          (type, obj: T) => {
            if (ended) return;
            if (type === 'ADDED' || type === 'MODIFIED') this.store.set(objectKey(obj), obj);
            else if (type === 'DELETED') this.store.delete(objectKey(obj));
            // An ERROR event (410 Gone: the resourceVersion is too old) ends this watch.
            else if (type === 'ERROR') end();
          },
          end,
        )
        .then((req) => {
          request = req;
          if (ended) req.abort();
        }, end);
    });
  }
}
