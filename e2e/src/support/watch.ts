// A watch of the cell's namespace's pods, as upstream's informer-backed watchers
// (watchtools.NewIndexerInformerWatcher, watchtools.Until) use one: started from a list's
// resourceVersion, it sees a state the pod holds only for milliseconds (Succeeded, then deleted),
// which no poll would. Like the informer's reflector it outlives any one watch request: client-node
// ends a watch that has been silent for 30 s (a pod's grace period alone can be that long, and an
// API server sends bookmarks about once a minute), so the watch is opened again from the last
// resourceVersion seen; when the server no longer has that version (410), a list turns what
// changed meanwhile into events, as the informer's relist does.
import { setTimeout as sleep } from 'node:timers/promises';
import type { ScenarioContext } from '@kh/harness';
import { type CoreV1Api, type KubeConfig, type V1Pod, Watch } from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';

export interface PodEvent {
  type: string;
  pod: V1Pod;
  /** When it arrived, in ms since the watch began (a failure's description shows the gaps). */
  atMs: number;
}

export interface PodWatchOptions {
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string | undefined;
}

/** Where a PodWatch looks; the two timings are for tests. */
export interface PodWatchTarget {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  namespace: string;
  /** client-node's idle timeout of one watch request (30 s); tests shorten it. */
  idleTimeoutMs?: number;
  /** The pause before a watch that ended cleanly is opened again (none); tests lengthen it. */
  reopenDelayMs?: number;
}

/** The pause before opening again a watch the server refused or that failed before it answered. */
const RETRY_DELAY_MS = 1_000;

/** The namespace's pods that the options select, watched until stop(); its events as they come. */
export class PodWatch {
  readonly events: PodEvent[] = [];
  /** How many watch requests have ended (each one was opened again, unless stopped). */
  ends = 0;
  /** Why the last watch request ended, or the last list failed. */
  lastEnd: string | undefined;
  private readonly watcher: Watch;
  private readonly path: string;
  private readonly selectors: { labelSelector?: string; fieldSelector?: string };
  /** The last version of each pod seen, by name: what a relist is compared with. */
  private readonly known = new Map<string, V1Pod>();
  private resourceVersion: string | undefined;
  private request: AbortController | undefined;
  private stopped = false;
  private readonly began = Date.now();

  constructor(
    private readonly target: PodWatchTarget,
    opts: PodWatchOptions,
  ) {
    this.watcher = new Watch(target.kubeConfig);
    // client-node keeps the timeout private.
    if (target.idleTimeoutMs !== undefined)
      Reflect.set(this.watcher, 'requestTimeoutMs', target.idleTimeoutMs);
    this.path = `/api/v1/namespaces/${target.namespace}/pods`;
    this.selectors = Object.fromEntries(
      Object.entries({ labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector }).filter(
        ([, v]) => v,
      ),
    );
    this.resourceVersion = opts.resourceVersion || undefined;
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.request?.abort();
  }

  /** What it has seen, for a failure's description. */
  describe(): string[] {
    const seen = this.events.map((e) => `+${e.atMs}ms ${e.type} ${e.pod.status?.phase ?? ''}`);
    return this.ends > 0 ? [...seen, `(${this.ends} watch requests ended; the last: ${this.lastEnd})`] : seen;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const { answered, expired } = await this.watchOnce();
      if (this.stopped) return;
      this.ends++;
      if (!answered) await sleep(RETRY_DELAY_MS);
      else if (this.target.reopenDelayMs) await sleep(this.target.reopenDelayMs);
      if (this.stopped) return;
      // A first watch without a version replays the pods as ADDED; opened again, it would
      // replay them twice, so then (as after a 410) a list says what changed.
      if (expired || this.resourceVersion === undefined) {
        try {
          await this.relist();
        } catch (err) {
          this.lastEnd = `the list failed: ${String(err)}`;
          await sleep(RETRY_DELAY_MS);
        }
      }
    }
  }

  /** One watch request, until it ends; `expired`: the server no longer has our version (410). */
  private watchOnce(): Promise<{ answered: boolean; expired: boolean }> {
    return new Promise((resolve) => {
      let answered = false;
      let expired = false;
      let error: string | undefined;
      const query = { ...this.selectors, resourceVersion: this.resourceVersion, allowWatchBookmarks: true };
      this.watcher
        .watch(
          this.path,
          query,
          (type, obj: V1Pod & { code?: number; message?: string }) => {
            if (type === 'ERROR') {
              expired ||= obj.code === 410;
              error = `ERROR ${obj.code}: ${obj.message}`;
            } else if (type === 'BOOKMARK') {
              this.resourceVersion = obj.metadata?.resourceVersion ?? this.resourceVersion;
            } else {
              this.record(type, obj);
            }
          },
          (err: (Error & { statusCode?: number }) | null) => {
            expired ||= err?.statusCode === 410;
            this.lastEnd = err ? String(err) : (error ?? 'closed by the server');
            resolve({ answered, expired });
          },
        )
        .then(
          (request) => {
            answered = true;
            this.request = request;
            if (this.stopped) request.abort();
          },
          // Before any request (the kubeconfig's credentials): opened again after a pause.
          (err: unknown) => {
            this.lastEnd = String(err);
            resolve({ answered: false, expired: false });
          },
        );
    });
  }

  /** The informer's relist: the difference from what was seen, as events. */
  private async relist(): Promise<void> {
    const list = await this.target.core.listNamespacedPod({
      namespace: this.target.namespace,
      ...this.selectors,
    });
    const listed = new Set<string>();
    for (const item of list.items) {
      // Listed pods are deserialised; watched ones are plain JSON: events keep one shape.
      const pod = ObjectSerializer.serialize(item, 'V1Pod', '') as V1Pod;
      const name = pod.metadata?.name ?? '';
      listed.add(name);
      const before = this.known.get(name);
      if (!before) this.record('ADDED', pod);
      else if (before.metadata?.resourceVersion !== pod.metadata?.resourceVersion)
        this.record('MODIFIED', pod);
    }
    // Gone while no watch was open: deleted in its last known state (DeletedFinalStateUnknown).
    for (const [name, pod] of this.known) if (!listed.has(name)) this.record('DELETED', pod);
    this.resourceVersion = list.metadata?.resourceVersion ?? this.resourceVersion;
  }

  private record(type: string, pod: V1Pod): void {
    const name = pod.metadata?.name ?? '';
    if (type === 'DELETED') this.known.delete(name);
    else this.known.set(name, pod);
    this.resourceVersion = pod.metadata?.resourceVersion ?? this.resourceVersion;
    this.events.push({ type, pod, atMs: Date.now() - this.began });
  }
}

/** Watches the namespace's pods that `opts` select; `next` asserts on the events as they come. */
export function watchPods(ctx: ScenarioContext, opts: PodWatchOptions) {
  const w = new PodWatch(ctx, opts);
  return {
    events: w.events,
    /** The first event from index `from` on that `accept` takes, within `timeoutMs` (an assertion). */
    next: async (name: string, accept: (e: PodEvent) => boolean, timeoutMs: number, from = 0) => {
      const seen = await ctx.check.eventually(
        name,
        async () => w.events.slice(from),
        (events) => events.some(accept),
        { timeoutMs, intervalMs: 200, describe: () => w.describe() },
      );
      return seen.find(accept) as PodEvent;
    },
    stop: () => w.stop(),
  };
}
