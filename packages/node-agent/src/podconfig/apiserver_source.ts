// The API server pod source: pods bound to this node (fieldSelector spec.nodeName=<node>),
// listed once and then watched. A dropped watch resumes from the last resourceVersion seen
// (bookmarks included); 410 Gone means that version is too old, so the source lists again and
// the snapshot diff turns whatever changed meanwhile into REMOVE/ADD/UPDATE.

import { sleep, type TimerClock } from '@kh/apimachinery';
import { CoreV1Api, type KubeConfig, type V1Pod, Watch } from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { toApiError } from '../api/node_api.js';
import type { PodSource, PodUpdate } from '../types/pod_update.js';
import { type Logger, silentLogger } from '../util/log.js';
import { PodSnapshotDiff } from './pod_config.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** Raised by a watch when the server answers 410 Gone (the resourceVersion was compacted). */
export class ResourceExpiredError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResourceExpiredError';
  }
}

export interface PodListWatch {
  list(): Promise<{ pods: V1Pod[]; resourceVersion: string }>;
  /**
   * Streams events after `resourceVersion` until the stream ends (resolves) or fails (rejects;
   * ResourceExpiredError for 410). `stop()` ends it from this side.
   */
  watch(
    resourceVersion: string,
    onEvent: (type: WatchEventType, pod: V1Pod) => void,
  ): { done: Promise<void>; stop(): void };
}

const isTimeout = (e: unknown) => e instanceof Error && e.name === 'TimeoutError';

/**
 * list/watch of one node's pods over client-node. client-node ends a watch that has been silent
 * for its request timeout (30 s) with a TimeoutError, but an API server sends bookmarks only
 * about once a minute: on a node with quiet pods that silence is normal, so it ends the watch
 * cleanly and the source resumes at once from the last resourceVersion. A timeout before the
 * server answered is a failure.
 */
export class KubePodListWatch implements PodListWatch {
  private readonly core: CoreV1Api;
  private readonly watcher: Watch;
  private readonly fieldSelector: string;

  constructor(kc: KubeConfig, nodeName: string, opts: { idleTimeoutMs?: number } = {}) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.watcher = new Watch(kc);
    // client-node keeps the timeout private; tests shorten it to see a silent watch end.
    if (opts.idleTimeoutMs !== undefined) Reflect.set(this.watcher, 'requestTimeoutMs', opts.idleTimeoutMs);
    this.fieldSelector = `spec.nodeName=${nodeName}`;
  }

  async list() {
    try {
      const list = await this.core.listPodForAllNamespaces({ fieldSelector: this.fieldSelector });
      return { pods: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    } catch (e) {
      throw toApiError(e);
    }
  }

  watch(resourceVersion: string, onEvent: (type: WatchEventType, pod: V1Pod) => void) {
    let controller: AbortController | undefined;
    let stopped = false;
    // client-node hands back the controller once the server has answered 200.
    let answered = false;
    const done = new Promise<void>((resolve, reject) => {
      this.watcher
        .watch(
          '/api/v1/pods',
          { fieldSelector: this.fieldSelector, resourceVersion, allowWatchBookmarks: true },
          (type, obj) => {
            if (type === 'ERROR') {
              const status = obj as { code?: number; message?: string };
              const err =
                status.code === 410
                  ? new ResourceExpiredError(status.message ?? 'resource version too old')
                  : new Error(status.message ?? 'watch error');
              controller?.abort();
              reject(err);
              return;
            }
            // Watch events arrive as plain JSON; deserialising keeps them the same shape as listed pods.
            onEvent(type as WatchEventType, ObjectSerializer.deserialize(obj, 'V1Pod', '') as V1Pod);
          },
          (err) => {
            if (!err || stopped || (answered && isTimeout(err))) resolve();
            else reject(err.statusCode === 410 ? new ResourceExpiredError(String(err.message)) : err);
          },
        )
        .then((c) => {
          answered = true;
          controller = c;
          if (stopped) c.abort();
        }, reject);
    });
    return {
      done,
      stop: () => {
        stopped = true;
        controller?.abort();
      },
    };
  }
}

const RETRY_START_MS = 1_000;
const RETRY_MAX_MS = 30_000;

export class ApiServerPodSource implements PodSource {
  private readonly diff = new PodSnapshotDiff('api');
  private listed = false;

  constructor(private readonly opts: { lw: PodListWatch; clock: TimerClock; log?: Logger }) {}

  ready(): boolean {
    return this.listed;
  }

  async run(signal: AbortSignal, deliver: (update: PodUpdate) => void): Promise<void> {
    const log = this.opts.log ?? silentLogger;
    let resourceVersion: string | undefined;
    let delay = RETRY_START_MS;
    while (!signal.aborted) {
      try {
        if (resourceVersion === undefined) {
          const list = await this.opts.lw.list();
          resourceVersion = list.resourceVersion;
          this.listed = true;
          for (const u of this.diff.set(list.pods)) deliver(u);
        }
        const w = this.opts.lw.watch(resourceVersion, (type, pod) => {
          if (pod.metadata?.resourceVersion) resourceVersion = pod.metadata.resourceVersion;
          if (type === 'BOOKMARK') return;
          for (const u of this.diff.apply(pod, type === 'DELETED')) deliver(u);
        });
        const onAbort = () => w.stop();
        signal.addEventListener('abort', onAbort, { once: true });
        try {
          await w.done;
          delay = RETRY_START_MS; // a clean end (server timeout): resume at once
        } finally {
          signal.removeEventListener('abort', onAbort);
        }
      } catch (e) {
        if (e instanceof ResourceExpiredError) {
          log.info('Pod watch expired; listing again', { err: e.message });
          resourceVersion = undefined;
          continue;
        }
        log.error('Pod list/watch failed; retrying', { in: delay, err: e });
        await sleep(this.opts.clock, delay, signal).catch(() => {});
        delay = Math.min(delay * 2, RETRY_MAX_MS);
      }
    }
  }
}
