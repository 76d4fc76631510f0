// Public surface of @kh/dockershim.

export { enterRuntimeCgroup } from './runtime_cgroups.js';
export { DockerStreamingRuntime, type StreamingUrls } from './shim/container_streaming.js';
export { DEFAULT_CONFIG, type DockerShimConfig, type ShimContext } from './shim/context.js';
export { connectDocker, DEFAULT_DOCKER_ENDPOINT, dockerOptions } from './shim/docker_endpoint.js';
export { ContainerType, KubernetesLabels, LabelKeys } from './shim/labels.js';
export { type CriLogEntry, formatCriLogLine, parseCriLogLine } from './shim/logs.js';
export { makeContainerName, makeSandboxName, parseContainerName, parseSandboxName } from './shim/naming.js';
export {
  DEFAULT_STREAMING_ADDRESS,
  DockerShim,
  type DockerShimOptions,
  dockerShimHandlers,
} from './shim/service.js';
export { KUBE_RUNTIME_API_VERSION, RUNTIME_NAME } from './shim/status_version.js';
