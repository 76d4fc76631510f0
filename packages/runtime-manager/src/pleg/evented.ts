// Evented PLEG: lifecycle events from CRI GetContainerEvents. When the stream breaks and does
// not come back after a few retries, it falls back to the relisting PLEG and says so in
// mode(). The relisting PLEG keeps running at the kubelet's 5-minute pace as a safety net; its
// first relist, at start, fills the cache with the pods that were there before the stream.
// Each event's statuses go into the relisting PLEG's pod cache, stamped with the event's time;
// with no relist to refresh it, the cache's global timestamp moves on every couple of seconds,
// so a worker waiting for a pod without events is not stuck (as the kubelet does).
import type { ContainerEventResponse, CriClient } from '@kh/cri-api';
import { ContainerEventType } from '@kh/cri-api';
import type { Pleg, PodLifecycleEvent, PodStatus } from '../container/runtime.js';
import { nsToMs } from '../kuberuntime/context.js';
import { PodUidLabel } from '../kuberuntime/labels.js';
import { LifecycleEmitter } from './emitter.js';
import type { GenericPLEG } from './generic.js';

/** The kubelet's globalCacheUpdatePeriod. */
export const DefaultGlobalCacheUpdatePeriodMs = 2000;
/** The kubelet's eventedPlegRelistPeriod: the relisting PLEG's pace while events are the source. */
export const EventedRelistPeriodMs = 300_000;

export interface EventedPlegOptions {
  /** Reconnect attempts before falling back to relisting (the kubelet uses 5). */
  maxStreamRetries?: number;
  retryDelayMs?: number;
  /** How often the cache's global timestamp moves on while events are the source. */
  globalCacheUpdatePeriodMs?: number;
  /** How often the relisting PLEG still relists while events are the source (a safety net). */
  relistPeriodMs?: number;
  /** Turns an event's sandbox and container statuses into a PodStatus for the cache. */
  podStatusFromEvent: (ev: ContainerEventResponse) => Promise<PodStatus | undefined>;
  onError?: (err: Error) => void;
}

export class EventedPLEG implements Pleg {
  readonly #emitter = new LifecycleEmitter();
  readonly #opts: Required<Omit<EventedPlegOptions, 'onError'>> & Pick<EventedPlegOptions, 'onError'>;
  #mode: 'generic' | 'evented' = 'evented';
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #unwatchGeneric: (() => void) | undefined;
  #cacheTimer: NodeJS.Timeout | undefined;
  #lastError = '';
  /** The relisting PLEG's own period, restored on a fallback. */
  #genericPeriodMs = 0;

  constructor(
    private readonly cri: CriClient,
    /** The relisting PLEG to fall back to; it shares the status cache. */
    private readonly generic: GenericPLEG,
    opts: EventedPlegOptions,
  ) {
    this.#opts = {
      maxStreamRetries: 5,
      retryDelayMs: 1000,
      globalCacheUpdatePeriodMs: DefaultGlobalCacheUpdatePeriodMs,
      relistPeriodMs: EventedRelistPeriodMs,
      ...opts,
    };
  }

  start(): void {
    if (this.#abort) return;
    this.#abort = new AbortController();
    this.#mode = 'evented';
    const signal = this.#abort.signal;
    const cache = this.generic.cache;
    this.#cacheTimer = setInterval(() => cache.updateTime(cache.now()), this.#opts.globalCacheUpdatePeriodMs);
    this.#cacheTimer.unref();
    // The relisting PLEG keeps running, as in the kubelet: its first relist fills the cache with
    // the pods that existed before the stream, and then it relists every 5 minutes in case an
    // event was lost; on a fallback it goes back to its own period.
    this.#genericPeriodMs = this.generic.relistPeriodMs;
    this.generic.setRelistPeriod(this.#opts.relistPeriodMs);
    this.#unwatchGeneric = this.generic.watch((e) => this.#emitter.emit(e));
    this.generic.start();
    this.#loop = this.#run(signal);
  }

  async #run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      try {
        for await (const ev of this.cri.getContainerEvents({}, { signal })) {
          failures = 0;
          await this.#handle(ev);
        }
        if (signal.aborted) return;
        this.#lastError = 'container event stream ended';
      } catch (err) {
        if (signal.aborted) return;
        this.#lastError = (err as Error).message;
        this.#opts.onError?.(err as Error);
      }
      failures++;
      if (failures > this.#opts.maxStreamRetries) {
        this.#fallBack();
        return;
      }
      await new Promise((r) => setTimeout(r, this.#opts.retryDelayMs));
    }
  }

  #fallBack(): void {
    this.#mode = 'generic';
    clearInterval(this.#cacheTimer);
    this.generic.setRelistPeriod(this.#genericPeriodMs);
  }

  async #handle(ev: ContainerEventResponse): Promise<void> {
    const uid = ev.podSandboxStatus?.metadata?.uid ?? ev.podSandboxStatus?.labels[PodUidLabel];
    if (!uid) return;
    const cache = this.generic.cache;
    try {
      const status = await this.#opts.podStatusFromEvent(ev);
      // A deleted sandbox takes the pod out of the runtime; any other deletion leaves the cache
      // to the next event or relist, as the kubelet does.
      if (ev.containerEventType === ContainerEventType.CONTAINER_DELETED_EVENT) {
        if (status?.sandboxStatuses.some((s) => s.id === ev.containerId)) cache.delete(uid);
      } else if (status) cache.set(status, nsToMs(ev.createdAt));
    } catch (err) {
      this.#opts.onError?.(err as Error);
    }
    const e = (type: PodLifecycleEvent['type']): PodLifecycleEvent => ({
      podUid: uid,
      type,
      data: ev.containerId,
    });
    switch (ev.containerEventType) {
      case ContainerEventType.CONTAINER_STARTED_EVENT:
        this.#emitter.emit(e('ContainerStarted'));
        break;
      case ContainerEventType.CONTAINER_STOPPED_EVENT:
        this.#emitter.emit(e('ContainerDied'));
        break;
      case ContainerEventType.CONTAINER_DELETED_EVENT:
        this.#emitter.emit(e('ContainerDied'));
        this.#emitter.emit(e('ContainerRemoved'));
        break;
      default:
        // CREATED only refreshes the cache, as in the kubelet.
        break;
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#cacheTimer);
    this.#abort?.abort();
    await this.#loop;
    this.#abort = undefined;
    this.#unwatchGeneric?.();
    await this.generic.stop();
    // The relisting PLEG is the caller's again, at its own period (a later start() reads it).
    if (this.#mode === 'evented') this.generic.setRelistPeriod(this.#genericPeriodMs);
  }

  watch(listener: (event: PodLifecycleEvent) => void): () => void {
    return this.#emitter.watch(listener);
  }

  mode(): 'generic' | 'evented' {
    return this.#mode;
  }

  healthy(): { ok: boolean; message: string } {
    if (this.#mode === 'generic') {
      const h = this.generic.healthy();
      return { ok: h.ok, message: `evented pleg fell back to relisting (${this.#lastError}); ${h.message}` };
    }
    return { ok: true, message: 'evented pleg is receiving container events' };
  }
}
