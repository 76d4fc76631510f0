// The runtime-backend seam. A backend owns one node: it starts the runtime, says how to reach its
// CRI endpoint, and tears everything down. Scenarios never look at which backend they run on, so
// adding a runtime to the matrix is one module that implements this interface and one line in
// registry.ts. See docs/adding-a-runtime-backend.md.

/** Where the node agent runs and how the harness drives processes there. */
export interface NodeHost {
  /** Runs a command to completion on the node (inside the node container, or on the host). */
  exec(cmd: string[], opts?: { timeoutMs?: number }): Promise<{ exitCode: number; output: string }>;
  /** Starts a long-running process on the node; the handle stops it. */
  spawn(cmd: string[], opts: { name: string; env?: Record<string, string> }): Promise<NodeProcess>;
  /** Paths on the node where the harness can place files (kubeconfig, KubeletConfiguration). */
  writeFile(path: string, content: string): Promise<void>;
  /** The node's memory limit in bytes, when the backend enforces one. */
  readonly memoryLimitBytes?: number;
  /** cgroup parent under which pods must be placed so the node's limits apply to them. */
  readonly cgroupParent?: string;
}

export interface NodeProcess {
  readonly name: string;
  /** Resolves when the process exits. */
  readonly exited: Promise<number | null>;
  /** The last lines the process wrote, for log excerpts in the report. */
  tail(lines: number): string[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface BackendContext {
  runId: string;
  /** Docker network name every container of the run joins (absent for host-only backends). */
  network?: string;
  /** The apiserver URL as the node sees it (a network alias for containers, loopback for the host). */
  nodeApiServerUrl(forHost: boolean): string;
  /** Progress output ("starting containerd node ..."). */
  progress(message: string): void;
  /** Memory limit to give the node, when a scenario needs pressure to be real. */
  memoryLimitBytes?: number;
}

export interface StartedBackend {
  /** CRI endpoint as the agent on the node reaches it (unix:///...). */
  nodeCriEndpoint: string;
  /** CRI endpoint as the harness process on the host reaches it, for assertions that count containers. */
  hostCriEndpoint: string;
  /** From CRI Version, e.g. containerd / 1.6.20. */
  runtimeName: string;
  runtimeVersion: string;
  /** Name the node registers under. */
  nodeName: string;
  host: NodeHost;
  /** True when the node runs inside a container the harness can reach by network alias. */
  inContainer: boolean;
  /** Stops the runtime inside the node (for the runtime-down scenario); startRuntime brings it back. */
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
