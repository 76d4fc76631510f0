// The runtime-backend seam. A backend owns one node: it starts the runtime, says how to reach its
// CRI endpoint, and tears everything down. The harness then runs our node agent on that node, so
// scenarios never look at which backend they run on: adding a runtime to the matrix is one module
// that implements RuntimeBackend and one line in registry.ts. See docs/adding-a-runtime-backend.md.
import type { ImageRefs, StartedTestNetwork } from '@kh/testkit';
import type { NodeHost } from '../node/host.js';

export interface BackendContext {
  /** Labels everything the backend creates (kh.run=<runId>), so leftovers can be found. */
  runId: string;
  /** The run's Docker network: the apiserver is `apiserver:6443` and the registry `registry:5000` on it. */
  network: StartedTestNetwork;
  /** Local image references (host engine), from @kh/testkit's ensureImages. */
  images: ImageRefs;
  /** Name the node gets (container name and hostname); the agent registers under it. */
  nodeName: string;
  /** Progress output ("starting containerd ..."). */
  progress(message: string): void;
}

export interface StartedBackend {
  /** CRI endpoint as the agent on the node reaches it (unix:///...). */
  nodeCriEndpoint: string;
  /** CRI endpoint as the harness process on the host reaches it, for assertions that count containers. */
  hostCriEndpoint: string;
  /** From CRI Version, e.g. containerd / 1.6.20~ds1. */
  runtimeName: string;
  runtimeVersion: string;
  /** Name the node registers under. */
  nodeName: string;
  /** The node's address on the run's network (the agent's --node-ip). */
  nodeIp: string;
  host: NodeHost;
  /** The node container's memory limit in bytes, when it has one. */
  memoryLimitBytes?: number;
  /** Cgroup under which pods must be placed so the node's limits apply (the agent's cgroupRoot). */
  cgroupParent?: string;
  /** The pod sandbox (pause) image as the runtime names it; image GC must never remove it. */
  sandboxImage: string;
  /**
   * Puts the sandbox image back if it was removed, so that one scenario's removal does not fail
   * every later cell on the node; true when it had to. Absent: the runtime needs no help.
   */
  restoreSandboxImage?(): Promise<boolean>;
  /** Makes the runtime unavailable to the agent (runtime-down scenario); startRuntime undoes it. */
  stopRuntime(): Promise<void>;
  startRuntime(): Promise<void>;
  /** Recent runtime log lines, for the report. */
  runtimeLogs(lines: number): Promise<string[]>;
  /** Removes the node and everything it created. Safe to call twice. */
  stop(): Promise<void>;
}

export interface RuntimeBackend {
  /** Matrix name: containerd, docker, fake. */
  readonly name: string;
  readonly description: string;
  /** Features a scenario may need; a scenario whose needs are missing is skipped with a reason. */
  readonly capabilities: ReadonlySet<BackendCapability>;
  start(ctx: BackendContext): Promise<StartedBackend>;
}

export type BackendCapability =
  | 'real-containers' // processes really run; probes hit real servers
  | 'memory-pressure' // node memory limit is enforced on pods
  | 'disk-pressure'
  | 'registry-pull' // the runtime pulls from the run's registry
  | 'runtime-restart'; // stopRuntime/startRuntime are supported
