// The agent's container manager: the narrow part of the kubelet's ContainerManager that places
// pods in cgroups. With cgroupsPerQOS (the default) the QoS and pod container managers build
// `<cgroupRoot>/kubepods[/burstable|/besteffort]/pod<uid>`; without it every pod's parent is
// cgroupRoot, as before. The same object is `podCgroups` in the agent's wiring: the sandbox's
// cgroupParent, the pod cgroup made before the sandbox, re-applied after a resize, and removed
// by housekeeping once the pod no longer runs.
import type { V1Pod } from '@kubernetes/client-node';
import { ENFORCE_KUBE_RESERVED, ENFORCE_SYSTEM_RESERVED } from '../config/schema.js';
import { type Logger, silentLogger } from '../util/log.js';
import { type CgroupFs, hostCgroupFs } from './cgroup_fs.js';
import { type CgroupDriver, CgroupManager } from './cgroup_manager.js';
import { nodeAllocatableProblem } from './node_allocatable.js';
import {
  type NodeAllocatableOptions,
  NodeContainerManager,
  parseConfiguredCgroup,
} from './node_container_manager.js';
import { PodContainerManager } from './pod_container_manager.js';
import { QOSContainerManager } from './qos_container_manager.js';

export interface PodCgroups {
  /** The sandbox's LinuxPodSandboxConfig.cgroupParent (cgroupfs: a path; systemd: the slices). */
  cgroupParent(pod: V1Pod): string;
  /** Before the sandbox: makes the pod's cgroup (and refreshes the QoS tiers) unless it exists. */
  ensureExists(pod: V1Pod): Promise<void>;
  /** Re-applies the pod-level limits from the pod's spec (after an in-place resize). */
  update(pod: V1Pod): Promise<void>;
  /** Housekeeping: removes the cgroups of pods not in `keep` (none of their containers runs). */
  cleanupOrphaned(keep: ReadonlySet<string>): Promise<void>;
}

/** What the started container manager gives the agent: the pod cgroups, and kubepods for eviction. */
export interface ContainerManager extends PodCgroups {
  /** The kubepods memory cgroup's directory (allocatableMemory.available); none without kubepods. */
  kubepodsMemoryDir(): string | undefined;
}

export interface ContainerManagerOptions {
  cgroupsPerQOS: boolean;
  /** '' or '/' is the root of the hierarchy; a `.slice` name is read as systemd's. */
  cgroupRoot: string;
  cgroupDriver: CgroupDriver;
  podPidsLimit: number;
  /** Reservations, their enforcement, and the capacity they are taken from. */
  nodeAllocatable: NodeAllocatableOptions;
  /** Pods that count for the QoS tiers' shares (admitted, not terminal, not being killed). */
  activePods: () => V1Pod[];
  fs?: CgroupFs;
  /** Where the cgroup filesystems are mounted (tests). */
  mount?: string;
  log?: Logger;
}

/**
 * Starts the container manager (the kubelet's Start): it refuses reservations larger than the
 * capacity; with cgroupsPerQOS it checks the controllers, makes the QoS tiers and sets kubepods'
 * limits; then it enforces the system-reserved and kube-reserved cgroups when asked to.
 */
export async function startContainerManager(opts: ContainerManagerOptions): Promise<ContainerManager> {
  const na = opts.nodeAllocatable;
  const problem = nodeAllocatableProblem(na, na.capacity);
  if (problem) throw new Error(problem);
  const reservedCgroups =
    na.enforce.includes(ENFORCE_SYSTEM_RESERVED) || na.enforce.includes(ENFORCE_KUBE_RESERVED);
  if (!opts.cgroupsPerQOS && !reservedCgroups) return new FlatPodCgroups(opts.cgroupRoot);
  const log = opts.log ?? silentLogger;
  const cgroups = await CgroupManager.detect({
    driver: opts.cgroupDriver,
    fs: opts.fs ?? hostCgroupFs,
    ...(opts.mount ? { mount: opts.mount } : {}),
  });
  const node = new NodeContainerManager(cgroups, na, log);
  let podCgroups: ContainerManager = new FlatPodCgroups(opts.cgroupRoot);
  if (opts.cgroupsPerQOS) {
    const root = parseConfiguredCgroup(opts.cgroupRoot);
    if (root.length > 0 && !(await cgroups.exists(root)))
      throw new Error(`invalid configuration: cgroupRoot ${JSON.stringify(opts.cgroupRoot)} does not exist`);
    const qos = new QOSContainerManager(cgroups, root, opts.activePods);
    await qos.start();
    await node.enforceKubepods(qos.containers.guaranteed);
    const pods = new PodContainerManager(cgroups, qos, { podPidsLimit: opts.podPidsLimit });
    log.info('Container manager started', {
      cgroupVersion: cgroups.version,
      cgroupDriver: opts.cgroupDriver,
      kubepods: cgroups.name(qos.containers.guaranteed),
    });
    podCgroups = new QOSPodCgroups(cgroups, qos, pods, log);
  }
  await node.enforceReserved().catch((err) => {
    node.stop();
    throw err;
  });
  return podCgroups;
}

/** cgroupsPerQOS off: every pod's parent is cgroupRoot and the agent makes no cgroup. */
class FlatPodCgroups implements ContainerManager {
  constructor(private readonly cgroupRoot: string) {}
  cgroupParent(): string {
    return this.cgroupRoot;
  }
  async ensureExists(): Promise<void> {}
  async update(): Promise<void> {}
  async cleanupOrphaned(): Promise<void> {}
  kubepodsMemoryDir(): undefined {
    return undefined;
  }
}

class QOSPodCgroups implements ContainerManager {
  constructor(
    private readonly cgroups: CgroupManager,
    private readonly qos: QOSContainerManager,
    private readonly pods: PodContainerManager,
    private readonly log: Logger,
  ) {}

  cgroupParent(pod: V1Pod): string {
    return this.cgroups.name(this.pods.podCgroup(pod));
  }

  kubepodsMemoryDir(): string {
    return this.cgroups.dir(this.cgroups.version === 2 ? '' : 'memory', this.qos.containers.guaranteed);
  }

  async ensureExists(pod: V1Pod): Promise<void> {
    if (await this.pods.exists(pod)) return;
    // The new pod's requests count for the Burstable tier before it starts.
    await this.qos.update();
    await this.pods.create(pod);
  }

  update(pod: V1Pod): Promise<void> {
    return this.pods.update(pod);
  }

  async cleanupOrphaned(keep: ReadonlySet<string>): Promise<void> {
    let removed = false;
    for (const [uid, cgroup] of await this.pods.podsFromCgroups()) {
      if (keep.has(uid)) continue;
      await this.pods.destroy(cgroup).then(
        () => {
          removed = true;
          this.log.info('Removed the cgroup of a pod that no longer runs', { podUID: uid });
        },
        (err: Error) => this.log.error('Failed to remove an orphaned pod cgroup', { podUID: uid, err }),
      );
    }
    if (removed) await this.qos.update();
  }
}
