// Runtime health as the kubelet tracks it: a periodic CRI Status check feeds a runtime state,
// and the Ready condition reads the state's errors. Health checks (PLEG) plug in by name.

import { sleep, type TimerClock } from '@kh/apimachinery';
import type { RuntimeCondition, RuntimeFeatures, RuntimeHandler, RuntimeStatus } from '@kh/runtime-manager';
import { type Logger, silentLogger } from './util/log.js';

/** The kubelet declares the runtime down when Status has not succeeded for this long. */
export const DEFAULT_RUNTIME_SYNC_THRESHOLD_MS = 30_000;
/** The kubelet checks the runtime every 5 s. */
export const RUNTIME_CHECK_INTERVAL_MS = 5_000;

export type HealthCheck = () => { ok: boolean; message: string };

export class RuntimeState {
  private lastRuntimeSync = 0;
  private runtimeError: string | undefined;
  private networkError: string | undefined;
  private features: RuntimeFeatures | undefined;
  private handlers: readonly RuntimeHandler[] | undefined;
  private readonly healthChecks: { name: string; fn: HealthCheck }[] = [];

  constructor(
    private readonly clock: { now(): number },
    private readonly syncThresholdMs = DEFAULT_RUNTIME_SYNC_THRESHOLD_MS,
  ) {}

  /** Registers a named check; a failing one reads "<name> is not healthy: <message>". */
  addHealthCheck(name: string, fn: HealthCheck): void {
    this.healthChecks.push({ name, fn });
  }

  setRuntimeSync(at: number): void {
    this.lastRuntimeSync = at;
  }

  setRuntimeError(message: string | undefined): void {
    this.runtimeError = message;
  }

  setNetworkError(message: string | undefined): void {
    this.networkError = message;
  }

  /** What the runtime's last Status said it implements; undefined until it says (node status features). */
  setRuntimeFeatures(features: RuntimeFeatures | undefined): void {
    this.features = features;
  }

  runtimeFeatures(): RuntimeFeatures | undefined {
    return this.features;
  }

  /** The handlers the runtime's last Status announced (node status, the user namespace check). */
  setRuntimeHandlers(handlers: readonly RuntimeHandler[]): void {
    this.handlers = handlers;
  }

  /** Undefined until the runtime answered Status once. */
  runtimeHandlers(): readonly RuntimeHandler[] | undefined {
    return this.handlers;
  }

  runtimeErrors(): string[] {
    const errs: string[] = [];
    if (this.lastRuntimeSync === 0) errs.push('container runtime status check may not have completed yet');
    else if (this.clock.now() - this.lastRuntimeSync >= this.syncThresholdMs)
      errs.push('container runtime is down');
    for (const hc of this.healthChecks) {
      const r = hc.fn();
      if (!r.ok) errs.push(`${hc.name} is not healthy: ${r.message}`);
    }
    if (this.runtimeError) errs.push(this.runtimeError);
    return errs;
  }

  networkErrors(): string[] {
    return this.networkError ? [this.networkError] : [];
  }

  ready(): boolean {
    return this.runtimeErrors().length === 0 && this.networkErrors().length === 0;
  }
}

function describeCondition(c: RuntimeCondition | undefined, type: string): string {
  return c ? `${c.type}=${c.status} reason:${c.reason} message:${c.message}` : `${type} condition missing`;
}

/** Runs CRI Status every 5 s and records the outcome in the RuntimeState. */
export class RuntimeHealthMonitor {
  private wasReady: boolean | undefined;

  constructor(
    private readonly opts: {
      runtime: { status(): Promise<RuntimeStatus> };
      state: RuntimeState;
      clock: TimerClock;
      intervalMs?: number;
      log?: Logger;
      /** Called when readiness flips, so node status can be posted at once. */
      onChange?: (ready: boolean) => void;
    },
  ) {}

  async check(): Promise<void> {
    const { state, clock } = this.opts;
    const log = this.opts.log ?? silentLogger;
    try {
      const status = await this.opts.runtime.status();
      state.setRuntimeFeatures(status.features);
      state.setRuntimeHandlers(status.runtimeHandlers);
      const network = status.conditions.find((c) => c.type === 'NetworkReady');
      state.setNetworkError(
        network?.status
          ? undefined
          : `container runtime network not ready: ${describeCondition(network, 'NetworkReady')}`,
      );
      const runtime = status.conditions.find((c) => c.type === 'RuntimeReady');
      if (!runtime?.status) {
        state.setRuntimeError(`container runtime not ready: ${describeCondition(runtime, 'RuntimeReady')}`);
      } else {
        state.setRuntimeError(undefined);
        state.setRuntimeSync(clock.now());
      }
    } catch (e) {
      // The last successful sync ages out; past the threshold Ready reads "container runtime is down".
      log.error('Container runtime sanity check failed', { err: e });
    }
    const ready = state.ready();
    if (this.wasReady !== undefined && ready !== this.wasReady) this.opts.onChange?.(ready);
    this.wasReady = ready;
  }

  async run(signal: AbortSignal): Promise<void> {
    const interval = this.opts.intervalMs ?? RUNTIME_CHECK_INTERVAL_MS;
    while (!signal.aborted) {
      await this.check();
      await sleep(this.opts.clock, interval, signal).catch(() => {});
    }
  }
}
