// The kubelet feature gates this agent acts on, with kubelet 1.33's defaults. Other gate names in
// `featureGates` are accepted (a real node's config carries many) and have no effect here.
import type { KubeletConfiguration } from './types.js';

export const FEATURE_GATE_DEFAULTS = {
  /**
   * Alpha in 1.34 (KEP-5307): a container's own restartPolicy and restartPolicyRules decide
   * whether it restarts, and the pod phase follows.
   */
  ContainerRestartRules: false,
  /**
   * Alpha in 1.33 (KEP-3386): pod lifecycle events come from the runtime's CRI
   * GetContainerEvents stream instead of relisting every second; relisting takes over when the
   * stream keeps failing.
   */
  EventedPLEG: false,
  /** Beta in 1.33: the kubelet API's /checkpoint/{namespace}/{pod}/{container}. */
  ContainerCheckpoint: true,
  /** Beta in 1.33: pods are resized in place (pods/resize) through UpdateContainerResources. */
  InPlacePodVerticalScaling: true,
  /** Alpha in 1.33: containerStatuses[].allocatedResources is reported. */
  InPlacePodVerticalScalingAllocatedStatus: false,
  /** Beta in 1.33: pods are shut down in the node's logind inhibit delay (nodeshutdown/). */
  GracefulNodeShutdown: true,
  /** Beta in 1.33: shutdownGracePeriodByPodPriority groups the shutdown by pod priority. */
  GracefulNodeShutdownBasedOnPodPriority: true,
  /**
   * Alpha in 1.33 (KEP-2535): an image already on the node is used only by pods whose credentials
   * pulled it before, per imagePullCredentialsVerificationPolicy.
   */
  KubeletEnsureSecretPulledImages: false,
  /** Beta in 1.33: the cgroup driver comes from the runtime's RuntimeConfig. */
  KubeletCgroupDriverFromCRI: true,
  /** Alpha in 1.33: pod and container stats from ListPodSandboxStats instead of cAdvisor. */
  PodAndContainerStatsFromCRI: false,
  /** Beta in 1.33: hostUsers: false pods run in their own user namespace (userns/). */
  UserNamespacesSupport: true,
} as const;

export type FeatureGate = keyof typeof FEATURE_GATE_DEFAULTS;

export function featureEnabled(
  config: Pick<KubeletConfiguration, 'featureGates'>,
  gate: FeatureGate,
): boolean {
  return config.featureGates[gate] ?? FEATURE_GATE_DEFAULTS[gate];
}
