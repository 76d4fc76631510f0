// The Kubelet runs what newMainKubelet (main_kubelet.ts) built: its servers, the node's
// registration, status and lease, the runtime health check, the pod sources, the managers, the
// PLEG, and syncLoop at the centre, which dispatches pod updates, PLEG events, periodic syncs and
// housekeeping to the SyncHandler (pods/types.ts).

import { readFile } from 'node:fs/promises';
import { sleep, type TimerClock } from '@kh/apimachinery';
import type { Pleg, PodLifecycleEvent } from '@kh/runtime-manager';
import type { ResolvedKubeletConfig } from './config/resolve.js';
import type { KubeletConfiguration } from './config/types.js';
import type { KubeletEventRecorder } from './events/recorder.js';
import type { KubeletMetrics } from './metrics/metrics.js';
import type { NodeLeaseController } from './nodelease/controller.js';
import type { NodeIdentity } from './nodestatus/node.js';
import type { NodeRegistrar } from './nodestatus/registration.js';
import type { NodeStatusSnapshotter } from './nodestatus/snapshot.js';
import type { NodeStatusUpdater } from './nodestatus/status_updater.js';
import type { SyncHandler } from './pods/types.js';
import type { RuntimeHealthMonitor, RuntimeState } from './runtime_health.js';
import type { Authenticator, Authorizer } from './server/auth.js';
import { loadOrCreateServingCert, type ServingCert } from './server/certs.js';
import { HealthChecker, HealthzServer, syncLoopCheck } from './server/healthz.js';
import { KubeletServer, type KubeletServerOptions } from './server/server.js';
import type { PodSource, PodUpdate } from './types/pod_update.js';
import { Waker } from './util/clock.js';
import type { Logger } from './util/log.js';

export const KUBELET_VERSION = 'v1.33.0-kh';

/** The kubelet's sync loop ticks every second and runs housekeeping every two. */
export const SYNC_TICK_MS = 1_000;
export const HOUSEKEEPING_PERIOD_MS = 2_000;
const RUNTIME_ERROR_BACKOFF_START_MS = 100;
const RUNTIME_ERROR_BACKOFF_MAX_MS = 5_000;

/** The parts the Kubelet runs, built by newMainKubelet (main_kubelet.ts). */
export interface KubeletParts {
  config: KubeletConfiguration;
  resolved: ResolvedKubeletConfig;
  identity: NodeIdentity;
  nodeIP: string;
  certDir: string;
  clock: TimerClock;
  log: Logger;
  metrics: KubeletMetrics;
  runtimeState: RuntimeState;
  runtimeHealth: RuntimeHealthMonitor;
  nodeStatus: NodeStatusSnapshotter;
  /** With an API server: registration, node status, lease and events. */
  node?: {
    registrar: NodeRegistrar;
    statusUpdater: NodeStatusUpdater;
    leaseController: NodeLeaseController;
    recorder: KubeletEventRecorder;
  };
  auth: { authenticator?: Authenticator; anonymousEnabled: boolean; authorizer: Authorizer };
  podSources: PodSource[];
  syncHandler?: SyncHandler;
  /** The runtime manager's PLEG: its events reach the SyncHandler. */
  pleg?: Pick<Pleg, 'start' | 'stop' | 'watch'>;
  /** Loops that run and stop with the Kubelet (status manager, mirror pods, eviction, GC). */
  managers: { run(signal: AbortSignal): Promise<void> }[];
  servers?: Pick<
    KubeletServerOptions,
    'pods' | 'runningPods' | 'stats' | 'logs' | 'streaming' | 'startup' | 'checkpoint'
  >;
}

export class Kubelet {
  readonly health = new HealthChecker();
  private lastSyncLoopIteration: number | undefined;
  private readonly pending: PodUpdate[] = [];
  private readonly plegEvents: PodLifecycleEvent[] = [];
  private readonly syncLoopWaker = new Waker();
  /** Where the servers listen once run() started them (port 0 in tests picks a free port). */
  readonly listening: { healthz?: { host: string; port: number }; kubelet?: { host: string; port: number } } =
    {};

  constructor(private readonly parts: KubeletParts) {
    this.health.add(
      'syncloop',
      syncLoopCheck(
        () => this.lastSyncLoopIteration,
        () => parts.clock.now(),
        parts.resolved.syncFrequencyMs,
      ),
    );
  }

  get recorder(): KubeletEventRecorder | undefined {
    return this.parts.node?.recorder;
  }

  get nodeStatus(): NodeStatusSnapshotter {
    return this.parts.nodeStatus;
  }

  /** Posts the node status now rather than at the next update (the kubelet's syncNodeStatus). */
  syncNodeStatus(): void {
    this.parts.node?.statusUpdater.kick();
  }

  /** Starts every loop and server; resolves after `signal` aborts and everything stopped. */
  async run(signal: AbortSignal): Promise<void> {
    const { parts } = this;
    const { config, log } = parts;
    this.recorder?.nodeEvent('Normal', 'Starting', 'Starting kubelet.');
    await parts.runtimeHealth.check();
    // Admission reads this node from the latest snapshot: have one before the first pod.
    await parts.nodeStatus.snapshot();
    const healthz = config.healthzPort > 0 ? new HealthzServer(this.health) : undefined;
    const server = new KubeletServer({
      nodeName: parts.identity.nodeName,
      tls: await this.servingCert(),
      ...(config.authentication.x509.clientCAFile
        ? { clientCA: await readFile(config.authentication.x509.clientCAFile, 'utf8') }
        : {}),
      ...parts.auth,
      health: this.health,
      metrics: parts.metrics,
      configz: () => config,
      ...parts.servers,
      log,
    });
    try {
      if (healthz)
        this.listening.healthz = await healthz.start(config.healthzBindAddress, config.healthzPort);
      this.listening.kubelet = await server.start(config.address, config.port);
      parts.nodeStatus.kubeletPort = this.listening.kubelet.port;
      log.info('Started kubelet', { node: parts.identity.nodeName, port: this.listening.kubelet.port });
      const loops: Promise<void>[] = [parts.runtimeHealth.run(signal), this.syncLoop(signal)];
      if (parts.node) {
        const { registrar, statusUpdater, leaseController } = parts.node;
        loops.push(registrar.registerWithApiServer(signal).then(() => statusUpdater.run(signal)));
        loops.push(leaseController.run(signal));
      }
      for (const source of parts.podSources) loops.push(source.run(signal, (u) => this.enqueue(u)));
      for (const m of parts.managers) loops.push(m.run(signal));
      const { pleg } = parts;
      if (pleg) {
        const unwatch = pleg.watch((e) => {
          this.plegEvents.push(e);
          this.syncLoopWaker.kick();
        });
        pleg.start();
        loops.push(
          new Promise<void>((resolve) =>
            signal.addEventListener('abort', () => resolve(), { once: true }),
          ).then(async () => {
            unwatch();
            await pleg.stop();
          }),
        );
      }
      await Promise.all(loops);
    } finally {
      await Promise.all([healthz?.stop(), server.stop()]);
      await this.recorder?.flush();
      log.info('Kubelet stopped', { node: parts.identity.nodeName });
    }
  }

  /** Pod config updates from the sources; the sync loop dispatches them in order. */
  enqueue(update: PodUpdate): void {
    this.pending.push(update);
    this.syncLoopWaker.kick();
  }

  /** The kubelet's main loop: pod updates, periodic syncs and housekeeping, paused while the runtime is unhealthy. */
  async syncLoop(signal: AbortSignal): Promise<void> {
    const { clock, log, runtimeState } = this.parts;
    let backoff = RUNTIME_ERROR_BACKOFF_START_MS;
    let nextHousekeeping = clock.now() + HOUSEKEEPING_PERIOD_MS;
    while (!signal.aborted) {
      const errors = runtimeState.runtimeErrors();
      if (errors.length > 0) {
        log.v(2, 'Skipping pod synchronization', { err: errors.join(', ') });
        await sleep(clock, backoff, signal).catch(() => {});
        backoff = Math.min(backoff * 2, RUNTIME_ERROR_BACKOFF_MAX_MS);
        continue;
      }
      backoff = RUNTIME_ERROR_BACKOFF_START_MS;
      this.lastSyncLoopIteration = clock.now();
      const housekeeping = clock.now() >= nextHousekeeping;
      if (housekeeping) nextHousekeeping = clock.now() + HOUSEKEEPING_PERIOD_MS;
      try {
        await this.syncLoopIteration(housekeeping);
      } catch (e) {
        log.error('Sync loop iteration failed', { err: e });
      }
      await this.syncLoopWaker.wait(clock, SYNC_TICK_MS, signal);
    }
  }

  /** One pass: dispatch queued pod updates, then due syncs, then housekeeping when its period came round. */
  async syncLoopIteration(housekeeping: boolean): Promise<void> {
    const handler = this.parts.syncHandler;
    const updates = this.pending.splice(0);
    const plegEvents = this.plegEvents.splice(0);
    if (!handler) return;
    for (const u of updates) {
      switch (u.op) {
        case 'ADD':
          await handler.handlePodAdditions(u.pods);
          break;
        case 'UPDATE':
        case 'DELETE': // graceful deletion arrives as an update carrying deletionTimestamp
          await handler.handlePodUpdates(u.pods);
          break;
        case 'REMOVE':
          await handler.handlePodRemoves(u.pods);
          break;
        case 'RECONCILE':
          await handler.handlePodReconcile(u.pods);
          break;
      }
    }
    for (const e of plegEvents) await handler.handlePlegEvent(e);
    const due = handler.podsToSync(this.parts.clock.now());
    if (due.length > 0) await handler.handlePodSyncs(due);
    const sourcesReady = this.parts.podSources.every((s) => s.ready());
    if (housekeeping && sourcesReady) await handler.handlePodCleanups();
  }

  private async servingCert(): Promise<ServingCert> {
    const { config, identity, nodeIP, certDir } = this.parts;
    if (config.tlsCertFile) {
      return {
        cert: await readFile(config.tlsCertFile, 'utf8'),
        key: await readFile(config.tlsPrivateKeyFile, 'utf8'),
      };
    }
    return loadOrCreateServingCert(certDir, identity.nodeName, [
      identity.hostname,
      nodeIP,
      'localhost',
      '127.0.0.1',
    ]);
  }
}
