// Mirror pods for static pods (the kubelet's pod manager and mirror-pod handling). Wrapped around
// the pod sources, it takes mirror pods out of the API source's updates (the agent never runs
// them: the static pod is the real one) and keeps, per static pod, one mirror pod in the API with
// the static pod's current config hash:
// - created when missing, once the Node exists and is not being deleted;
// - deleted and created again when its hash is stale (manifest changed) or someone deleted it
//   (a deletionTimestamp on a mirror pod means "restart the mirror", not "stop the pod");
// - deleted when its static pod is gone.
// Status for a static pod is written to its mirror pod by the status manager (same namespace
// and name; it recognises the mirror by its config.mirror annotation).

import type { TimerClock } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import type { PodSource, PodUpdate } from '../types/pod_update.js';
import { Waker } from '../util/clock.js';
import { type Logger, silentLogger } from '../util/log.js';
import { isMirrorPod, isMirrorPodOf, type MirrorPodApi, mirrorPodFor } from './mirror_client.js';

/** A safety net besides the watch: mirrors are checked at least this often. */
export const MIRROR_RESYNC_MS = 10_000;
/** Retry delay while the sources have not listed yet or the Node is not registered yet. */
export const MIRROR_RETRY_MS = 500;

const fullName = (p: V1Pod) => `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`;

export class MirrorPodManager {
  /** Static pods by namespace/name, from the file source. */
  private readonly staticPods = new Map<string, V1Pod>();
  /** Mirror pods by namespace/name, from the API source and from our own writes. */
  private readonly mirrors = new Map<string, V1Pod>();
  private readonly sources: PodSource[] = [];
  private readonly waker = new Waker();

  constructor(
    private readonly opts: {
      api: MirrorPodApi;
      nodeName: string;
      clock: TimerClock;
      resyncMs?: number;
      /** Called after a mirror pod was created, e.g. to post the static pod's status to it now. */
      onMirrorCreated?: (mirror: V1Pod) => void;
      log?: Logger;
    },
  ) {}

  /** The source as the sync loop should see it: mirror pods are taken out and tracked here. */
  wrap(source: PodSource): PodSource {
    this.sources.push(source);
    return {
      ready: () => source.ready(),
      run: (signal, deliver) =>
        source.run(signal, (u) => {
          const rest = this.observe(u);
          if (rest) deliver(rest);
        }),
    };
  }

  /** Tracks static and mirror pods of one update; returns what is left for the sync loop. */
  observe(update: PodUpdate): PodUpdate | undefined {
    const mirrors = update.source === 'api' ? update.pods.filter(isMirrorPod) : [];
    const removed = update.op === 'REMOVE';
    if (update.source === 'file') {
      for (const p of update.pods) {
        if (removed) {
          if (this.staticPods.get(fullName(p))?.metadata?.uid === p.metadata?.uid)
            this.staticPods.delete(fullName(p));
        } else this.staticPods.set(fullName(p), p);
      }
    }
    for (const m of mirrors) {
      // A late removal of a mirror we already replaced must not drop the new one.
      if (removed) {
        if (this.mirrors.get(fullName(m))?.metadata?.uid === m.metadata?.uid)
          this.mirrors.delete(fullName(m));
      } else this.mirrors.set(fullName(m), m);
    }
    if (update.source === 'file' || mirrors.length > 0) this.waker.kick();
    if (mirrors.length === 0) return update;
    const pods = update.pods.filter((p) => !isMirrorPod(p));
    return pods.length > 0 ? { ...update, pods } : undefined;
  }

  /** The mirror pod the API holds for a static pod, if it is current. */
  getMirrorPodByPod(staticPod: V1Pod): V1Pod | undefined {
    const m = this.mirrors.get(fullName(staticPod));
    return m && isMirrorPodOf(m, staticPod) ? m : undefined;
  }

  /**
   * Brings the API's mirror pods in line with the static pods; errors wait for the next pass.
   * Resolves to false when it could not start yet (sources not listed, no Node): retry soon.
   */
  async reconcile(): Promise<boolean> {
    // Before every source has listed, a missing mirror or static pod may only be unknown yet.
    if (!this.sources.every((s) => s.ready())) return false;
    let done = true;
    const log = this.opts.log ?? silentLogger;
    for (const [name, mirror] of [...this.mirrors]) {
      if (this.staticPods.has(name)) continue;
      log.info('Deleting orphaned mirror pod', { pod: name });
      await this.delete(mirror).catch((err) => log.error('Failed to delete mirror pod', { pod: name, err }));
    }
    for (const [name, staticPod] of this.staticPods) {
      try {
        const mirror = this.mirrors.get(name);
        if (mirror && isMirrorPodOf(mirror, staticPod) && !mirror.metadata?.deletionTimestamp) continue;
        if (mirror) {
          log.info('Deleting outdated or deleted mirror pod', { pod: name });
          await this.delete(mirror);
        }
        if (!(await this.create(staticPod))) done = false;
      } catch (err) {
        log.error('Failed to reconcile mirror pod', { pod: name, err });
      }
    }
    return done;
  }

  private async delete(mirror: V1Pod): Promise<void> {
    const { namespace = 'default', name = '', uid = '' } = mirror.metadata ?? {};
    try {
      await this.opts.api.deletePod(namespace, name, uid);
    } catch (e) {
      // Already gone (404) or already replaced by another UID (409 precondition): nothing to delete.
      const code = (e as { code?: number }).code;
      if (code !== 404 && code !== 409) throw e;
    }
    if (this.mirrors.get(fullName(mirror)) === mirror) this.mirrors.delete(fullName(mirror));
  }

  /** False when there is no Node to own the mirror yet. */
  private async create(staticPod: V1Pod): Promise<boolean> {
    const node = await this.opts.api.getNode(this.opts.nodeName);
    // Like the kubelet: no owner to point at yet, or the Node is going away.
    if (!node || node.metadata?.deletionTimestamp) return false;
    const created = await this.opts.api.createPod(mirrorPodFor(staticPod, node)).catch((e) => {
      // Someone else's pod holds the name (or our create raced the watch): seen on the next pass.
      if ((e as { code?: number }).code === 409) return undefined;
      throw e;
    });
    if (created) {
      this.mirrors.set(fullName(created), created);
      this.opts.onMirrorCreated?.(created);
    }
    return true;
  }

  /** Reconciles on every change of static or mirror pods, and every resyncMs. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const done = await this.reconcile();
      const wait = done ? (this.opts.resyncMs ?? MIRROR_RESYNC_MS) : MIRROR_RETRY_MS;
      await this.waker.wait(this.opts.clock, wait, signal);
    }
  }
}
