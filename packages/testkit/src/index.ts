export { type CriVersion, criVersion } from './containers/cri-probe.js';
export { loadImagesIntoContainerd } from './containers/images-in-node.js';
export { KhContainer, type RawHostConfig } from './containers/kh-container.js';
export { khLabels, OWNER_LABEL, ROLE_LABEL, RUN_LABEL, runId } from './containers/labels.js';
export { type RemovedLeftovers, removeLeftovers } from './containers/leftovers.js';
export { StartedTestNetwork, TestNetwork } from './containers/network.js';
export {
  NODE_SHARED_DIR,
  type NodeRuntime,
  POD_SUBNET,
  PRIVATE_REGISTRY_HOST,
  REGISTRY_HOST,
  REGISTRY_HOSTS,
} from './containers/node-config.js';
export {
  type BindMount,
  defaultHostNodeBinary,
  NODE_BINARY_IN_NODE,
  NodeContainer,
  type NodeExecResult,
  StartedNodeContainer,
} from './containers/node-container.js';
export {
  RegistryContainer,
  type RegistryCredentials,
  StartedRegistryContainer,
} from './containers/registry-container.js';
export { type CriTools, criTools, DEFAULT_CRI_TOOLS_DIR } from './cri-tools.js';
export {
  HostContainerd,
  type HostContainerdNetwork,
  removeHostContainerdLeftovers,
  StartedHostContainerd,
} from './host-containerd.js';
export { debianMirror } from './images/apt-sources.js';
export { type EnsureImagesOptions, ensureImages, type ImageRefs, imageRefFor } from './images/ensure.js';
export { IMAGE_NAMES, type ImageName, isImageName, RECIPES } from './images/recipes.js';
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
