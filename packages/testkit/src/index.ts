export {
  CNI_BIN_DIR,
  CNI_CONF_DIR,
  CNI_CONF_TEMPLATE,
  CNI_CONF_TEMPLATE_PATH,
  DOCKERSHIM_CNI_FLAGS,
} from './containers/cni.js';
export {
  type ContainerdHandler,
  type ContainerdRuntimeOptions,
  containerdRuntime,
  PRECONFIGURED_RUNTIME_HANDLER,
} from './containers/containerd-runtime.js';
export { type CriVersion, criVersion } from './containers/cri-probe.js';
export { dockerRuntime } from './containers/docker-runtime.js';
export { KhContainer, type RawHostConfig } from './containers/kh-container.js';
export { khLabels, OWNER_LABEL, ROLE_LABEL, RUN_LABEL, runId } from './containers/labels.js';
export { type RemovedLeftovers, removeLeftovers } from './containers/leftovers.js';
export { StartedTestNetwork, TestNetwork } from './containers/network.js';
export {
  KUBELET_SUBORDINATE_IDS,
  NODE_SHARED_DIR,
  POD_SUBNET,
  PRIVATE_REGISTRY_HOST,
  REGISTRY_HOST,
  REGISTRY_HOSTS,
  type SubordinateIds,
} from './containers/node-config.js';
export {
  type BindMount,
  type BuiltinNodeRuntime,
  defaultHostNodeBinary,
  NODE_BINARY_IN_NODE,
  NODE_RUNTIMES,
  NODE_VOLUMES,
  NodeContainer,
  type NodeExecResult,
  type NodeVolumeMount,
  nodeVolumeMounts,
  StartedNodeContainer,
} from './containers/node-container.js';
export type { NodeFile, NodeRuntimeSpec, RuntimeLaunch, RuntimeNode } from './containers/node-runtime.js';
export {
  RegistryContainer,
  type RegistryCredentials,
  StartedRegistryContainer,
} from './containers/registry-container.js';
export {
  CRI_TOOLS_CACHE,
  type CriTools,
  criTools,
  criToolsDir,
  DEFAULT_CRI_TOOLS_DIR,
  DEFAULT_CRI_TOOLS_VERSION,
} from './cri-tools.js';
export {
  claimHostPodNetwork,
  HostCniNetwork,
  type HostPodNetwork,
  hostPodConflist,
  releaseHostPodNetwork,
  removeHostCniLeftovers,
} from './host-cni.js';
export {
  HostContainerd,
  type HostContainerdNetwork,
  removeHostContainerdLeftovers,
  StartedHostContainerd,
} from './host-containerd.js';
export { debianMirror } from './images/apt-sources.js';
export { type EnsureImagesOptions, ensureImages, type ImageRefs, imageRefFor } from './images/ensure.js';
export { goProgramAt } from './images/go-program.js';
export { type NodeImageInfo, nodeImageInfo } from './images/node-image-info.js';
export {
  DEFAULT_IMAGES,
  DEFAULT_NODE_RELEASE,
  IMAGE_NAMES,
  type ImageName,
  isImageName,
  isNodeRelease,
  NODE_ELOGIND_PATH,
  NODE_RELEASES,
  type NodeImageName,
  type NodeRelease,
  nodeImageName,
  nodeReleaseFromEnv,
  RECIPES,
  TOOLCHAIN_IMAGES,
  WORKLOAD_IMAGES,
  type WorkloadImageName,
} from './images/recipes.js';
export {
  BENCH_ARGS_OK,
  BENCH_TURN,
  benchArgs,
  numberOption,
  parseOptions,
  UsageError,
} from './util/bench-args.js';
export { cleanUpOnInterrupt } from './util/interrupt.js';
export { withFileLock } from './util/lock.js';
export { MissingToolError } from './util/process.js';
export type { Progress } from './util/progress.js';
export {
  done,
  notYet,
  type Observation,
  type UntilOptions,
  UntilTimeoutError,
  until,
} from './util/until.js';
