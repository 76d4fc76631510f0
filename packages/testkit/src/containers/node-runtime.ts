/**
 * What a kind-style node needs to know about the container runtime it runs: a spec is data plus a
 * few commands, so NodeContainer never asks which runtime it is. The built-in specs are
 * containerd-runtime.ts and docker-runtime.ts; a backend package can write its own.
 */

/** A file placed in the node before it starts. */
export interface NodeFile {
  target: string;
  content: string;
  mode?: number;
}

/** What a spec can ask of a started node. */
export interface RuntimeNode {
  readonly name: string;
  /** The node's shared directory (its sockets), seen from the host. */
  readonly sharedDirOnHost: string;
  exec(cmd: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }>;
  /** Like exec; a non-zero exit throws with the command's output. */
  execOk(cmd: string[]): Promise<string>;
}

/** How the runtime is started, given where its socket goes and the sandbox image it uses. */
export interface RuntimeLaunch {
  /** Configuration files, written before the node starts. */
  files: NodeFile[];
  /** Environment of the node (e.g. CONTAINERD_ADDRESS, so `ctr` inside finds the runtime). */
  env: Record<string, string>;
  /** The runtime's argv; the node's init supervises it (kh-runtime stop|start). */
  command: string[];
}

export interface NodeRuntimeSpec {
  /** Shown in messages and on the node's kh.runtime label. */
  readonly name: string;
  /** File names in the node's shared directory: the runtime's own API socket and the CRI socket. */
  readonly sockets: { readonly runtime: string; readonly cri: string };
  /**
   * Shell commands run in the node, in order, before the runtime starts: install steps (`apt-get
   * install`), mounts, checks. A failing one ends the node with its output in the node's log.
   */
  readonly setup?: readonly string[];
  /**
   * The sandbox (pause) image, when the runtime itself needs it loaded at start (containerd's
   * sandbox_image); false when the CRI server in front of it brings its own (dockershim's flag).
   */
  readonly preloadsSandboxImage: boolean;
  launch(options: { runtimeSocket: string; sandboxImage: string | undefined }): RuntimeLaunch;
  /** Resolves once the runtime answers; throws what it said otherwise (polled until a timeout). */
  ready(node: RuntimeNode): Promise<void>;
  /** argv that imports a `docker save` tarball at `tarInNode` into the runtime's image store. */
  importImages(tarInNode: string): string[];
  /** argv that exits 0 when the runtime holds image `ref` (as the host engine names it). */
  hasImage(ref: string): string[];
}
