// Public surface of @kh/node-agent.

export {
  type AdmitHandler,
  AdmitHandlers,
  type AdmitResult,
  type PodAdmitAttributes,
} from './admission/handler.js';
export { PredicateAdmitHandler } from './admission/predicate.js';
export { podRequests } from './admission/resources.js';
export {
  ApiError,
  isConflict,
  isNotFound,
  KubeNodeApi,
  loadKubeConfig,
  type NodeApi,
  toApiError,
} from './api/node_api.js';
export type { PodApi } from './api/pod_api.js';
export { newKubeletCommand, run, runKubelet } from './cli.js';
export { type PodCgroups, startContainerManager } from './cm/container_manager.js';
export { ConfigError } from './config/field_errors.js';
export { type AgentOptions, FLAGS, parseFlags } from './config/flags.js';
export {
  decodeKubeletConfiguration,
  type LoadedConfig,
  loadKubeletConfiguration,
  mergeKubeletConfiguration,
  type PartialKubeletConfiguration,
} from './config/load.js';
export {
  type EvictionThreshold,
  type ResolvedKubeletConfig,
  type ResourceList,
  resolveKubeletConfiguration,
} from './config/resolve.js';
export { EVICTION_SIGNALS } from './config/schema.js';
export { IMAGE_GC_PERIOD_FLAG, type TestOnlySettings, testOnlyFlags } from './config/test_only.js';
export { defaultKubeletConfiguration, type KubeletConfiguration, type Taint } from './config/types.js';
export { validateKubeletConfiguration } from './config/validation.js';
export {
  CombinedPrefix,
  type CorrelationResult,
  EventCorrelator,
} from './events/correlator.js';
export { type EventType, KubeletEventRecorder } from './events/recorder.js';
export { CorrelatingEventSink, type EventPatch, type EventSink, KubeEventSink } from './events/sink.js';
export { EvictionManager, type EvictionManagerDeps } from './eviction/manager.js';
export { evictionConfigFrom } from './eviction/thresholds.js';
export type { PodKiller, SignalObservation, SignalSource } from './eviction/types.js';
export { DEFAULT_CONTAINER_GC_POLICY, GarbageCollector } from './gc/garbage_collector.js';
export { KUBELET_VERSION, Kubelet, type KubeletParts } from './kubelet.js';
export {
  type KubeletDeps,
  type MainKubeletDeps,
  newKubelet,
  newMainKubelet,
  newPodLayer,
  type PodLayer,
} from './main_kubelet.js';
export { KubeletMetrics, runtimeOperationType } from './metrics/metrics.js';
export {
  isMirrorPod,
  isMirrorPodOf,
  KubeMirrorPodApi,
  type MirrorPodApi,
  mirrorPodFor,
  staticPodHash,
} from './mirror/mirror_client.js';
export { MirrorPodManager } from './mirror/mirror_pods.js';
export { NODE_LEASE_NAMESPACE, NodeLeaseController } from './nodelease/controller.js';
export { LOCAL_STORAGE_STATE_FILE } from './nodeshutdown/state.js';
export { LOGIND_CONF_DIR } from './nodeshutdown/systemd/logind.js';
export {
  LOGIND_INTERFACE,
  LOGIND_OBJECT,
  LOGIND_SERVICE,
  prepareForShutdownSignal,
} from './nodeshutdown/systemd/logind_dbus.js';
export { findCondition, NodeConditionType } from './nodestatus/conditions.js';
export { goArch, type MachineInfo, readMachineInfo } from './nodestatus/machine_info.js';
export { initialNode, type NodeIdentity, nodeNameFor, resolveNodeIP } from './nodestatus/node.js';
export { NodeRegistrar } from './nodestatus/registration.js';
export {
  defaultNodeStatusSetters,
  type NodeStatusSetter,
  type NodeStatusSnapshot,
  setNodeStatus,
} from './nodestatus/setters.js';
export { NodeStatusSnapshotter } from './nodestatus/snapshot.js';
export { fillInitialNodeStatus, NodeStatusUpdater } from './nodestatus/status_updater.js';
export {
  ApiServerPodSource,
  KubePodListWatch,
  type PodListWatch,
  ResourceExpiredError,
  type WatchEventType,
} from './podconfig/apiserver_source.js';
export { FileStaticPodSource, staticPodFromManifest } from './podconfig/file_source.js';
export { PodSnapshotDiff, podsDifferSemantically } from './podconfig/pod_config.js';
export { PodLifecycle, type PodLifecycleDeps } from './pods/pod_lifecycle.js';
export { PodManager } from './pods/pod_manager.js';
export { PodSync, type PodSyncDeps } from './pods/pod_sync.js';
export { POD_SYNC_RETRY_MS, PodWorkerPool } from './pods/pod_workers.js';
export { podPullSecrets } from './pods/pull_secrets.js';
export {
  type PodStartupList,
  type PodStartupRecord,
  STARTUP_STAGES,
  type StartupStage,
  startupStages,
} from './pods/startup_tracker.js';
export {
  CrashLoopBackOffError,
  type PodProber,
  type PodSyncer,
  type PodWorkers,
  type SyncHandler,
} from './pods/types.js';
export { ProberManager, type ProberManagerDeps } from './prober/manager.js';
export { ProbeResultsStore } from './prober/results.js';
export { connectImageService } from './runtime/image_service.js';
export type { NodeRuntime } from './runtime/node_runtime.js';
export { type HealthCheck, RuntimeHealthMonitor, RuntimeState } from './runtime_health.js';
export {
  type Authenticator,
  type Authorizer,
  alwaysAllow,
  StaticTokenAuthenticator,
  SubjectAccessReviewAuthorizer,
  TokenReviewAuthenticator,
  type UserInfo,
} from './server/auth.js';
export { generateSelfSignedCert, loadOrCreateServingCert } from './server/certs.js';
export {
  ContainerLogs,
  type ContainerLogsDeps,
  type LogOptions,
  LogRequestError,
  parseLogOptions,
} from './server/container_logs.js';
export { HealthChecker, HealthzServer } from './server/healthz.js';
export { runningPodsProvider, runningPodsToAPI } from './server/running_pods.js';
export {
  KubeletServer,
  type PodsProvider,
  type RunningPodsProvider,
  type StatsProvider,
} from './server/server.js';
export { type PodSummary, type Summary, SummaryProvider } from './stats/summary.js';
export {
  type GenerateStatusInput,
  generateAPIPodStatus,
  type ProbeResults,
  podPhase,
} from './status/generate.js';
export {
  type ContainerReason,
  MAX_REASON_CACHE_ENTRIES,
  ReasonCache,
  type ReasonLookup,
} from './status/reason_cache.js';
export { KUBELET_POD_CONDITIONS, mergePodStatus, PodStatusManager } from './status/status_manager.js';
export type { StatusManager } from './status/types.js';
export { bareContainerId } from './types/container_id.js';
export {
  ConfigHashAnnotation,
  ConfigMirrorAnnotation,
  ConfigSourceAnnotation,
  type PodOperation,
  type PodSource,
  type PodUpdate,
} from './types/pod_update.js';
export { noPressure, type PressureSource } from './types/pressure.js';
export { podQOSClass, type QOSClass } from './types/qos.js';
export { GETSUBIDS, KUBELET_USER, parseGetSubIdsOutput } from './userns/kubelet_mappings.js';
export { Waker } from './util/clock.js';
export { formatDuration, parseDuration } from './util/duration.js';
export { type Logger, silentLogger, stderrLogger } from './util/log.js';
export { parseQuantityOrPercent, Quantity } from './util/quantity.js';
