// KubeletConfiguration (kubelet.config.k8s.io/v1beta1) in its file form: durations stay Go
// strings and quantities stay Kubernetes strings, so /configz shows what the operator wrote.
// resolve.ts turns it into numbers for the code that runs.

export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const KUBELET_CONFIG_KIND = 'KubeletConfiguration';

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
}

export interface KubeletAuthentication {
  anonymous: { enabled: boolean };
  webhook: { enabled: boolean; cacheTTL: string };
  x509: { clientCAFile: string };
}

export interface KubeletAuthorization {
  mode: 'AlwaysAllow' | 'Webhook';
  webhook: { cacheAuthorizedTTL: string; cacheUnauthorizedTTL: string };
}

export interface KubeletConfiguration {
  apiVersion: string;
  kind: string;
  // servers
  address: string;
  port: number;
  readOnlyPort: number;
  healthzBindAddress: string;
  healthzPort: number;
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  authentication: KubeletAuthentication;
  authorization: KubeletAuthorization;
  // runtime
  containerRuntimeEndpoint: string;
  imageServiceEndpoint: string;
  runtimeRequestTimeout: string;
  /** With KubeletCgroupDriverFromCRI (on by default), the runtime's answer replaces it at start-up. */
  cgroupDriver: 'cgroupfs' | 'systemd';
  cgroupRoot: string;
  /** The kubepods / QoS / pod cgroup hierarchy under cgroupRoot (cm/); false puts every pod in cgroupRoot. */
  cgroupsPerQOS: boolean;
  /** Feature gates by name (config/feature_gates.ts has the ones the agent acts on). */
  featureGates: Record<string, boolean>;
  // node
  registerNode: boolean;
  registerWithTaints: Taint[];
  maxPods: number;
  podPidsLimit: number;
  nodeStatusUpdateFrequency: string;
  nodeStatusReportFrequency: string;
  nodeLeaseDurationSeconds: number;
  nodeStatusMaxImages: number;
  // pods
  syncFrequency: string;
  fileCheckFrequency: string;
  staticPodPath: string;
  clusterDomain: string;
  clusterDNS: string[];
  // eviction and reservations
  evictionHard: Record<string, string>;
  evictionSoft: Record<string, string>;
  evictionSoftGracePeriod: Record<string, string>;
  evictionPressureTransitionPeriod: string;
  evictionMaxPodGracePeriod: number;
  evictionMinimumReclaim: Record<string, string>;
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  /** What node allocatable limits: `pods` (the kubepods cgroup), `system-reserved`, `kube-reserved`, or `none`. */
  enforceNodeAllocatable: string[];
  /** The existing cgroup that `kube-reserved` enforcement limits to kubeReserved (absolute name). */
  kubeReservedCgroup: string;
  /** The existing cgroup that `system-reserved` enforcement limits to systemReserved (absolute name). */
  systemReservedCgroup: string;
  // images
  imageGCHighThresholdPercent: number;
  imageGCLowThresholdPercent: number;
  imageMinimumGCAge: string;
  imageMaximumGCAge: string;
  serializeImagePulls: boolean;
  maxParallelImagePulls: number | null;
  registryPullQPS: number;
  registryBurst: number;
  /**
   * KubeletEnsureSecretPulledImages: NeverVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages
   * or AlwaysVerify; "" (unset) means NeverVerifyPreloadedImages with the gate on.
   */
  imagePullCredentialsVerificationPolicy: string;
  /** Repositories ("registry/path") or prefixes ("registry/path/*") NeverVerifyAllowlistedImages exempts. */
  preloadedImagesVerificationAllowlist: string[];
  // logs
  podLogsDir: string;
  containerLogMaxSize: string;
  containerLogMaxFiles: number;
  /** Containers whose logs are rotated at once (the kubelet's default 1). */
  containerLogMaxWorkers: number;
  /** How often container logs are checked for rotation (the kubelet's default 10s, at least 3s). */
  containerLogMonitorInterval: string;
  // node shutdown (nodeshutdown/)
  /** How long the node delays its shutdown for pods; 0s switches graceful shutdown off. */
  shutdownGracePeriod: string;
  /** The part of shutdownGracePeriod kept for critical pods, which stop last. */
  shutdownGracePeriodCriticalPods: string;
  /** Grace periods by pod priority; replaces the two fields above (GracefulNodeShutdownBasedOnPodPriority). */
  shutdownGracePeriodByPodPriority: ShutdownGracePeriodByPodPriority[];
  // security
  /** RuntimeDefault seccomp for every container that names no profile. */
  seccompDefault: boolean;
  /** Unsafe sysctls (names or `prefix*`) pods may set besides the safe ones. */
  allowedUnsafeSysctls: string[];
  /** User namespaces of hostUsers: false pods; unset, each pod gets 65536 IDs (USER_NS_UNIT_LENGTH). */
  userNamespaces?: UserNamespaces;
}

/** Pods of at least `priority` (and under the next entry's) get this many seconds to stop. */
export interface ShutdownGracePeriodByPodPriority {
  priority: number;
  shutdownGracePeriodSeconds: number;
}

export interface UserNamespaces {
  /** IDs mapped per pod: a multiple of 65536, at most 2^32-1. */
  idsPerPod?: number;
}

/** The kubelet's v1beta1 defaults for every field this agent reads. */
export function defaultKubeletConfiguration(): KubeletConfiguration {
  return {
    apiVersion: KUBELET_CONFIG_API_VERSION,
    kind: KUBELET_CONFIG_KIND,
    address: '0.0.0.0',
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    tlsCertFile: '',
    tlsPrivateKeyFile: '',
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true, cacheTTL: '2m0s' },
      x509: { clientCAFile: '' },
    },
    authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' } },
    containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
    imageServiceEndpoint: '',
    runtimeRequestTimeout: '2m0s',
    cgroupDriver: 'cgroupfs',
    cgroupRoot: '',
    cgroupsPerQOS: true,
    featureGates: {},
    registerNode: true,
    registerWithTaints: [],
    maxPods: 110,
    podPidsLimit: -1,
    nodeStatusUpdateFrequency: '10s',
    nodeStatusReportFrequency: '5m0s',
    nodeLeaseDurationSeconds: 40,
    nodeStatusMaxImages: 50,
    syncFrequency: '1m0s',
    fileCheckFrequency: '20s',
    staticPodPath: '',
    clusterDomain: '',
    clusterDNS: [],
    evictionHard: {
      'memory.available': '100Mi',
      'nodefs.available': '10%',
      'nodefs.inodesFree': '5%',
      'imagefs.available': '15%',
    },
    evictionSoft: {},
    evictionSoftGracePeriod: {},
    evictionPressureTransitionPeriod: '5m0s',
    evictionMaxPodGracePeriod: 0,
    evictionMinimumReclaim: {},
    kubeReserved: {},
    systemReserved: {},
    enforceNodeAllocatable: ['pods'],
    kubeReservedCgroup: '',
    systemReservedCgroup: '',
    imageGCHighThresholdPercent: 85,
    imageGCLowThresholdPercent: 80,
    imageMinimumGCAge: '2m0s',
    imageMaximumGCAge: '0s',
    serializeImagePulls: true,
    maxParallelImagePulls: null,
    registryPullQPS: 5,
    registryBurst: 10,
    imagePullCredentialsVerificationPolicy: '',
    preloadedImagesVerificationAllowlist: [],
    podLogsDir: '/var/log/pods',
    containerLogMaxSize: '10Mi',
    containerLogMaxFiles: 5,
    containerLogMaxWorkers: 1,
    containerLogMonitorInterval: '10s',
    shutdownGracePeriod: '0s',
    shutdownGracePeriodCriticalPods: '0s',
    shutdownGracePeriodByPodPriority: [],
    seccompDefault: false,
    allowedUnsafeSysctls: [],
  };
}
