// One worker per (pod, container, probe type), the kubelet's probe worker: it probes on a ticker
// of the probe's period once the container has run for initialDelaySeconds, applies the success and failure
// thresholds, and publishes a result only when a threshold is crossed. A failed liveness or
// startup probe holds the worker until the container is replaced, so one failure causes one kill.

import type { TimerClock } from '@kh/apimachinery';
import { containerShouldRestart } from '@kh/runtime-manager';
import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { bareContainerId } from '../types/container_id.js';
import type { ProbeOutcome } from './handlers.js';
import type { ProbeSpec, ProbeType } from './probe_spec.js';
import type { ProbeResultsStore, Result } from './results.js';

export interface ProbeRequest {
  pod: V1Pod;
  container: V1Container;
  containerId: string;
  /** The pod's IP, the default target of network probes. */
  podIP: string;
  spec: ProbeSpec;
}

/** Runs one probe; throwing means it could not run and the attempt is discarded. */
export type ProbeRunner = (req: ProbeRequest) => Promise<ProbeOutcome>;

export interface WorkerHooks {
  clock: TimerClock;
  results: ProbeResultsStore;
  podStatus: (uid: string) => V1PodStatus | undefined;
  runProbe: ProbeRunner;
  /** Called after each probe that ran; the manager turns it into events and metrics. */
  observed: (w: ProbeWorker, outcome: ProbeOutcome | Error) => void;
  /** The worker ended by itself (the pod finished, or it is terminating and this is not readiness). */
  ended: (w: ProbeWorker) => void;
  /** ContainerRestartRules: whether an exited container restarts is its own rules' and policy's call. */
  containerRestartRules?: boolean;
}

const INITIAL: Record<ProbeType, Result> = { liveness: 'success', readiness: 'failure', startup: 'unknown' };

export class ProbeWorker {
  private containerId = '';
  private lastResult: Result | undefined;
  private resultRun = 0;
  private onHold = false;
  private stopped = false;
  private inFlight = false;
  private triggered = false;
  /** When the worker's ticker fires next (it keeps its phase from the worker's start). */
  private nextTickAt = 0;
  private cancelTimer: (() => void) | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(
    public pod: V1Pod,
    readonly container: V1Container,
    readonly spec: ProbeSpec,
    private readonly hooks: WorkerHooks,
  ) {}

  get type(): ProbeType {
    return this.spec.type;
  }

  /** The first probe runs at once, the next ones on the ticker. */
  start(): void {
    this.nextTickAt = this.hooks.clock.now() + this.spec.periodMs;
    this.schedule(0);
  }

  /** The container instance this worker probes ('' before the first one runs). */
  get probedContainerId(): string {
    return this.containerId;
  }

  /**
   * Probes at once instead of at the next period (the kubelet's manual trigger: readiness right
   * after the startup probe succeeds). A probe in flight is followed by another straight away.
   */
  trigger(): void {
    if (this.stopped) return;
    if (this.inFlight) {
      this.triggered = true;
      return;
    }
    this.cancelTimer?.();
    this.schedule(0);
  }

  /** Stops probing and forgets this worker's result. */
  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
    if (this.containerId) this.hooks.results.cache(this.type).remove(this.containerId);
  }

  /** Resolves when the probe in flight (if any) is done. */
  idle(): Promise<void> {
    return this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.cancelTimer = this.hooks.clock.setTimer(ms, () => {
      this.running = this.tick();
    });
  }

  /**
   * The kubelet's worker waits on a time.Ticker, whose ticks keep their phase however long a probe
   * takes: a tick that came while the probe ran is kept (one, the channel's buffer) and the next
   * probe starts at once; further ones are dropped.
   */
  private async tick(): Promise<void> {
    let keepGoing = true;
    this.inFlight = true;
    const { periodMs } = this.spec;
    const startedAt = this.hooks.clock.now();
    if (startedAt >= this.nextTickAt)
      this.nextTickAt += (Math.floor((startedAt - this.nextTickAt) / periodMs) + 1) * periodMs;
    try {
      keepGoing = await this.doProbe();
    } finally {
      this.inFlight = false;
      const next = this.triggered ? 0 : Math.max(0, this.nextTickAt - this.hooks.clock.now());
      this.triggered = false;
      if (keepGoing) this.schedule(next);
      else if (!this.stopped) {
        this.stop();
        this.hooks.ended(this);
      }
    }
  }

  private containerStatus(status: V1PodStatus): V1ContainerStatus | undefined {
    return [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])].find(
      (c) => c.name === this.container.name,
    );
  }

  /** One probe period; false ends the worker. */
  async doProbe(): Promise<boolean> {
    const cache = this.hooks.results.cache(this.type);
    const uid = this.pod.metadata?.uid ?? '';
    const status = this.hooks.podStatus(uid);
    if (!status) return true; // not synced yet
    if (status.phase === 'Failed' || status.phase === 'Succeeded') return false;
    const c = this.containerStatus(status);
    if (!c?.containerID) return true;
    const id = bareContainerId(c.containerID);
    if (id !== this.containerId) {
      // A new instance of the container: start over from the type's initial result.
      if (this.containerId) cache.remove(this.containerId);
      this.containerId = id;
      this.onHold = false;
      this.resultRun = 0;
      this.lastResult = undefined;
      cache.set(id, INITIAL[this.type], this.pod);
    }
    if (this.onHold) return true;
    if (!c.state?.running) {
      cache.set(id, 'failure', this.pod);
      const t = c.state?.terminated;
      if (t && this.hooks.containerRestartRules)
        return containerShouldRestart(this.container, this.pod.spec, t.exitCode);
      return !t || this.pod.spec?.restartPolicy !== 'Never';
    }
    if (this.pod.metadata?.deletionTimestamp) {
      // A terminating pod is not ready and is no longer checked for liveness.
      if (this.type === 'readiness') cache.set(id, 'failure', this.pod);
      if (this.type === 'startup') cache.set(id, 'unknown', this.pod);
      return this.type === 'readiness';
    }
    const startedAt = c.state.running.startedAt ? new Date(c.state.running.startedAt).getTime() : 0;
    if (this.hooks.clock.now() - startedAt < this.spec.initialDelayMs) return true;
    const started = !this.container.startupProbe || this.hooks.results.startup.get(id) === 'success';
    if (this.type === 'startup' ? started : !started) return true;

    let outcome: ProbeOutcome;
    try {
      outcome = await this.hooks.runProbe({
        pod: this.pod,
        container: this.container,
        containerId: id,
        podIP: status.podIP ?? '',
        spec: this.spec,
      });
    } catch (err) {
      this.hooks.observed(this, err as Error);
      return true;
    }
    if (this.stopped) return false;
    this.hooks.observed(this, outcome);
    const result: Result = outcome.result === 'failure' ? 'failure' : 'success';
    this.resultRun = this.lastResult === result ? this.resultRun + 1 : 1;
    this.lastResult = result;
    if (result === 'failure' && this.resultRun < this.spec.failureThreshold) return true;
    if (result === 'success' && this.resultRun < this.spec.successThreshold) return true;
    cache.set(id, result, this.pod);
    if (result === 'failure' && this.type !== 'readiness') {
      this.onHold = true;
      this.resultRun = 0;
    }
    return true;
  }
}
