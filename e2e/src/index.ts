// The scenario suite the harness runs on every backend, in this order.
import type { Scenario } from '@kh/harness';
import { agentCrash } from './scenarios/agent-crash.js';
import { apiserverRestart } from './scenarios/apiserver-restart.js';
import { containers, downwardApi, kubeletEtcHosts, variableExpansion } from './scenarios/common-node.js';
import { configMap } from './scenarios/configmap.js';
import { containerRestart } from './scenarios/container-restart.js';
import { containerRestartPolicy } from './scenarios/container-restart-policy.js';
import { containerRuntime } from './scenarios/container-runtime.js';
import { criSurface } from './scenarios/cri-surface.js';
import { diskEviction } from './scenarios/disk-eviction.js';
import { diskFull } from './scenarios/disk-full.js';
import { diskSoftEviction } from './scenarios/disk-soft-eviction.js';
import { downwardApiVolume, projectedDownwardApiVolume } from './scenarios/downward-api-volume.js';
import { emptyDir } from './scenarios/empty-dir.js';
import { ephemeralContainers } from './scenarios/ephemeral-containers.js';
import { eviction } from './scenarios/eviction.js';
import { gc } from './scenarios/gc.js';
import { gcLayouts } from './scenarios/gc-layouts.js';
import { hostPath } from './scenarios/host-path.js';
import { imageCredentialPulls } from './scenarios/image-credential-pulls.js';
import { imageGcAge } from './scenarios/image-gc-age.js';
import { imageId } from './scenarios/image-id.js';
import { initContainer } from './scenarios/init-container.js';
import { inodeEviction } from './scenarios/inode-eviction.js';
import { kubectl } from './scenarios/kubectl.js';
import { kubelet } from './scenarios/kubelet.js';
import { kubeletRestart } from './scenarios/kubelet-restart.js';
import { lifecycleHook } from './scenarios/lifecycle-hook.js';
import { localStorageIsolation } from './scenarios/local-storage-isolation.js';
import { logRotation } from './scenarios/log-rotation.js';
import { memoryAllocatableEviction } from './scenarios/memory-allocatable-eviction.js';
import { mirrorPod } from './scenarios/mirror-pod.js';
import { nodeAllocatable } from './scenarios/node-allocatable.js';
import { nodeRegistration } from './scenarios/node-registration.js';
import { nodeShutdown } from './scenarios/node-shutdown.js';
import { partition } from './scenarios/partition.js';
import { pidEviction } from './scenarios/pid-eviction.js';
import { podConfig } from './scenarios/pod-config.js';
import { podLifecycle } from './scenarios/pod-lifecycle.js';
import { podResize } from './scenarios/pod-resize.js';
import { pods } from './scenarios/pods.js';
import { podsContainerManager } from './scenarios/pods-container-manager.js';
import { priorityDiskEviction, priorityMemoryEviction } from './scenarios/priority-eviction.js';
import { probes } from './scenarios/probes.js';
import { probesSidecar, probesUpstream } from './scenarios/probes-upstream.js';
import { runtimeCrashStorm } from './scenarios/runtime-crash-storm.js';
import { runtimeClass } from './scenarios/runtimeclass.js';
import { secrets } from './scenarios/secrets.js';
import { securityContext, securityContextUserns } from './scenarios/security-context.js';
import { startup } from './scenarios/startup.js';
import { statusReporting } from './scenarios/status-reporting.js';
import { subpath } from './scenarios/subpath.js';
import { subpathDisruptive } from './scenarios/subpath-disruptive.js';

export const scenarios: Scenario[] = [
  nodeRegistration,
  podLifecycle,
  pods,
  initContainer,
  podConfig,
  subpath,
  subpathDisruptive,
  emptyDir,
  hostPath,
  downwardApiVolume,
  configMap,
  secrets,
  projectedDownwardApiVolume,
  probes,
  probesUpstream,
  probesSidecar,
  statusReporting,
  gc,
  gcLayouts,
  imageGcAge,
  eviction,
  diskEviction,
  diskSoftEviction,
  localStorageIsolation,
  priorityMemoryEviction,
  priorityDiskEviction,
  pidEviction,
  inodeEviction,
  kubectl,
  kubelet,
  logRotation,
  criSurface,
  securityContext,
  securityContextUserns,
  containers,
  variableExpansion,
  kubeletEtcHosts,
  downwardApi,
  ephemeralContainers,
  lifecycleHook,
  containerRuntime,
  runtimeClass,
  containerRestartPolicy,
  imageCredentialPulls,
  imageId,
  mirrorPod,
  containerRestart,
  podsContainerManager,
  nodeAllocatable,
  memoryAllocatableEviction,
  podResize,
  runtimeCrashStorm,
  agentCrash,
  kubeletRestart,
  nodeShutdown,
  apiserverRestart,
  partition,
  diskFull,
  startup,
];
