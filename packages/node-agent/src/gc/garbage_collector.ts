// The kubelet's periodic garbage collection: dead containers every minute and unused images every
// five minutes, both through the runtime manager. Failures surface as node events: every
// container GC failure as ContainerGCFailed; image GC only from the second failure in a row as
// ImageGCFailed (the first often means stats were not ready yet), and an image filesystem that
// cannot be brought under the low threshold as FreeDiskSpaceFailed.

import type { TimerClock } from '@kh/apimachinery';
import type { ContainerGCPolicy, ImageGCResult, Runtime } from '@kh/runtime-manager';
import { ImageGCShortfallError } from '@kh/runtime-manager';
import { Counter, Histogram } from 'prom-client';
import type { KubeletMetrics } from '../metrics/metrics.js';
import { Waker } from '../util/clock.js';
import { type Logger, silentLogger } from '../util/log.js';

export const CONTAINER_GC_PERIOD_MS = 60_000;
export const IMAGE_GC_PERIOD_MS = 5 * 60_000;

/**
 * The kubelet's defaults for its (flag-only) container GC knobs: --minimum-container-ttl-duration
 * 0, --maximum-dead-containers-per-container 1, --maximum-dead-containers -1.
 */
export const DEFAULT_CONTAINER_GC_POLICY: ContainerGCPolicy = {
  minAgeMs: 0,
  maxPerPodContainer: 1,
  maxContainers: -1,
};

export interface NodeEventSink {
  nodeEvent(type: 'Normal' | 'Warning', reason: string, message: string): void;
}

export interface GarbageCollectorDeps {
  runtime: Pick<Runtime, 'garbageCollect'>;
  /** The runtime manager's image GC (KubeGenericRuntimeManager.imageGC); undefined disables image GC. */
  imageGC?: { garbageCollect(): Promise<ImageGCResult> };
  containerPolicy: ContainerGCPolicy;
  /** True once every pod source has delivered its first list: only then may deleted pods' containers go. */
  allSourcesReady: () => boolean;
  recorder: NodeEventSink;
  metrics?: KubeletMetrics;
  clock: TimerClock;
  log?: Logger;
  containerGCPeriodMs?: number;
  imageGCPeriodMs?: number;
}

/** Run counts and durations; the kubelet has no such metrics, so these carry the harness's own names. */
class GCMetrics {
  readonly runs: Counter<'kind' | 'result'>;
  readonly duration: Histogram<'kind'>;
  constructor(private readonly kubelet: KubeletMetrics) {
    this.runs = new Counter({
      name: 'kh_garbage_collection_runs_total',
      help: 'Garbage collection passes by kind (container, image) and result (success, failure).',
      labelNames: ['kind', 'result'],
      registers: [kubelet.registry],
    });
    this.duration = new Histogram({
      name: 'kh_garbage_collection_duration_seconds',
      help: 'Duration of garbage collection passes by kind.',
      labelNames: ['kind'],
      registers: [kubelet.registry],
    });
  }

  record(kind: 'container' | 'image', ok: boolean, seconds: number, result?: ImageGCResult): void {
    this.runs.inc({ kind, result: ok ? 'success' : 'failure' });
    this.duration.observe({ kind }, seconds);
    const forAge = result?.removedForAge?.length ?? 0;
    const forSpace = (result?.removed.length ?? 0) - forAge;
    if (forAge > 0) this.kubelet.imageGarbageCollected.inc({ reason: 'age' }, forAge);
    if (forSpace > 0) this.kubelet.imageGarbageCollected.inc({ reason: 'space' }, forSpace);
  }
}

export class GarbageCollector {
  private readonly log: Logger;
  private readonly metrics: GCMetrics | undefined;
  private imageGCFailedBefore = false;

  constructor(private readonly deps: GarbageCollectorDeps) {
    this.log = deps.log ?? silentLogger;
    this.metrics = deps.metrics ? new GCMetrics(deps.metrics) : undefined;
  }

  /**
   * Runs both loops until the signal aborts. The first passes run at once, then every period, as
   * the kubelet's wait.Until loops do (so a restarted agent applies new thresholds right away).
   */
  async run(signal: AbortSignal): Promise<void> {
    const loops = [
      this.loop(signal, this.deps.containerGCPeriodMs ?? CONTAINER_GC_PERIOD_MS, () =>
        this.collectContainers(),
      ),
    ];
    if (this.deps.imageGC)
      loops.push(
        this.loop(signal, this.deps.imageGCPeriodMs ?? IMAGE_GC_PERIOD_MS, () => this.collectImages()),
      );
    await Promise.all(loops);
  }

  private async loop(signal: AbortSignal, periodMs: number, pass: () => Promise<unknown>): Promise<void> {
    const waker = new Waker();
    while (!signal.aborted) {
      await pass();
      await waker.wait(this.deps.clock, periodMs, signal);
    }
  }

  /** One container GC pass; never throws. */
  async collectContainers(): Promise<boolean> {
    const t0 = performance.now();
    try {
      await this.deps.runtime.garbageCollect(this.deps.containerPolicy, this.deps.allSourcesReady(), false);
      this.metrics?.record('container', true, (performance.now() - t0) / 1000);
      return true;
    } catch (err) {
      const message = (err as Error).message;
      this.log.error('Container garbage collection failed', { err: message });
      this.deps.recorder.nodeEvent('Warning', 'ContainerGCFailed', message);
      this.metrics?.record('container', false, (performance.now() - t0) / 1000);
      return false;
    }
  }

  /** One image GC pass; never throws. */
  async collectImages(): Promise<ImageGCResult | undefined> {
    const gc = this.deps.imageGC;
    if (!gc) return undefined;
    const t0 = performance.now();
    try {
      const result = await gc.garbageCollect();
      this.imageGCFailedBefore = false;
      this.metrics?.record('image', true, (performance.now() - t0) / 1000, result);
      if (result.removed.length > 0)
        this.log.info('Image garbage collection freed space', {
          bytes: result.freedBytes,
          images: result.removed.length,
          ...(result.removedForAge ? { unusedPastMaximumAge: result.removedForAge.length } : {}),
        });
      return result;
    } catch (err) {
      const message = (err as Error).message;
      if (err instanceof ImageGCShortfallError)
        this.deps.recorder.nodeEvent('Warning', 'FreeDiskSpaceFailed', message);
      if (this.imageGCFailedBefore) {
        this.log.error('Image garbage collection failed multiple times in a row', { err: message });
        this.deps.recorder.nodeEvent('Warning', 'ImageGCFailed', message);
      } else {
        this.log.error(
          'Image garbage collection failed once. Stats initialization may not have completed yet',
          {
            err: message,
          },
        );
      }
      this.imageGCFailedBefore = true;
      this.metrics?.record(
        'image',
        false,
        (performance.now() - t0) / 1000,
        err instanceof ImageGCShortfallError ? err.result : undefined,
      );
      return undefined;
    }
  }
}
