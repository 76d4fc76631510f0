// NewMainKubelet: the one place that builds the agent. It creates every manager around one
// runtime manager, in the order they need each other, and hands them to the Kubelet, which runs
// them. The managers take each other through interfaces (StatusManager, PodWorkers, PodSyncer,
// PodKiller, AdmitHandler, PressureSource...). Where two need each other, a third object that
// both hold comes first, so nothing is set after construction: the pod manager sits between the
// runtime manager and the pod workers, the pod cache between the PLEG and the pod workers, and
// the admit handlers between the pod lifecycle and the eviction manager.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { realClock, type TimerClock } from '@kh/apimachinery';
import type { CriClient } from '@kh/cri-api';
import {
  type Backoff,
  type ContainerGCPolicy,
  type CredentialVerificationPolicy,
  DEFAULT_CREDENTIAL_VERIFICATION_POLICY,
  DefaultRuntimeHelper,
  EventedPLEG,
  type EventRecorder,
  GenericPLEG,
  IMAGE_MANAGER_DIR,
  KubeGenericRuntimeManager,
  newCrashLoopBackoff,
  type Pleg,
  PodCache,
  type Runtime,
  type RuntimeManagerOptions,
} from '@kh/runtime-manager';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { AppArmorAdmitHandler, hostAppArmorEnabled } from './admission/apparmor.js';
import { AdmitHandlers } from './admission/handler.js';
import { PredicateAdmitHandler } from './admission/predicate.js';
import { AllocationManager } from './allocation/allocation_manager.js';
import { KubeNodeApi, type NodeApi } from './api/node_api.js';
import type { PodApi } from './api/pod_api.js';
import { ServiceLister } from './api/service_lister.js';
import { type PodCgroups, startContainerManager } from './cm/container_manager.js';
import { readMaxPID } from './cm/node_allocatable.js';
import type { NodeAllocatableOptions } from './cm/node_container_manager.js';
import { featureEnabled } from './config/feature_gates.js';
import type { AgentOptions } from './config/flags.js';
import type { ResolvedKubeletConfig } from './config/resolve.js';
import type { KubeletConfiguration } from './config/types.js';
import { KubeletEventRecorder } from './events/recorder.js';
import { CorrelatingEventSink, KubeEventSink } from './events/sink.js';
import { EvictionManager } from './eviction/manager.js';
import {
  type ContainerStatsClient,
  CriPodStatsSource,
  podCgroupProcessCount,
  podProcessCounter,
} from './eviction/pod_stats.js';
import { criImageFs, type ImageFsInfoClient, NodeSignalSource } from './eviction/signals.js';
import { evictionConfigFrom } from './eviction/thresholds.js';
import { DEFAULT_CONTAINER_GC_POLICY, GarbageCollector } from './gc/garbage_collector.js';
import { runtimeReclaimer } from './gc/reclaimer.js';
import { KUBELET_VERSION, Kubelet, type KubeletParts } from './kubelet.js';
import { ContainerLogManager } from './logs/container_log_manager.js';
import { KubeletMetrics } from './metrics/metrics.js';
import { KubeMirrorPodApi } from './mirror/mirror_client.js';
import { MirrorPodManager } from './mirror/mirror_pods.js';
import { NodeLeaseController } from './nodelease/controller.js';
import { NodeShutdownManager } from './nodeshutdown/manager.js';
import { connectLogind } from './nodeshutdown/systemd/logind_dbus.js';
import {
  goArch,
  type MachineInfo,
  machineCapacity,
  memoryCgroupDir,
  readMachineInfo,
} from './nodestatus/machine_info.js';
import { type NodeIdentity, nodeNameFor, resolveNodeIP } from './nodestatus/node.js';
import { NodeLister } from './nodestatus/node_lister.js';
import { PodCidrUpdater } from './nodestatus/pod_cidr.js';
import { NodeRegistrar } from './nodestatus/registration.js';
import { NodeStatusSnapshotter, type NodeStatusSnapshotterDeps } from './nodestatus/snapshot.js';
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
import { cgroupDriverFromCri } from './runtime/cgroup_driver.js';
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
import { ContainerCheckpoint } from './server/checkpoint.js';
import { ContainerLogs } from './server/container_logs.js';
import { runningPodsProvider } from './server/running_pods.js';
import { ContainerStreaming } from './server/streaming.js';
import { SummaryProvider } from './stats/summary.js';
import { ReasonCache } from './status/reason_cache.js';
import { PodStatusManager } from './status/status_manager.js';
import { SysctlAllowlist, safeSysctls } from './sysctl/allowlist.js';
import type { PodSource } from './types/pod_update.js';
import { noPressure, type PressureSource } from './types/pressure.js';
import { getKubeletMappings } from './userns/kubelet_mappings.js';
import { USER_NS_UNIT_LENGTH, UsernsManager } from './userns/userns_manager.js';
import { parseDuration } from './util/duration.js';
import { type Logger, silentLogger } from './util/log.js';
import { KubePodObjectsApi } from './volumemanager/objects_client.js';
import { OrphanedPodDirs } from './volumemanager/orphaned_pod_dirs.js';
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
 * Builds the agent in the kubelet's order: the node's identity and event recorder; the runtime
 * manager over CRI with the PLEG and the pod cache it feeds; the node side (status, lease,
 * health); with an API server, the pod side (status manager, prober, pod workers, lifecycle),
 * the pod sources, eviction and garbage collection, and the servers' providers; then the Kubelet.
 */
export async function newMainKubelet(given: MainKubeletDeps): Promise<Kubelet> {
  // The kubelet settles its cgroup driver with the runtime before it builds anything on it.
  const deps = featureEnabled(given.config, 'KubeletCgroupDriverFromCRI')
    ? {
        ...given,
        config: {
          ...given.config,
          cgroupDriver: await cgroupDriverFromCri(given.cri, {
            configured: given.config.cgroupDriver,
            log: given.log,
          }),
        },
      }
    : given;
  const node = nodeBasics(deps);
  // The runtime's handlers (from its Status) decide whether a hostUsers: false pod may run.
  const runtimeState = new RuntimeState(node.clock);
  const idsPerPod = deps.config.userNamespaces?.idsPerPod ?? USER_NS_UNIT_LENGTH;
  const userNamespaces = featureEnabled(deps.config, 'UserNamespacesSupport')
    ? await UsernsManager.create({
        podsDir: deps.runtimeManager?.podsDir ?? node.podsDir,
        maxPods: deps.config.maxPods,
        idsPerPod,
        pool: await getKubeletMappings({ idsPerPod }),
        runtimeHandlers: () => runtimeState.runtimeHandlers(),
      })
    : undefined;
  const machine = await readMachineInfo({ rootDir: deps.options.rootDir });
  // The container manager makes the QoS cgroups before any sandbox needs its pod's cgroup. Its
  // Burstable shares count the active pods, which the pod layer built below knows.
  let activePods: () => V1Pod[] = () => [];
  const podCgroups = await startContainerManager({
    cgroupsPerQOS: deps.config.cgroupsPerQOS,
    cgroupRoot: deps.config.cgroupRoot,
    cgroupDriver: deps.config.cgroupDriver,
    podPidsLimit: deps.config.podPidsLimit,
    nodeAllocatable: await nodeAllocatableOptions(deps, machine, node.recorder),
    activePods: () => activePods(),
    log: deps.log,
  });
  const admitHandlers = new AdmitHandlers();
  // Its node and active pods exist once the node side and the pod layer do; only pods use them.
  let kubelet: Kubelet | undefined;
  let layer: PodLayer | undefined;
  const allocation = featureEnabled(deps.config, 'InPlacePodVerticalScaling')
    ? new AllocationManager({
        rootDir: deps.options.rootDir,
        node: () => kubelet!.nodeStatus.currentNode(),
        activePods: () => layer!.lifecycle.activePods(),
        admit: admitHandlers,
        log: deps.log,
      })
    : undefined;
  const runtime = await newRuntime(deps, node, podCgroups, allocation, userNamespaces);
  const nodeSide = { ...(await newNodeSide(deps, node, runtime, machine)), runtimeState };
  // Standalone: no API server, so no pods, admission, eviction or mirrors either.
  const { kubeConfig } = deps;
  if (!kubeConfig || !node.recorder) return newKubelet(nodeSide);

  const api = new KubeNodeApi(kubeConfig);
  const podLayer = newPodLayer({
    api,
    pods: runtime.podManager,
    runtime: runtime.manager,
    podCache: runtime.podCache,
    backoff: newCrashLoopBackoff(node.clock),
    clock: node.clock,
    nodeIP: node.nodeIP,
    admit: admitHandlers,
    resyncIntervalMs: deps.resolved.syncFrequencyMs,
    probing: { runtime: runtime.manager, results: runtime.probeResults, metrics: deps.metrics },
    recorder: node.recorder,
    startup: runtime.startup,
    podCgroups,
    ...(userNamespaces ? { userNamespaces } : {}),
    containerRestartRules: featureEnabled(deps.config, 'ContainerRestartRules'),
    podDirs: new OrphanedPodDirs({
      podsDir: deps.runtimeManager?.podsDir ?? node.podsDir,
      helper: deps.runtimeManager?.runtimeHelper ?? runtime.helper,
      log: deps.log,
    }),
    log: deps.log,
    ...(allocation
      ? {
          resize: {
            allocation,
            refreshStatus: async (pod: V1Pod) => {
              const at = runtime.podCache.now();
              const status = await runtime.manager.getPodStatus(
                pod.metadata?.uid ?? '',
                pod.metadata?.name ?? '',
                pod.metadata?.namespace ?? '',
              );
              runtime.podCache.set(status, at);
              return status;
            },
            allocatedStatus: featureEnabled(deps.config, 'InPlacePodVerticalScalingAllocatedStatus'),
          },
        }
      : {}),
  });
  layer = podLayer;
  activePods = () => podLayer.lifecycle.activePods();
  const sources = newPodSources(deps, node, kubeConfig, runtime.startup, podLayer);
  const containerPolicy = DEFAULT_CONTAINER_GC_POLICY;
  const eviction = await newEvictionManager(deps, node, runtime, podLayer, {
    podCgroups,
    recorder: node.recorder,
    containerPolicy,
    allSourcesReady: sources.allReady,
    kubepodsMemoryDir: podCgroups.kubepodsMemoryDir(),
  });
  const gc = new GarbageCollector({
    runtime: runtime.manager,
    imageGC: runtime.manager.imageGC,
    containerPolicy,
    allSourcesReady: sources.allReady,
    recorder: node.recorder,
    metrics: deps.metrics,
    clock: node.clock,
    log: deps.log,
    ...(deps.options.imageGcPeriod ? { imageGCPeriodMs: parseDuration(deps.options.imageGcPeriod) } : {}),
  });
  // Graceful node shutdown (off unless shutdownGracePeriod or its by-priority form is set).
  const nodeShutdown = NodeShutdownManager.create(deps.config, {
    connect: () => connectLogind(),
    activePods: () => podLayer.lifecycle.activePods(),
    killer: podLayer.lifecycle,
    syncNodeStatus: () => kubelet?.syncNodeStatus(),
    recordNodeEvent: (type, reason, message) => node.recorder?.nodeEvent(type, reason, message),
    rootDir: deps.options.rootDir,
    clock: node.clock,
    log: deps.log,
  });
  const nodeLister = new NodeLister({
    kubeConfig,
    nodeName: node.hostname,
    clock: node.clock,
    log: deps.log,
  });
  kubelet = newKubelet({
    ...nodeSide,
    api,
    kubeConfig,
    nodeLister,
    recorder: node.recorder,
    pressure: eviction,
    ...(nodeShutdown ? { nodeShutdown } : {}),
    podSources: sources.podSources,
    syncHandler: podLayer.lifecycle,
    managers: [
      podLayer.statusManager,
      sources.mirrors,
      nodeLister,
      ...(runtime.services ? [runtime.services] : []),
      eviction,
      gc,
      new ContainerLogManager({
        cri: deps.cri,
        policy: {
          maxSizeBytes: Number(deps.resolved.containerLogMaxSizeBytes),
          maxFiles: deps.config.containerLogMaxFiles,
        },
        maxWorkers: deps.config.containerLogMaxWorkers,
        monitorIntervalMs: deps.resolved.containerLogMonitorIntervalMs,
        clock: node.clock,
        log: deps.log,
      }),
      new VolumeRefresher({
        volumes: runtime.helper.volumes,
        activePods: () => podLayer.lifecycle.activePods(),
        clock: node.clock,
        log: deps.log,
      }),
      ...(nodeShutdown ? [nodeShutdown] : []),
      // Its checkpoints are written in the background; stopping flushes them.
      ...(allocation ? [allocation] : []),
    ],
    servers: newServerProviders(deps, runtime, podLayer),
  });
  // Fit on this node first, then node pressure, sysctls, AppArmor and node shutdown; the first
  // rejection wins.
  admitHandlers.add(new PredicateAdmitHandler(() => kubelet.nodeStatus.currentNode()));
  admitHandlers.add(eviction);
  admitHandlers.add(new SysctlAllowlist([...safeSysctls(), ...deps.config.allowedUnsafeSysctls]));
  admitHandlers.add(new AppArmorAdmitHandler(hostAppArmorEnabled()));
  if (nodeShutdown) admitHandlers.add(nodeShutdown);
  return kubelet;
}

/** The reservations and their enforcement, over the capacity node status reports. */
async function nodeAllocatableOptions(
  { config, resolved }: MainKubeletDeps,
  machine: MachineInfo,
  recorder: KubeletEventRecorder | undefined,
): Promise<NodeAllocatableOptions> {
  const maxPID = await readMaxPID((path) => readFile(path, 'utf8').catch(() => undefined));
  return {
    enforce: config.enforceNodeAllocatable,
    kubeReserved: resolved.kubeReserved,
    systemReserved: resolved.systemReserved,
    evictionHard: resolved.evictionHard,
    kubeReservedCgroup: config.kubeReservedCgroup,
    systemReservedCgroup: config.systemReservedCgroup,
    capacity: machineCapacity(machine),
    ...(maxPID !== undefined ? { maxPID } : {}),
    ...(recorder ? { record: (type, reason, message) => recorder.nodeEvent(type, reason, message) } : {}),
  };
}

/** Who and where this node is, the clock everything runs on, and its event recorder. */
interface NodeBasics {
  hostname: string;
  nodeIP: string;
  podsDir: string;
  clock: TimerClock;
  /** Absent in standalone mode. */
  recorder: KubeletEventRecorder | undefined;
}

function nodeBasics({ options, kubeConfig, log }: MainKubeletDeps): NodeBasics {
  const clock = realClock;
  const hostname = nodeNameFor(options.hostnameOverride);
  // Repeated events become count/lastTimestamp patches of one Event (client-go's correlator).
  const recorder = kubeConfig
    ? new KubeletEventRecorder(new CorrelatingEventSink(new KubeEventSink(kubeConfig), clock), {
        host: hostname,
        clock,
        log,
      })
    : undefined;
  return {
    hostname,
    nodeIP: resolveNodeIP(options.nodeIp),
    podsDir: join(options.rootDir, 'pods'),
    clock,
    recorder,
  };
}

/**
 * The runtime manager, the objects it reads that the pod side writes, and the PLEG with the pod
 * cache it feeds.
 */
interface RuntimeParts {
  manager: KubeGenericRuntimeManager;
  /** Which pods are gone (container GC reads it); the pod layer writes it. */
  podManager: PodManager;
  /** Liveness and startup results (kills read them); the prober writes them. */
  probeResults: ProbeResultsStore;
  /** Each pod's start-up steps (GET /debug/startup): it sees the runtime manager's CRI calls. */
  startup: PodStartupTracker;
  /** Envs and volumes, which read config maps, secrets, tokens and the Node through the API. */
  helper: DefaultRuntimeHelper;
  /** The service informer the envs' service variables come from; with an API server only. */
  services: ServiceLister | undefined;
  sandboxImage: string | undefined;
  pleg: Pleg;
  podCache: PodCache;
  /** The stats provider: /stats/summary, /metrics/resource, and the memory a resize checks. */
  stats: SummaryProvider;
}

async function newRuntime(
  deps: MainKubeletDeps,
  node: NodeBasics,
  podCgroups: PodCgroups,
  allocation: AllocationManager | undefined,
  userNamespaces: UsernsManager | undefined,
): Promise<RuntimeParts> {
  const { options, config, resolved, cri, imageCri, kubeConfig, metrics, log } = deps;
  const { clock, hostname, podsDir, recorder } = node;
  const podManager = new PodManager();
  const probeResults = new ProbeResultsStore();
  const startup = new PodStartupTracker({ clock });
  const sandboxImage = options.podInfraContainerImage || (await runtimeSandboxImage(cri, log));
  const stats = new SummaryProvider({
    cri,
    ...(imageCri ? { imageCri } : {}),
    nodeName: hostname,
    rootDir: options.rootDir,
    clock,
    podAndContainerStatsFromCRI: featureEnabled(config, 'PodAndContainerStatsFromCRI'),
    log,
  });
  const services = kubeConfig ? new ServiceLister({ kubeConfig, clock, log }) : undefined;
  const helper = new DefaultRuntimeHelper(
    deps.runtimeManager?.podsDir ?? podsDir,
    (pod) => podCgroups.cgroupParent(pod),
    kubeConfig && services
      ? new ApiPodObjectSource({
          api: new KubePodObjectsApi(kubeConfig),
          services,
          nodeName: hostname,
          clock,
        })
      : undefined,
    undefined,
    undefined,
    { clusterDomain: config.clusterDomain },
  );
  const manager = await KubeGenericRuntimeManager.create({
    cri: startup.cri(cri),
    ...(imageCri ? { imageCri } : {}),
    clock,
    ...(recorder ? { recorder } : {}),
    probeResults: probeResults.forRuntime,
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
    security: { seccompDefault: config.seccompDefault, seccompProfileRoot: join(options.rootDir, 'seccomp') },
    runtimeHelper: helper,
    // A resize changes the pod cgroup before the containers grow and after they shrink.
    podCgroups,
    ...(allocation ? { actuatedResources: allocation } : {}),
    ...(userNamespaces ? { userNamespaces } : {}),
    podActionFeatures: { containerRestartRules: featureEnabled(config, 'ContainerRestartRules') },
    // A resize reads the pods' memory use before it lowers a limit.
    podStats: stats,
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
      ...(featureEnabled(config, 'KubeletEnsureSecretPulledImages')
        ? {
            ensureSecretPulledImages: {
              recordsDir: join(options.rootDir, IMAGE_MANAGER_DIR),
              // Validation admits only the policies' names, or "" for the default.
              policy: (config.imagePullCredentialsVerificationPolicy ||
                DEFAULT_CREDENTIAL_VERIFICATION_POLICY) as CredentialVerificationPolicy,
              allowlist: config.preloadedImagesVerificationAllowlist,
              onError: (message: string, err: unknown) => log.error(message, { err }),
            },
          }
        : {}),
    },
    ...deps.runtimeManager,
  }).catch((e: Error) => {
    throw new Error(`validate CRI endpoint ${config.containerRuntimeEndpoint}: ${e.message}`);
  });
  // The one owner of pod status: the PLEG writes it, the pod workers wait on it.
  const podCache = new PodCache(clock);
  const generic = new GenericPLEG(manager, {
    clock,
    cache: podCache,
    onError: (err) => log.error('PLEG relist failed', { err }),
    onRelist: (r) => metrics.observeRelist(r),
  });
  const pleg = featureEnabled(config, 'EventedPLEG')
    ? new EventedPLEG(cri, generic, {
        podStatusFromEvent: (ev) => manager.podStatusFromEvent(ev),
        onError: (err) => log.error('Evented PLEG: container events', { err }),
      })
    : generic;
  return {
    manager,
    podManager,
    probeResults,
    startup,
    helper,
    services,
    sandboxImage,
    pleg,
    podCache,
    stats,
  };
}

async function newNodeSide(
  deps: MainKubeletDeps,
  node: NodeBasics,
  runtime: RuntimeParts,
  machineInfo: MachineInfo,
): Promise<KubeletDeps> {
  const { options, config, resolved, metrics, log } = deps;
  return {
    config,
    resolved,
    identity: {
      nodeName: node.hostname,
      hostname: node.hostname,
      os: 'linux',
      arch: goArch(),
      nodeLabels: options.nodeLabels,
      taints: config.registerWithTaints,
    },
    nodeIP: node.nodeIP,
    machineInfo,
    certDir: options.certDir,
    runtime: runtime.manager,
    pleg: runtime.pleg,
    clock: node.clock,
    log,
    metrics,
  };
}

/**
 * The API server's pods and, with staticPodPath, the manifest files' (static pods get mirror
 * pods in the API; the sync loop never sees the mirrors themselves).
 */
function newPodSources(
  deps: MainKubeletDeps,
  node: NodeBasics,
  kubeConfig: KubeConfig,
  startup: PodStartupTracker,
  layer: PodLayer,
): { podSources: PodSource[]; mirrors: MirrorPodManager; allReady: () => boolean } {
  const { config, resolved, log } = deps;
  const { clock, hostname } = node;
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
  return { podSources, mirrors, allReady: () => podSources.every((s) => s.ready()) };
}

async function newEvictionManager(
  deps: MainKubeletDeps,
  node: NodeBasics,
  runtime: RuntimeParts,
  layer: PodLayer,
  opts: {
    podCgroups: PodCgroups;
    recorder: KubeletEventRecorder;
    containerPolicy: ContainerGCPolicy;
    allSourcesReady: () => boolean;
    /** The kubepods memory cgroup, whose limit is node allocatable (allocatableMemory.available). */
    kubepodsMemoryDir: string | undefined;
  },
): Promise<EvictionManager> {
  const { kubepodsMemoryDir } = opts;
  const { options, config, resolved, cri, imageCri, metrics, log } = deps;
  // ImageFsInfo belongs to the image service: ask its own endpoint when it has one.
  const statsCri: ImageFsInfoClient & ContainerStatsClient = imageCri
    ? {
        imageFsInfo: (req) => imageCri.imageFsInfo(req),
        listContainerStats: (req) => cri.listContainerStats(req),
      }
    : cri;
  // Without pod cgroups every pod shares one parent, which counts nothing of a single pod.
  const cgroupCounter = config.cgroupsPerQOS
    ? podCgroupProcessCount({
        pod: (uid) => runtime.podManager.getPod(uid),
        cgroup: (pod) => opts.podCgroups.cgroupParent(pod),
      })
    : undefined;
  const processCounter = podProcessCounter({
    podAndContainerStatsFromCRI: featureEnabled(config, 'PodAndContainerStatsFromCRI'),
    cri,
    ...(cgroupCounter ? { cgroup: cgroupCounter } : {}),
    log,
  });
  return new EvictionManager({
    config: evictionConfigFrom(config, resolved),
    signals: new NodeSignalSource({
      // In a node container the agent's memory cgroup is the node's, and it bounds the pods too.
      memoryCgroupDir: (await memoryCgroupDir())?.dir ?? '',
      ...(kubepodsMemoryDir ? { allocatableMemoryCgroupDir: kubepodsMemoryDir } : {}),
      rootDir: options.rootDir,
      imageFs: criImageFs(statsCri),
      log,
    }),
    podStats: new CriPodStatsSource(statsCri, {
      podsDir: node.podsDir,
      podLogsDir: config.podLogsDir,
      ...(processCounter ? { processCount: processCounter } : {}),
    }),
    activePods: () => layer.lifecycle.activePods(),
    killer: layer.lifecycle,
    podCleanedUp: (pod) => layer.lifecycle.podResourcesAreReclaimed(pod),
    recorder: opts.recorder,
    reclaimer: runtimeReclaimer({
      runtime: runtime.manager,
      containerPolicy: opts.containerPolicy,
      allSourcesReady: opts.allSourcesReady,
      ...(runtime.sandboxImage ? { sandboxImage: runtime.sandboxImage } : {}),
    }),
    metrics,
    clock: node.clock,
    log,
  });
}

/** What the kubelet server's endpoints read: pods, start-up records, logs, exec/attach/port-forward, stats. */
function newServerProviders(
  deps: MainKubeletDeps,
  runtime: RuntimeParts,
  layer: PodLayer,
): NonNullable<KubeletParts['servers']> {
  const { options, cri, log } = deps;
  const pods = runtime.podManager;
  return {
    pods,
    startup: runtime.startup,
    runningPods: runningPodsProvider(runtime.manager),
    logs: new ContainerLogs({
      getPods: () => pods.getPods(),
      getPodStatus: (uid) => layer.statusManager.getPodStatus(uid),
      runtime: runtime.manager,
    }),
    streaming: new ContainerStreaming({
      getPods: () => pods.getPods(),
      runtime: runtime.manager,
      cri,
      ...(options.runtimeStreamingAddress
        ? { runtimeStreamingAddress: options.runtimeStreamingAddress }
        : {}),
      log,
    }),
    stats: runtime.stats,
    ...(featureEnabled(deps.config, 'ContainerCheckpoint')
      ? {
          checkpoint: new ContainerCheckpoint({
            getPods: () => pods.getPods(),
            runtime: runtime.manager,
            cri,
            checkpointsDir: join(options.rootDir, 'checkpoints'),
          }),
        }
      : {}),
  };
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
  /** This node's Node as the API shows it: admission and the status sync read it, not a GET each. */
  nodeLister?: Pick<NodeLister, 'get'>;
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
  /** Shared with the user namespace manager, which reads the runtime's handlers; made here when absent. */
  runtimeState?: RuntimeState;
  /** The node shutdown manager, when graceful shutdown is on: Ready reads its status. */
  nodeShutdown?: NodeStatusSnapshotterDeps['nodeShutdown'];
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
  const runtimeState = deps.runtimeState ?? new RuntimeState(clock);
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
    ...(deps.nodeShutdown ? { nodeShutdown: deps.nodeShutdown } : {}),
    clock,
    apiNode: () => deps.nodeLister?.get(),
  });
  const snapshot = () => nodeStatus.snapshot();
  // A new pod CIDR may make the runtime's network ready: check it before the status is computed.
  const recheck = (): Promise<void> => runtimeHealth.check();
  const apiNode: KubeletParts['node'] = deps.api
    ? nodeParts(deps.api, deps, {
        nodeName,
        clock,
        log,
        snapshot,
        onPodCidrChange: recheck,
      })
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
    cachedNode: () => deps.nodeLister?.get(),
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
  /** The pods' cgroups (the container manager); `update(pod)` re-applies a pod's limits after a resize. */
  podCgroups?: PodCgroups;
}

/**
 * The pod layer around a runtime manager and its pod cache: the status manager, the prober, one
 * pod's sync, the pod workers and the lifecycle that dispatches to them, in that order.
 */
export function newPodLayer(opts: {
  api: PodApi;
  pods: PodManager;
  runtime: PodLifecycleDeps['runtime'] & PodSyncDeps['runtime'];
  /** The pod cache the PLEG feeds: the passes' statuses and the lifecycle's reads come from it. */
  podCache: PodCache;
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
  /** Pod cgroups: made before a pod's sandbox, removed by housekeeping once it no longer runs. */
  podCgroups?: PodCgroups;
  /** Housekeeping frees the user namespaces of pods that are gone. */
  userNamespaces?: UsernsManager;
  /** Housekeeping releases and removes the directories of pods that are gone. */
  podDirs?: OrphanedPodDirs;
  /** The ContainerRestartRules gate: containers' own restart rules decide the pod phase too. */
  containerRestartRules?: boolean;
  log?: Logger;
  /** In-place resize: the allocation manager and how a pass reads the runtime's status anew. */
  resize?: Omit<NonNullable<PodSyncDeps['resize']>, 'allocation'> & { allocation: AllocationManager };
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
        ...(opts.containerRestartRules ? { containerRestartRules: true } : {}),
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
    ...(opts.podCgroups ? { podCgroups: opts.podCgroups } : {}),
    ...(prober ? { prober, probes: prober.results.forStatus } : {}),
    ...(opts.resize ? { resize: opts.resize } : {}),
    ...(opts.containerRestartRules ? { containerRestartRules: true } : {}),
    ...(startup ? { startup } : {}),
  });
  const workers = new PodWorkerPool({
    syncer: sync,
    podCache: opts.podCache,
    syncStatuses: opts.pods,
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
    podCache: opts.podCache,
    clock: opts.clock,
    resyncIntervalMs: opts.resyncIntervalMs,
    ...(prober ? { prober } : {}),
    ...(opts.recorder ? { recorder: opts.recorder } : {}),
    ...(startup ? { startup } : {}),
    ...(opts.podCgroups ? { podCgroups: opts.podCgroups } : {}),
    ...(opts.userNamespaces ? { userNamespaces: opts.userNamespaces } : {}),
    ...(opts.podDirs ? { podDirs: opts.podDirs } : {}),
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.resize ? { allocation: opts.resize.allocation } : {}),
  });
  // Readiness goes straight into the cached status; liveness failures and startup changes need a
  // sync, where the runtime manager kills or releases the container.
  prober?.results.onUpdate((u) => {
    // The pod manager's copy carries the readiness gates' conditions as the API last showed them.
    if (u.type === 'readiness')
      statusManager.setContainerReadiness(
        opts.pods.getPod(u.pod.metadata?.uid ?? '') ?? u.pod,
        u.containerId,
        u.result === 'success',
      );
    else if (u.type === 'startup' || u.result === 'failure')
      lifecycle.handleProbeSync(u.pod.metadata?.uid ?? '');
  });
  return {
    lifecycle,
    workers,
    statusManager,
    ...(prober ? { prober } : {}),
    ...(opts.podCgroups ? { podCgroups: opts.podCgroups } : {}),
  };
}
