// `@kh/harness/backend`: the public API for writing a runtime backend as a package of its own.
// A backend module exports `backends: RuntimeBackend[]`; the harness loads it by name (kh.config.json,
// KH_BACKENDS or --backend). Everything a backend needs is here: the contract, a kind-style node from
// a runtime spec (kindBackend, or kindNode for more control), CRI helpers and the node's process
// host. See docs/adding-a-runtime-backend.md.
export {
  type BuiltinNodeRuntime,
  type ContainerdHandler,
  type ContainerdRuntimeOptions,
  containerdRuntime,
  DEFAULT_NODE_RELEASE,
  dockerRuntime,
  type NodeFile,
  type NodeRelease,
  type NodeRuntimeSpec,
  PRECONFIGURED_RUNTIME_HANDLER,
  type RuntimeLaunch,
  type RuntimeNode,
  type StartedNodeContainer,
} from '@kh/testkit';
export {
  kindNode,
  NODE_MEMORY_LIMIT_BYTES,
  nodeMemoryLimitBytes,
  OWN_DISK_BYTES,
  probePod,
  restoreSandboxImage,
  waitForCri,
} from './backends/cri.js';
export { type CriShim, type KindBackendDefinition, kindBackend } from './backends/kind.js';
export type { BackendModule } from './backends/registry.js';
export {
  aliasesFor,
  COLUMN_RELEASES,
  RELEASE_RUNTIMES,
  type ReleaseRuntimes,
  versionMatches,
} from './backends/releases.js';
export {
  type AgentPlacement,
  type BackendCapability,
  type BackendContext,
  BackendUnavailableError,
  type RuntimeBackend,
  type StartedBackend,
} from './backends/types.js';
export { ContainerHost } from './node/container-host.js';
export type { NodeHost, NodeProcess } from './node/host.js';
export { inContainer, projectMounts } from './node/project.js';
