// The runtime-backend seam. A backend owns one node: it starts the runtime, says how to reach its
// CRI endpoint, and tears everything down. The harness then runs our node agent on that node, so
// scenarios never look at which backend they run on. Backends come in modules (packages) that the
// harness loads by name (registry.ts); the public API is src/backend.ts (`@kh/harness/backend`).
// See docs/adding-a-runtime-backend.md.
import type { PartialKubeletConfiguration } from '@kh/node-agent';
import type { ImageName, ImageRefs, NodeImageInfo, NodeRelease, StartedTestNetwork } from '@kh/testkit';
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
  /**
   * Give the node a disk of its own (Scenario.ownDisk): its agent's root dir and its runtime's
   * root on one size-bounded filesystem of its own. A backend without one ignores it.
   */
  ownDisk?: boolean;
}

/**
 * What a backend hands the harness about the node it started: only what the backend alone knows.
 * The harness supplies the rest itself (the node's name, the runtime's CRI Version, the sandbox
 * image it built): see `StartedNode`.
 */
export interface StartedBackend {
  /** CRI endpoint as the agent on the node reaches it (unix:///...). */
  nodeCriEndpoint: string;
  /** CRI endpoint as the harness process on the host reaches it, for assertions that count containers. */
  hostCriEndpoint: string;
  /** The node's address on the run's network (the agent's --node-ip). */
  nodeIp: string;
  host: NodeHost;
  /** The node container's memory limit in bytes, when it has one. */
  memoryLimitBytes?: number;
  /** Cgroup under which pods must be placed so the node's limits apply (the agent's cgroupRoot). */
  cgroupParent?: string;
  /**
   * The pod sandbox (pause) image as the runtime names it, when it is not the run's own pause
   * image (`ctx.images.pause`); image GC must never remove it.
   */
  sandboxImage?: string;
  /**
   * Puts the sandbox image back if it was removed, so that one scenario's removal does not fail
   * every later cell on the node; true when it had to. Absent: the runtime needs no help.
   */
  restoreSandboxImage?(): Promise<boolean>;
  /**
   * Stopping, starting and crashing the runtime. Its presence is the `runtime-restart`
   * capability: scenarios that need it are skipped on a node without it.
   */
  restart?: RuntimeRestart;
  /**
   * Where the agent runs when the node is not a container of the run's network (the endpoint
   * backend: the host). Absent: inside the node, with the node's own filesystem.
   */
  agent?: AgentPlacement;
  /** The node image the node runs: its Debian release and runtime package versions. */
  nodeImage?: NodeImageInfo;
  /**
   * The runtime's goroutine stacks (SIGUSR1 to dockerd or containerd), for a runtime that answers
   * Version but hangs otherwise. Absent: the backend cannot dump them.
   */
  dumpRuntimeStacks?(): Promise<string[]>;
  /** Recent runtime log lines, for the report. */
  runtimeLogs(lines: number): Promise<string[]>;
  /** Removes the node and everything it created. Safe to call twice. */
  stop(): Promise<void>;
}

/** Making the runtime go away and come back, as `systemctl stop|start|kill` would on a real node. */
export interface RuntimeRestart {
  /** The runtime really exits; a CRI shim in front of it stays up and reports RuntimeReady=false. */
  stop(): Promise<void>;
  /** Starts it again; resolves once CRI answers. */
  start(): Promise<void>;
  /**
   * Crashes the runtime (SIGKILL; for docker, dockerd and the dockershim) and lets the node's
   * supervisor start it again, as systemd's Restart=always would; resolves once CRI answers again.
   */
  kill(): Promise<void>;
}

/** A started node as scenarios and the runner see it: the backend's facts and the harness's own. */
export interface StartedNode extends StartedBackend {
  /** The name the node registers under (the backend was given it in its context). */
  nodeName: string;
  /** From the runtime's own CRI Version, e.g. containerd / 1.7.24~ds1. */
  runtimeName: string;
  runtimeVersion: string;
  sandboxImage: string;
  /** What the harness noticed without failing the node (a version the column's name does not say). */
  warnings: string[];
}

/** How the agent runs on a node that it shares with other things (a host). */
export interface AgentPlacement {
  /** Directory under which the agent keeps its files (config, root dir, logs) instead of `/`. */
  dir: string;
  /** argv that runs the agent (args are its flags) on this host. */
  command(args: string[]): string[];
  /** The agent reaches the apiserver through the host's loopback port, not its network alias. */
  apiserver: 'host';
  /** KubeletConfiguration fields merged over the harness's (ports that must not collide, ...). */
  config?: PartialKubeletConfiguration;
}

export interface RuntimeBackend {
  /** Matrix name, with the runtime's version where it has one: containerd-1.7, docker-26, fake. */
  readonly name: string;
  /**
   * Other names `--runtime` takes for this column: the default release's columns answer to the
   * runtime's plain name (`containerd`, `docker`). Results always use `name`.
   */
  readonly aliases?: readonly string[];
  readonly description: string;
  /**
   * The Debian release of its node image. A run without `--runtime` takes the columns of the
   * default release and those without one (fake, endpoint); `--runtime all` takes every column.
   */
  readonly release?: NodeRelease;
  /** Local images (besides the workloads) its nodes are made from; the run builds them when missing. */
  readonly images?: readonly ImageName[];
  /**
   * Features a scenario may need; a scenario whose needs are missing is skipped with a reason.
   * `runtime-restart` is not listed here: a started node's `restart` is that capability.
   */
  readonly capabilities: ReadonlySet<StaticCapability>;
  /**
   * The runtime line the column's name promises (`1.7`, `26`); a node whose CRI Version says
   * otherwise gets a warning (a testing release moved under its image recipe).
   */
  readonly expectedVersion?: string;
  /**
   * How many of this backend's nodes a run may start side by side (default: as many as the run
   * asks for). A backend whose nodes would share one runtime says 1: two agents on one runtime
   * take each other's pods for orphans.
   */
  readonly maxNodes?: number;
  start(ctx: BackendContext): Promise<StartedBackend>;
}

/** What a backend declares before it starts anything. */
export type StaticCapability =
  | 'real-containers' // processes really run; probes hit real servers
  | 'memory-pressure' // node memory limit is enforced on pods
  | 'disk-pressure'
  | 'registry-pull' // the runtime pulls from the run's registry
  | 'runtime-handler' // the runtime has upstream's preconfigured RuntimeClass handler, test-handler
  | 'logind'; // the node runs a system D-Bus and logind: the agent's shutdown inhibitor lock, PrepareForShutdown

/** What a scenario may need: the static capabilities, and a started node's `restart`. */
export type BackendCapability = StaticCapability | 'runtime-restart';

/**
 * Thrown by start() when the runtime cannot run on this machine at all (a missing kernel feature,
 * an OCI runtime refusing the platform): the runner records every cell of the backend as skipped
 * with this message, never as passed. Anything else start() throws fails the cells.
 */
/** The local images the backends' nodes are made from: what a run or `up` builds besides the workloads. */
export const nodeImagesOf = (backends: readonly RuntimeBackend[]): ImageName[] =>
  backends.flatMap((b) => b.images ?? []);

export class BackendUnavailableError extends Error {
  override readonly name = 'BackendUnavailableError';
}
