// Public surface of @kh/dockershim.

export { DockerStreamingRuntime, type StreamingUrls } from './core/container_streaming.js';
export { DEFAULT_CONFIG, type DockerShimConfig, type ShimContext } from './core/context.js';
export { KUBE_RUNTIME_API_VERSION, RUNTIME_NAME } from './core/status_version.js';
export {
  connectDocker,
  DEFAULT_DOCKER_ENDPOINT,
  DockerodeClient,
  dockerOptions,
} from './docker/api_client.js';
export type { DockerClient } from './docker/client.js';
export { FakeDockerClient } from './docker/fake.js';
export {
  DockerOperationMetrics,
  type DockerOperationStats,
  instrumentedDockerClient,
  LATENCY_BUCKETS_SECONDS,
} from './docker/instrumented.js';
export { type CriLogEntry, formatCriLogLine, parseCriLogLine } from './logs/copier.js';
export { ContainerType, KubernetesLabels, LabelKeys } from './model/labels.js';
export { makeContainerName, makeSandboxName, parseContainerName, parseSandboxName } from './model/naming.js';
export { enterRuntimeCgroup } from './runtime_cgroups.js';
export {
  DEFAULT_STREAMING_ADDRESS,
  DockerShim,
  type DockerShimOptions,
  dockerShimHandlers,
} from './service.js';
