// The Kubelet: wires configuration, the runtime, the API server and the managers together and
// runs them (Kubelet.run), with syncLoop at the centre. This session's Kubelet keeps the node
// registered, its status and lease fresh, and its servers up; pod sources and the SyncHandler
// plug into the loop through the seams in pods/types.ts.

import { readFile } from 'node:fs/promises';
import type { Pleg, PodLifecycleEvent } from '@kh/runtime-manager';
import type { KubeConfig, V1Node } from '@kubernetes/client-node';
import type { NodeApi } from './api/node_api.js';
import type { ResolvedKubeletConfig } from './config/resolve.js';
import type { KubeletConfiguration } from './config/types.js';
import { KubeletEventRecorder } from './events/recorder.js';
import { KubeletMetrics } from './metrics/metrics.js';
import { NodeLeaseController } from './nodelease/controller.js';
import type { MachineInfo } from './nodestatus/machine_info.js';
import { initialNode, type NodeIdentity } from './nodestatus/node.js';
import { NodeRegistrar } from './nodestatus/registration.js';
import { type NodeStatusSnapshot, setNodeStatus } from './nodestatus/setters.js';
import { NodeStatusUpdater } from './nodestatus/status_updater.js';
import type { SyncHandler } from './pods/types.js';
import type { NodeRuntime } from './runtime/node_runtime.js';
import { RuntimeHealthMonitor, RuntimeState } from './runtime_health.js';
import {
  type Authenticator,
  type Authorizer,
  alwaysAllow,
  SubjectAccessReviewAuthorizer,
  TokenReviewAuthenticator,
} from './server/auth.js';
import { loadOrCreateServingCert, type ServingCert } from './server/certs.js';
import { HealthChecker, HealthzServer, syncLoopCheck } from './server/healthz.js';
import { KubeletServer, type KubeletServerOptions } from './server/server.js';
import type { PodSource, PodUpdate } from './types/pod_update.js';
import { noPressure, type PressureSource } from './types/pressure.js';
import { realClock, sleep, type TimerClock, Waker } from './util/clock.js';
import { type Logger, silentLogger } from './util/log.js';

export const KUBELET_VERSION = 'v1.33.0-kh';

/** The kubelet's sync loop ticks every second and runs housekeeping every two. */
export const SYNC_TICK_MS = 1_000;
export const HOUSEKEEPING_PERIOD_MS = 2_000;
const RUNTIME_ERROR_BACKOFF_START_MS = 100;
const RUNTIME_ERROR_BACKOFF_MAX_MS = 5_000;

export interface KubeletDeps {
  config: KubeletConfiguration;
  resolved: ResolvedKubeletConfig;
  identity: NodeIdentity;
  nodeIP: string;
  machineInfo: MachineInfo;
  certDir: string;
  runtime: NodeRuntime;
  /** Absent in standalone mode (no --kubeconfig): no registration, status, lease or events. */
  api?: NodeApi;
  kubeConfig?: KubeConfig;
  clock?: TimerClock;
  log?: Logger;
  metrics?: KubeletMetrics;
  /** Shared with the runtime manager for pod events; built from `api` when absent. */
  recorder?: KubeletEventRecorder;
  pressure?: PressureSource;
  podSources?: PodSource[];
  syncHandler?: SyncHandler;
  /** The runtime manager's PLEG: its events reach the SyncHandler, its health gates Ready. */
  pleg?: Pick<Pleg, 'healthy' | 'start' | 'stop' | 'watch'>;
  /** Loops the pod layer owns (the status manager) that run and stop with the Kubelet. */
  managers?: { run(signal: AbortSignal): Promise<void> }[];
  /** Overrides the authenticator/authorizer derived from the configuration. */
  authenticator?: Authenticator;
  authorizer?: Authorizer;
  servers?: Pick<KubeletServerOptions, 'pods' | 'runningPods' | 'stats' | 'logs'>;
}

export class Kubelet {
  readonly runtimeState: RuntimeState;
  readonly health = new HealthChecker();
  readonly metrics: KubeletMetrics;
  readonly recorder: KubeletEventRecorder | undefined;
  readonly registrar: NodeRegistrar | undefined;
  readonly statusUpdater: NodeStatusUpdater | undefined;
  readonly leaseController: NodeLeaseController | undefined;
  readonly runtimeHealth: RuntimeHealthMonitor;
  private readonly clock: TimerClock;
  private readonly log: Logger;
  private lastSyncLoopIteration: number | undefined;
  private kubeletPort: number;
  private readonly pending: PodUpdate[] = [];
  private readonly plegEvents: PodLifecycleEvent[] = [];
  private lastSnapshot: NodeStatusSnapshot | undefined;
  private readonly syncLoopWaker = new Waker();
  /** Where the servers listen once run() started them (port 0 in tests picks a free port). */
  readonly listening: { healthz?: { host: string; port: number }; kubelet?: { host: string; port: number } } =
    {};

  constructor(private readonly deps: KubeletDeps) {
    this.clock = deps.clock ?? realClock;
    this.log = deps.log ?? silentLogger;
    this.metrics = deps.metrics ?? new KubeletMetrics();
    this.kubeletPort = deps.config.port;
    this.runtimeState = new RuntimeState(this.clock);
    const { pleg } = deps;
    if (pleg) this.runtimeState.addHealthCheck('PLEG', () => pleg.healthy());
    const nodeName = deps.identity.nodeName;
    if (deps.api) {
      this.recorder =
        deps.recorder ??
        new KubeletEventRecorder(deps.api, {
          host: nodeName,
          clock: this.clock,
          log: this.log,
        });
      const registrar = new NodeRegistrar({
        api: deps.api,
        identity: deps.identity,
        clock: this.clock,
        create: deps.config.registerNode,
        recorder: this.recorder,
        log: this.log,
        initialStatus: (node) => this.statusUpdater?.initialStatus(node) ?? Promise.resolve(),
      });
      this.registrar = registrar;
      this.statusUpdater = new NodeStatusUpdater({
        api: deps.api,
        nodeName,
        clock: this.clock,
        registrar,
        snapshot: () => this.snapshot(),
        updateFrequencyMs: deps.resolved.nodeStatusUpdateFrequencyMs,
        reportFrequencyMs: deps.resolved.nodeStatusReportFrequencyMs,
        recorder: this.recorder,
        log: this.log,
      });
      this.leaseController = new NodeLeaseController({
        api: deps.api,
        nodeName,
        clock: this.clock,
        leaseDurationSeconds: deps.config.nodeLeaseDurationSeconds,
        renewIntervalMs: deps.resolved.nodeLeaseRenewIntervalMs,
        log: this.log,
      });
    }
    this.runtimeHealth = new RuntimeHealthMonitor({
      runtime: deps.runtime,
      state: this.runtimeState,
      clock: this.clock,
      log: this.log,
      // Readiness flips are posted at once rather than at the next status tick.
      onChange: () => this.statusUpdater?.kick(),
    });
    this.health.add(
      'syncloop',
      syncLoopCheck(
        () => this.lastSyncLoopIteration,
        () => this.clock.now(),
        deps.resolved.syncFrequencyMs,
      ),
    );
    this.metrics.nodeName.set({ node: nodeName }, 1);
  }

  /** Everything the status setters need, gathered from the runtime and the managers. */
  async snapshot(): Promise<NodeStatusSnapshot> {
    const { deps } = this;
    const pressure = deps.pressure ?? noPressure;
    const [version, images] = await Promise.all([
      deps.runtime.version().catch(() => undefined),
      deps.runtime.listImages().catch(() => undefined),
    ]);
    this.lastSnapshot = {
      hostname: deps.identity.hostname,
      nodeIP: deps.nodeIP,
      machine: deps.machineInfo,
      maxPods: deps.config.maxPods,
      kubeReserved: deps.resolved.kubeReserved,
      systemReserved: deps.resolved.systemReserved,
      evictionHard: deps.resolved.evictionHard,
      kubeletVersion: KUBELET_VERSION,
      kubeletPort: this.kubeletPort,
      ...(version !== undefined ? { runtime: { type: deps.runtime.type(), version } } : {}),
      ...(images !== undefined ? { images } : {}),
      nodeStatusMaxImages: deps.config.nodeStatusMaxImages,
      runtimeErrors: this.runtimeState.runtimeErrors(),
      networkErrors: this.runtimeState.networkErrors(),
      pressure: {
        memory: pressure.isUnderMemoryPressure(),
        disk: pressure.isUnderDiskPressure(),
        pid: pressure.isUnderPIDPressure(),
      },
    };
    return this.lastSnapshot;
  }

  /** This node as admission sees it: labels and allocatable from the latest snapshot. */
  currentNode(): V1Node {
    const node = initialNode(this.deps.identity);
    if (this.lastSnapshot) setNodeStatus(node, this.lastSnapshot, new Date(this.clock.now()), () => {});
    return node;
  }

  /** Starts every loop and server; resolves after `signal` aborts and everything stopped. */
  async run(signal: AbortSignal): Promise<void> {
    const { deps } = this;
    this.recorder?.nodeEvent('Normal', 'Starting', 'Starting kubelet.');
    await this.runtimeHealth.check();
    await this.snapshot();
    const healthz = deps.config.healthzPort > 0 ? new HealthzServer(this.health) : undefined;
    const server = new KubeletServer({
      nodeName: deps.identity.nodeName,
      tls: await this.servingCert(),
      ...this.authn(),
      health: this.health,
      metrics: this.metrics,
      configz: () => deps.config,
      ...deps.servers,
      log: this.log,
    });
    try {
      if (healthz)
        this.listening.healthz = await healthz.start(deps.config.healthzBindAddress, deps.config.healthzPort);
      this.listening.kubelet = await server.start(deps.config.address, deps.config.port);
      this.kubeletPort = this.listening.kubelet.port;
      this.log.info('Started kubelet', { node: deps.identity.nodeName, port: this.kubeletPort });
      const loops: Promise<void>[] = [this.runtimeHealth.run(signal), this.syncLoop(signal)];
      const { registrar, statusUpdater } = this;
      if (registrar && statusUpdater) {
        loops.push(registrar.registerWithApiServer(signal).then(() => statusUpdater.run(signal)));
      }
      if (this.leaseController) loops.push(this.leaseController.run(signal));
      for (const source of deps.podSources ?? []) loops.push(source.run(signal, (u) => this.enqueue(u)));
      for (const m of deps.managers ?? []) loops.push(m.run(signal));
      const { pleg } = deps;
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
      this.log.info('Kubelet stopped', { node: deps.identity.nodeName });
    }
  }

  /** Pod config updates from the sources; the sync loop dispatches them in order. */
  enqueue(update: PodUpdate): void {
    this.pending.push(update);
    this.syncLoopWaker.kick();
  }

  /** The kubelet's main loop: pod updates, periodic syncs and housekeeping, paused while the runtime is unhealthy. */
  async syncLoop(signal: AbortSignal): Promise<void> {
    let backoff = RUNTIME_ERROR_BACKOFF_START_MS;
    let nextHousekeeping = this.clock.now() + HOUSEKEEPING_PERIOD_MS;
    while (!signal.aborted) {
      const errors = this.runtimeState.runtimeErrors();
      if (errors.length > 0) {
        this.log.v(2, 'Skipping pod synchronization', { err: errors.join(', ') });
        await sleep(this.clock, backoff, signal).catch(() => {});
        backoff = Math.min(backoff * 2, RUNTIME_ERROR_BACKOFF_MAX_MS);
        continue;
      }
      backoff = RUNTIME_ERROR_BACKOFF_START_MS;
      this.lastSyncLoopIteration = this.clock.now();
      const housekeeping = this.clock.now() >= nextHousekeeping;
      if (housekeeping) nextHousekeeping = this.clock.now() + HOUSEKEEPING_PERIOD_MS;
      try {
        await this.syncLoopIteration(housekeeping);
      } catch (e) {
        this.log.error('Sync loop iteration failed', { err: e });
      }
      await this.syncLoopWaker.wait(this.clock, SYNC_TICK_MS, signal);
    }
  }

  /** One pass: dispatch queued pod updates, then due syncs, then housekeeping when its period came round. */
  async syncLoopIteration(housekeeping: boolean): Promise<void> {
    const handler = this.deps.syncHandler;
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
    const due = handler.podsToSync(this.clock.now());
    if (due.length > 0) await handler.handlePodSyncs(due);
    const sourcesReady = (this.deps.podSources ?? []).every((s) => s.ready());
    if (housekeeping && sourcesReady) await handler.handlePodCleanups();
  }

  private async servingCert(): Promise<ServingCert> {
    const { config, identity, nodeIP, certDir } = this.deps;
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

  private authn(): { authenticator?: Authenticator; anonymousEnabled: boolean; authorizer: Authorizer } {
    const { config, resolved, kubeConfig } = this.deps;
    const now = () => this.clock.now();
    const authenticator =
      this.deps.authenticator ??
      (config.authentication.webhook.enabled && kubeConfig
        ? new TokenReviewAuthenticator(kubeConfig, resolved.authenticationCacheTtlMs, now)
        : undefined);
    let authorizer = this.deps.authorizer;
    if (!authorizer) {
      if (config.authorization.mode === 'AlwaysAllow') authorizer = alwaysAllow;
      else if (kubeConfig) {
        authorizer = new SubjectAccessReviewAuthorizer(
          kubeConfig,
          { authorizedMs: resolved.authorizedCacheTtlMs, unauthorizedMs: resolved.unauthorizedCacheTtlMs },
          now,
        );
      } else {
        authorizer = {
          authorize: async () => ({ allowed: false, reason: 'no API server to authorize against' }),
        };
      }
    }
    return {
      ...(authenticator ? { authenticator } : {}),
      anonymousEnabled: config.authentication.anonymous.enabled,
      authorizer,
    };
  }
}
