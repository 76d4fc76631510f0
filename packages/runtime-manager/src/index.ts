// @kh/runtime-manager: pods over CRI (the kubelet's kuberuntime), images, GC and PLEG.

export { emptyPodStatus, PodCache } from './container/cache.js';
export * from './container/runtime.js';
export * from './container/sync_result.js';
export {
  DefaultImageGCPolicy,
  type ImageGCDeps,
  ImageGCManager,
  ImageGCShortfallError,
  type ImageRecord,
  selectImagesToFree,
  validateImageGCPolicy,
} from './images/image_gc.js';
export { ImageManager, type ImageManagerOptions, type ImageService } from './images/image_manager.js';
export {
  applyDefaultImageTag,
  defaultPullPolicy,
  type PullPolicy,
  pullPolicyOf,
} from './images/image_ref.js';
export { buildKeyring, type Keyring, lookupAuth, type RegistryAuth } from './images/pull_secrets.js';
export { type ImagePuller, newImagePuller, type PullerOptions } from './images/puller.js';
export {
  allowlistPatternProblem,
  CREDENTIAL_VERIFICATION_POLICIES,
  type CredentialVerificationPolicy,
  DEFAULT_CREDENTIAL_VERIFICATION_POLICY,
} from './images/pullmanager/policy.js';
export { IMAGE_MANAGER_DIR } from './images/pullmanager/records.js';
export { TokenBucket } from './images/rate_limit.js';
export {
  type ContainerToKill,
  computePodActions,
  findContainerStatusByName,
  isRestartableInitContainer,
  type PodActionFeatures,
  type PodActions,
  podSandboxChanged,
  restartPolicyOf,
  shouldContainerBeRestarted,
} from './kuberuntime/compute_pod_actions.js';
export { gracePeriodSeconds, MinimumGracePeriodSeconds } from './kuberuntime/container.js';
export type { RuntimeHandlerResolver, UserNamespaceProvider } from './kuberuntime/context.js';
export { type EnvVar, expandVars, makeEnvironmentVariables } from './kuberuntime/env.js';
export { type ContainerGCReport, validateContainerGCPolicy } from './kuberuntime/gc.js';
export {
  type GCContainer,
  type GCContext,
  type GCSandbox,
  selectContainersToEvict,
  selectPodLogDirsToRemove,
  selectSandboxesToEvict,
} from './kuberuntime/gc_policy.js';
export { fnv32a, hashContainer } from './kuberuntime/hash.js';
export { podHostname } from './kuberuntime/hostname.js';
export type { EnsureSecretPulledImagesOptions, ImagePullOptions } from './kuberuntime/image.js';
export * from './kuberuntime/labels.js';
export { parseCriLog, podLogDir } from './kuberuntime/logs.js';
export {
  containerBackoffKey,
  KillPodError,
  KubeGenericRuntimeManager,
  type RuntimeManagerOptions,
} from './kuberuntime/manager.js';
export type { ObjectKind, PodObjectSource } from './kuberuntime/pod_objects.js';
export { runningPodFromStatus } from './kuberuntime/pod_status.js';
export {
  type ActuatedResources,
  type ContainersToUpdate,
  computePodResizeAction,
  doPodResizeAction,
  type PodCgroups,
  type PodMemoryUsage,
  type PodStatsProvider,
  type ResizableResource,
  resizableContainers,
  resourceChanged,
  withResource,
} from './kuberuntime/resize.js';
export { linuxResources } from './kuberuntime/resources.js';
export { containerShouldRestart } from './kuberuntime/restart_rules.js';
export {
  DefaultRuntimeHelper,
  type MountSpec,
  type RunContainerOptions,
  type RuntimeHelper,
} from './kuberuntime/runtime_helper.js';
export {
  AppArmorAnnotationPrefix,
  DefaultMaskedPaths,
  DefaultReadonlyPaths,
  normalizeSysctlName,
  podRequiresAppArmor,
  type SecurityOptions,
} from './kuberuntime/security_context.js';
export {
  isMasterService,
  MASTER_SERVICE_NAMESPACE,
  serviceEnvVars,
  servicesForPod,
} from './kuberuntime/service_env.js';
export { mountPoints } from './kuberuntime/subpath.js';
export { readTerminationMessage, tailLogMessage } from './kuberuntime/termination_message.js';
export { PodVolumes } from './kuberuntime/volumes.js';
export { DefaultGlobalCacheUpdatePeriodMs, EventedPLEG, type EventedPlegOptions } from './pleg/evented.js';
export {
  DefaultRelistPeriodMs,
  DefaultRelistThresholdMs,
  GenericPLEG,
  type GenericPlegOptions,
  generateEvents,
  type RelistTiming,
} from './pleg/generic.js';
export {
  type BackoffOptions,
  ExponentialBackoff,
  newCrashLoopBackoff,
  newImagePullBackoff,
} from './util/backoff.js';
export { httpGet } from './util/http_get.js';
