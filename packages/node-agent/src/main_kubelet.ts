// NewMainKubelet: the one place that builds the agent. It creates every manager around one
// runtime manager, in the order they need each other, and hands them to the Kubelet, which runs
// them. The managers take each other through interfaces (StatusManager, PodWorkers, PodSyncer,
// PodKiller, AdmitHandler, PressureSource...). Where two need each other, a third object that
// both hold comes first, so nothing is set after construction: the pod manager sits between the
// runtime manager and the pod workers, and the admit handlers between the pod lifecycle and the
// eviction manager.
import { join } from 'node:path';
import { realClock, type TimerClock } from '@kh/apimachinery';
import type { CriClient } from '@kh/cri-api';
import {
  type Backoff,
  DefaultRelistPeriodMs,
  DefaultRuntimeHelper,
  type EventRecorder,
  GenericPLEG,
  KubeGenericRuntimeManager,
  newCrashLoopBackoff,
  type Pleg,
  type Runtime,
  type RuntimeManagerOptions,
} from '@kh/runtime-manager';
import type { KubeConfig } from '@kubernetes/client-node';
import { AdmitHandlers } from './admission/handler.js';
import { PredicateAdmitHandler } from './admission/predicate.js';
import { KubeNodeApi, type NodeApi } from './api/node_api.js';
import type { PodApi } from './api/pod_api.js';
import type { AgentOptions } from './config/flags.js';
import type { ResolvedKubeletConfig } from './config/resolve.js';
import type { KubeletConfiguration } from './config/types.js';
import { KubeletEventRecorder } from './events/recorder.js';
import { CorrelatingEventSink, KubeEventSink } from './events/sink.js';
import { EvictionManager } from './eviction/manager.js';
import { type ContainerStatsClient, CriPodStatsSource } from './eviction/pod_stats.js';
import { criImageFs, type ImageFsInfoClient, NodeSignalSource } from './eviction/signals.js';
import { evictionConfigFrom } from './eviction/thresholds.js';
import { DEFAULT_CONTAINER_GC_POLICY, GarbageCollector } from './gc/garbage_collector.js';
import { runtimeReclaimer } from './gc/reclaimer.js';
import { KUBELET_VERSION, Kubelet, type KubeletParts } from './kubelet.js';
import { KubeletMetrics } from './metrics/metrics.js';
import { KubeMirrorPodApi } from './mirror/mirror_client.js';
import { MirrorPodManager } from './mirror/mirror_pods.js';
import { NodeLeaseController } from './nodelease/controller.js';
import { goArch, type MachineInfo, memoryCgroupDir, readMachineInfo } from './nodestatus/machine_info.js';
import { type NodeIdentity, nodeNameFor, resolveNodeIP } from './nodestatus/node.js';
import { PodCidrUpdater } from './nodestatus/pod_cidr.js';
import { NodeRegistrar } from './nodestatus/registration.js';
import { NodeStatusSnapshotter } from './nodestatus/snapshot.js';
import {
  fillInitialNodeStatus,
  NodeStatusUpdater,
  type NodeStatusUpdaterOptions,
} from './nodestatus/status_updater.js';
import { ApiServerPodSource, KubePodListWatch } from './podconfig/apiserver_source.js';
import { FileStaticPodSource } from './podconfig/file_source.js';
import { PodLifecycle, type PodLifecycleDeps } from './pods/pod_lifecycle.js';
import { PodManager } from './pods/pod_manager.js';
import { PodSync, type PodSyncDeps } from './pods/pod_sync.js';
import { PodWorkerPool } from './pods/pod_workers.js';
import { podPullSecrets } from './pods/pull_secrets.js';
import { PodStartupTracker } from './pods/startup_tracker.js';
import type { SyncHandler } from './pods/types.js';
import { ProberManager, type ProberManagerDeps } from './prober/manager.js';
import { ProbeResultsStore } from './prober/results.js';
import type { NodeRuntime } from './runtime/node_runtime.js';
import { runtimeSandboxImage } from './runtime/sandbox_image.js';
import { RuntimeHealthMonitor, RuntimeState } from './runtime_health.js';
import { KubeRuntimeClassApi } from './runtimeclass/client.js';
import { RuntimeClassManager } from './runtimeclass/manager.js';
import {
  type Authenticator,
  type Authorizer,
  alwaysAllow,
  SubjectAccessReviewAuthorizer,
  TokenReviewAuthenticator,
} from './server/auth.js';
import { ContainerLogs } from './server/container_logs.js';
import { runningPodsProvider } from './server/running_pods.js';
import { ContainerStreaming } from './server/streaming.js';
import { SummaryProvider } from './stats/summary.js';
import { ReasonCache } from './status/reason_cache.js';
import { PodStatusManager } from './status/status_manager.js';
import type { PodSource } from './types/pod_update.js';
import { noPressure, type PressureSource } from './types/pressure.js';
import { type Logger, silentLogger } from './util/log.js';
import { KubePodObjectsApi } from './volumemanager/objects_client.js';
import { ApiPodObjectSource } from './volumemanager/pod_objects.js';
import { VolumeRefresher } from './volumemanager/volume_refresher.js';

export interface MainKubeletDeps {
  options: AgentOptions;
  config: KubeletConfiguration;
  resolved: ResolvedKubeletConfig;
  cri: CriClient;
  /** The image service's own client (--image-service-endpoint); else `cri` serves images too. */
  imageCri?: CriClient;
  /** Absent in standalone mode: no registration, status, lease, events or pods. */
  kubeConfig?: KubeConfig;
  metrics: KubeletMetrics;
  log: Logger;
  /** For an agent outside its node (tests, the benchmark): path mapping, sandbox image, shared dirs. */
  runtimeManager?: Partial<RuntimeManagerOptions>;
}

/**
 * Builds the runtime manager over CRI, the PLEG, the pod layer with probes, admission, eviction,
 * garbage collection, mirror pods, the pod sources and the servers' providers, then the Kubelet.
 */
export async function newMainKubelet(deps: MainKubeletDeps): Promise<Kubelet> {
  const { options, config, resolved, cri, imageCri, kubeConfig, metrics, log } = deps;
  const clock = realClock;
  const hostname = nodeNameFor(options.hostnameOverride);
  const nodeIP = resolveNodeIP(options.nodeIp);
  const podsDir = join(options.rootDir, 'pods');
  // Repeated events become count/lastTimestamp patches of one Event (client-go's correlator).
  const recorder = kubeConfig
    ? new KubeletEventRecorder(new CorrelatingEventSink(new KubeEventSink(kubeConfig), clock), {
        host: hostname,
        clock,
        log,
      })
    : undefined;
  // The runtime manager reads both: which pods are gone (for container GC), and the liveness and
  // startup results (for kills). Both exist before it; the pod layer writes them.
  const podManager = new PodManager();
  const probeResults = new ProbeResultsStore();
  // Each pod's start-up steps (GET /debug/startup): it sees the runtime manager's CRI calls.
  const startup = new PodStartupTracker({ clock });
  const sandboxImage = options.podInfraContainerImage || (await runtimeSandboxImage(cri, log));
  // Envs and volumes read config maps, secrets, tokens and the Node through the API, per pod.
  const runtimeHelper = new DefaultRuntimeHelper(
    deps.runtimeManager?.podsDir ?? podsDir,
    deps.runtimeManager?.cgroupParent ?? config.cgroupRoot,
    kubeConfig
      ? new ApiPodObjectSource({ api: new KubePodObjectsApi(kubeConfig), nodeName: hostname, clock })
      : undefined,
  );
  const runtime = await KubeGenericRuntimeManager.create({
    cri: startup.cri(cri),
    ...(imageCri ? { imageCri } : {}),
    clock,
    ...(recorder ? { recorder } : {}),
    probeResults: probeResults.forRuntime,
    // Like the kubelet's PLEG cache: the PLEG's relist keeps it honest.
    podStatusCacheTtlMs: 2 * DefaultRelistPeriodMs,
    podStateProvider: podManager,
    ...(sandboxImage ? { podSandboxImage: sandboxImage } : {}),
    imageGCPolicy: {
      highThresholdPercent: config.imageGCHighThresholdPercent,
      lowThresholdPercent: config.imageGCLowThresholdPercent,
      minAgeMs: resolved.imageMinimumGCAgeMs,
      maxAgeMs: resolved.imageMaximumGCAgeMs,
    },
    podsDir,
    podLogsRootDir: config.podLogsDir,
    cgroupParent: config.cgroupRoot,
    runtimeHelper,
    // Without an API server there are no RuntimeClasses: every pod runs on the default handler.
    ...(kubeConfig
      ? { runtimeClassManager: new RuntimeClassManager({ api: new KubeRuntimeClassApi(kubeConfig), clock }) }
      : {}),
    images: {
      serializeImagePulls: config.serializeImagePulls,
      ...(config.maxParallelImagePulls !== null
        ? { maxParallelImagePulls: config.maxParallelImagePulls }
        : {}),
      registryPullQPS: config.registryPullQPS,
      registryBurst: config.registryBurst,
    },
    ...deps.runtimeManager,
  }).catch((e: Error) => {
    throw new Error(`validate CRI endpoint ${config.containerRuntimeEndpoint}: ${e.message}`);
  });
  const pleg = new GenericPLEG(runtime, {
    clock,
    onError: (err) => log.error('PLEG relist failed', { err }),
  });
  const nodeSide = {
    config,
    resolved,
    identity: {
      nodeName: hostname,
      hostname,
      os: 'linux',
      arch: goArch(),
      nodeLabels: options.nodeLabels,
      taints: config.registerWithTaints,
    },
    nodeIP,
    machineInfo: await readMachineInfo({ rootDir: options.rootDir }),
    certDir: options.certDir,
    runtime,
    pleg,
    clock,
    log,
    metrics,
  } satisfies KubeletDeps;
  // Standalone: no API server, so no pods, admission, eviction or mirrors either.
  if (!kubeConfig || !recorder) return newKubelet(nodeSide);

  const api = new KubeNodeApi(kubeConfig);
  const admitHandlers = new AdmitHandlers();
  const layer = newPodLayer({
    api,
    pods: podManager,
    runtime,
    backoff: newCrashLoopBackoff(clock),
    clock,
    nodeIP,
    admit: admitHandlers,
    resyncIntervalMs: resolved.syncFrequencyMs,
    probing: { runtime, results: probeResults, metrics },
    recorder,
    startup,
    log,
  });
  // Static pods get mirror pods in the API; the sync loop never sees the mirrors themselves.
  const mirrors = new MirrorPodManager({
    api: new KubeMirrorPodApi(kubeConfig),
    nodeName: hostname,
    clock,
    // Post the static pod's status to a new mirror now rather than at the next status pass.
    onMirrorCreated: () => layer.statusManager.kick(),
    log,
  });
  const sources: PodSource[] = [
    new ApiServerPodSource({ lw: new KubePodListWatch(kubeConfig, hostname), clock, log }),
  ];
  if (config.staticPodPath) {
    sources.push(
      new FileStaticPodSource({
        path: config.staticPodPath,
        nodeName: hostname,
        clock,
        periodMs: resolved.fileCheckFrequencyMs,
        log,
      }),
    );
  }
  const podSources = sources.map((s) => startup.source(mirrors.wrap(s)));
  // True once every source delivered its first list: only then may GC treat a pod as gone.
  const allSourcesReady = () => podSources.every((s) => s.ready());
  const containerPolicy = DEFAULT_CONTAINER_GC_POLICY;
  // ImageFsInfo belongs to the image service: ask its own endpoint when it has one.
  const statsCri: ImageFsInfoClient & ContainerStatsClient = imageCri
    ? {
        imageFsInfo: (req) => imageCri.imageFsInfo(req),
        listContainerStats: (req) => cri.listContainerStats(req),
      }
    : cri;
  const eviction = new EvictionManager({
    config: evictionConfigFrom(config, resolved),
    signals: new NodeSignalSource({
      // In a node container the agent's memory cgroup is the node's, and it bounds the pods too.
      memoryCgroupDir: (await memoryCgroupDir())?.dir ?? '',
      rootDir: options.rootDir,
      imageFs: criImageFs(statsCri),
      log,
    }),
    podStats: new CriPodStatsSource(statsCri, { podsDir, podLogsDir: config.podLogsDir }),
    activePods: () => layer.lifecycle.activePods(),
    killer: layer.lifecycle,
    podCleanedUp: (pod) => layer.lifecycle.podResourcesAreReclaimed(pod),
    recorder,
    reclaimer: runtimeReclaimer({
      runtime,
      containerPolicy,
      allSourcesReady,
      ...(sandboxImage ? { sandboxImage } : {}),
    }),
    metrics,
    clock,
    log,
  });
  const gc = new GarbageCollector({
    runtime,
    imageGC: runtime.imageGC,
    containerPolicy,
    allSourcesReady,
    recorder,
    metrics,
    clock,
    log,
  });
  const kubelet = newKubelet({
    ...nodeSide,
    api,
    kubeConfig,
    recorder,
    pressure: eviction,
    podSources,
    syncHandler: layer.lifecycle,
    managers: [
      layer.statusManager,
      mirrors,
      eviction,
      gc,
      new VolumeRefresher({
        volumes: runtimeHelper.volumes,
        activePods: () => layer.lifecycle.activePods(),
        clock,
        log,
      }),
    ],
    servers: {
      pods: podManager,
      startup,
      runningPods: runningPodsProvider(runtime),
      logs: new ContainerLogs({
        getPods: () => podManager.getPods(),
        getPodStatus: (uid) => layer.statusManager.getPodStatus(uid),
        runtime,
      }),
      streaming: new ContainerStreaming({
        getPods: () => podManager.getPods(),
        runtime,
        cri,
        ...(options.runtimeStreamingAddress
          ? { runtimeStreamingAddress: options.runtimeStreamingAddress }
          : {}),
        log,
      }),
      stats: new SummaryProvider({
        cri,
        ...(imageCri ? { imageCri } : {}),
        nodeName: hostname,
        rootDir: options.rootDir,
        clock,
      }),
    },
  });
  // Fit on this node first, then node pressure; the first rejection wins.
  admitHandlers.add(new PredicateAdmitHandler(() => kubelet.nodeStatus.currentNode()));
  admitHandlers.add(eviction);
  return kubelet;
}

/** What the Kubelet's node side is built from; the pod side comes in through its interfaces. */
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
  /** Loops that run and stop with the Kubelet (status manager, mirror pods, eviction, GC). */
  managers?: { run(signal: AbortSignal): Promise<void> }[];
  /** Overrides the authenticator/authorizer derived from the configuration. */
  authenticator?: Authenticator;
  authorizer?: Authorizer;
  servers?: KubeletParts['servers'];
}

/**
 * The Kubelet's node side: runtime health and state, the status snapshot, and with an API server
 * the recorder, registration, node status and lease; the pod side is passed through.
 */
export function newKubelet(deps: KubeletDeps): Kubelet {
  const clock = deps.clock ?? realClock;
  const log = deps.log ?? silentLogger;
  const metrics = deps.metrics ?? new KubeletMetrics();
  const nodeName = deps.identity.nodeName;
  const runtimeState = new RuntimeState(clock);
  const { pleg } = deps;
  if (pleg) runtimeState.addHealthCheck('PLEG', () => pleg.healthy());
  const nodeStatus = new NodeStatusSnapshotter({
    config: deps.config,
    resolved: deps.resolved,
    identity: deps.identity,
    nodeIP: deps.nodeIP,
    machineInfo: deps.machineInfo,
    kubeletVersion: KUBELET_VERSION,
    runtime: deps.runtime,
    runtimeState,
    pressure: deps.pressure ?? noPressure,
    clock,
  });
  const snapshot = () => nodeStatus.snapshot();
  // A new pod CIDR may make the runtime's network ready: check it before the status is computed.
  const recheck = (): Promise<void> => runtimeHealth.check();
  const apiNode: KubeletParts['node'] = deps.api
    ? nodeParts(deps.api, deps, { nodeName, clock, log, snapshot, onPodCidrChange: recheck })
    : undefined;
  const runtimeHealth: RuntimeHealthMonitor = new RuntimeHealthMonitor({
    runtime: deps.runtime,
    state: runtimeState,
    clock,
    log,
    // Readiness flips are posted at once rather than at the next status tick.
    ...(apiNode ? { onChange: () => apiNode.statusUpdater.kick() } : {}),
  });
  metrics.nodeName.set({ node: nodeName }, 1);
  return new Kubelet({
    config: deps.config,
    resolved: deps.resolved,
    identity: deps.identity,
    nodeIP: deps.nodeIP,
    certDir: deps.certDir,
    clock,
    log,
    metrics,
    runtimeState,
    runtimeHealth,
    nodeStatus,
    ...(apiNode ? { node: apiNode } : {}),
    auth: serverAuth(deps, clock),
    podSources: deps.podSources ?? [],
    ...(deps.syncHandler ? { syncHandler: deps.syncHandler } : {}),
    ...(pleg ? { pleg } : {}),
    managers: deps.managers ?? [],
    ...(deps.servers ? { servers: deps.servers } : {}),
  });
}

/** Registration, node status, the lease and the event recorder, for a node with an API server. */
function nodeParts(
  api: NodeApi,
  deps: KubeletDeps,
  ctx: {
    nodeName: string;
    clock: TimerClock;
    log: Logger;
    snapshot: NodeStatusUpdaterOptions['snapshot'];
    onPodCidrChange: () => Promise<void>;
  },
): NonNullable<KubeletParts['node']> {
  const { nodeName, clock, log, snapshot } = ctx;
  const recorder = deps.recorder ?? new KubeletEventRecorder(api, { host: nodeName, clock, log });
  const registrar = new NodeRegistrar({
    api,
    identity: deps.identity,
    clock,
    create: deps.config.registerNode,
    recorder,
    log,
    initialStatus: (node) => fillInitialNodeStatus(node, { nodeName, clock, snapshot, recorder }),
  });
  const statusUpdater = new NodeStatusUpdater({
    api,
    nodeName,
    clock,
    registrar,
    snapshot,
    updateFrequencyMs: deps.resolved.nodeStatusUpdateFrequencyMs,
    reportFrequencyMs: deps.resolved.nodeStatusReportFrequencyMs,
    recorder,
    log,
    podCidr: new PodCidrUpdater(deps.runtime, log),
    onPodCidrChange: ctx.onPodCidrChange,
  });
  const leaseController = new NodeLeaseController({
    api,
    nodeName,
    clock,
    leaseDurationSeconds: deps.config.nodeLeaseDurationSeconds,
    renewIntervalMs: deps.resolved.nodeLeaseRenewIntervalMs,
    log,
  });
  return { registrar, statusUpdater, leaseController, recorder };
}

/** The kubelet server's authentication and authorization, from the configuration unless given. */
function serverAuth(deps: KubeletDeps, clock: TimerClock): KubeletParts['auth'] {
  const { config, resolved, kubeConfig } = deps;
  const now = () => clock.now();
  const authenticator =
    deps.authenticator ??
    (config.authentication.webhook.enabled && kubeConfig
      ? new TokenReviewAuthenticator(kubeConfig, resolved.authenticationCacheTtlMs, now)
      : undefined);
  let authorizer = deps.authorizer;
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

const noEvents: EventRecorder = { event: () => {} };

export interface PodLayer {
  lifecycle: PodLifecycle;
  workers: PodWorkerPool;
  statusManager: PodStatusManager;
  prober?: ProberManager;
}

/**
 * The pod layer around a runtime manager: the status manager, the prober, one pod's sync, the
 * pod workers and the lifecycle that dispatches to them, in that order.
 */
export function newPodLayer(opts: {
  api: PodApi;
  pods: PodManager;
  runtime: PodLifecycleDeps['runtime'] & PodSyncDeps['runtime'];
  backoff: Backoff;
  clock: TimerClock;
  nodeIP: string;
  admit: PodLifecycleDeps['admit'];
  resyncIntervalMs: number;
  /**
   * Runs the pods' probes. `results` is the store the runtime manager was given as its
   * probeResults, so liveness and startup failures reach its kill decisions.
   */
  probing?: {
    runtime: Pick<Runtime, 'runInContainer' | 'type'>;
    results: ProbeResultsStore;
    metrics?: ProberManagerDeps['metrics'];
    runner?: ProberManagerDeps['runner'];
  };
  recorder?: KubeletEventRecorder;
  /** Told each pod's start-up steps; sees the status patches. */
  startup?: PodStartupTracker;
  log?: Logger;
}): PodLayer {
  const { probing, startup } = opts;
  const statusManager = new PodStatusManager({
    api: startup ? startup.podApi(opts.api) : opts.api,
    clock: opts.clock,
    apiPod: (uid) => opts.pods.getPod(uid),
    ...(opts.log ? { log: opts.log } : {}),
  });
  const prober = probing
    ? new ProberManager({
        ...probing,
        recorder: opts.recorder ?? noEvents,
        podStatus: (uid) => statusManager.getPodStatus(uid),
        clock: opts.clock,
        ...(opts.log ? { log: opts.log } : {}),
      })
    : undefined;
  const reasons = new ReasonCache();
  const sync = new PodSync({
    runtime: opts.runtime,
    statusManager,
    pods: opts.pods,
    backoff: opts.backoff,
    reasons,
    clock: opts.clock,
    nodeIP: opts.nodeIP,
    pullSecrets: (pod) => podPullSecrets(opts.api, pod, opts.log),
    ...(prober ? { prober, probes: prober.results.forStatus } : {}),
  });
  const workers = new PodWorkerPool({
    syncer: sync,
    terminated: opts.pods,
    clock: opts.clock,
    ...(startup ? { startup } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  const lifecycle = new PodLifecycle({
    pods: opts.pods,
    workers,
    statusManager,
    reasons,
    admit: opts.admit,
    runtime: opts.runtime,
    clock: opts.clock,
    resyncIntervalMs: opts.resyncIntervalMs,
    ...(prober ? { prober } : {}),
    ...(opts.recorder ? { recorder: opts.recorder } : {}),
    ...(startup ? { startup } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  // Readiness goes straight into the cached status; liveness failures and startup changes need a
  // sync, where the runtime manager kills or releases the container.
  prober?.results.onUpdate((u) => {
    if (u.type === 'readiness')
      statusManager.setContainerReadiness(u.pod, u.containerId, u.result === 'success');
    else if (u.type === 'startup' || u.result === 'failure')
      lifecycle.handleProbeSync(u.pod.metadata?.uid ?? '');
  });
  return { lifecycle, workers, statusManager, ...(prober ? { prober } : {}) };
}
