// Enforcement of node allocatable on cgroups (the kubelet's enforceNodeAllocatableCgroups):
// - `kubepods` always gets limits, so that its default cpu.shares do not starve pods: capacity's
//   without `pods` enforcement, node allocatable's (capacity − kubeReserved − systemReserved)
//   with it. Pods may already use more memory than the new limit (a node not drained, or a lower
//   reservation); the kubelet then keeps retrying until evictions bring the use down.
// - `system-reserved` / `kube-reserved` limit an existing cgroup to the reservation; a missing
//   cgroup or a failed write stops the agent, as it stops the kubelet.
import type { ResourceList } from '../config/resolve.js';
import { ENFORCE_KUBE_RESERVED, ENFORCE_PODS, ENFORCE_SYSTEM_RESERVED } from '../config/schema.js';
import type { Logger } from '../util/log.js';
import { Quantity } from '../util/quantity.js';
import type { CgroupManager } from './cgroup_manager.js';
import { type CgroupName, parseCgroupfsToCgroupName, parseSystemdToCgroupName } from './cgroup_name.js';
import {
  cgroupConfigFor,
  FAILED_NODE_ALLOCATABLE_ENFORCEMENT,
  NODE_ALLOCATABLE_ENFORCED,
  nodeAllocatableAbsolute,
  PID_RESOURCE,
  type Reservations,
} from './node_allocatable.js';

export type NodeEventRecorder = (type: 'Normal' | 'Warning', reason: string, message: string) => void;

export interface NodeAllocatableOptions extends Reservations {
  /** enforceNodeAllocatable (validated: pods, system-reserved, kube-reserved, or none alone). */
  enforce: readonly string[];
  kubeReservedCgroup: string;
  systemReservedCgroup: string;
  /** The machine's capacity (cpu, memory, ephemeral-storage) as node status reports it. */
  capacity: ResourceList;
  /** The kernel's task limit (readMaxPID): the `pid` capacity of kubepods; none when unknown. */
  maxPID?: bigint;
  /** Events about the node (NodeAllocatableEnforced, FailedNodeAllocatableEnforcement). */
  record?: NodeEventRecorder;
  /** How long to wait before retrying a failed kubepods update; the kubelet's is a minute. */
  retryMs?: number;
}

/** A cgroup named in the configuration: `.slice` names are systemd's, others cgroupfs paths. */
export function parseConfiguredCgroup(name: string): CgroupName {
  return name.endsWith('.slice') ? parseSystemdToCgroupName(name) : parseCgroupfsToCgroupName(name);
}

/** The kubepods limits: from node allocatable with `pods` enforcement, else from capacity. */
export function kubepodsLimits(opts: NodeAllocatableOptions): ResourceList {
  const internal: ResourceList = { ...opts.capacity };
  if (opts.maxPID !== undefined) internal[PID_RESOURCE] = Quantity.fromValue(opts.maxPID);
  return opts.enforce.includes(ENFORCE_PODS) ? nodeAllocatableAbsolute(internal, opts) : internal;
}

const DEFAULT_RETRY_MS = 60_000;

export class NodeContainerManager {
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly cgroups: CgroupManager,
    private readonly opts: NodeAllocatableOptions,
    private readonly log: Logger,
  ) {}

  /**
   * Sets kubepods' limits. The first attempt is awaited; when it fails, the agent starts anyway
   * and keeps retrying in the background (with a Warning event each time) until it succeeds.
   */
  async enforceKubepods(kubepods: CgroupName): Promise<void> {
    const config = cgroupConfigFor(kubepodsLimits(this.opts));
    const attempt = async (): Promise<boolean> => {
      try {
        await this.updateKubepods(kubepods, config.memory);
        await this.cgroups.update(kubepods, config);
      } catch (err) {
        const message = `Failed to update Node Allocatable Limits "${this.cgroups.name(kubepods)}": ${(err as Error).message}`;
        this.log.error(message);
        this.opts.record?.('Warning', FAILED_NODE_ALLOCATABLE_ENFORCEMENT, message);
        return false;
      }
      this.log.info('Enforced node allocatable on kubepods', {
        cgroup: this.cgroups.name(kubepods),
        // The log line is JSON, which has no bigint.
        cpuShares: config.cpuShares?.toString(),
        memory: config.memory?.toString(),
        pidsLimit: config.pidsLimit?.toString(),
      });
      this.opts.record?.('Normal', NODE_ALLOCATABLE_ENFORCED, 'Updated Node Allocatable limit across pods');
      return true;
    };
    if (await attempt()) return;
    const again = () => {
      this.retry = setTimeout(async () => {
        if (!(await attempt())) again();
      }, this.opts.retryMs ?? DEFAULT_RETRY_MS);
      this.retry.unref();
    };
    again();
  }

  /** Stops a pending kubepods retry. */
  stop(): void {
    clearTimeout(this.retry);
  }

  /**
   * cgroup v2 takes a memory.max below the current use and then reclaims or OOM-kills inside
   * kubepods; v1 refuses it with EBUSY. So on v2 the kubelet does not lower the limit below the use.
   */
  private async updateKubepods(kubepods: CgroupName, memory: bigint | undefined): Promise<void> {
    if (this.cgroups.version !== 2 || memory === undefined || memory <= 0n) return;
    const usage = await this.cgroups.memoryUsage(kubepods);
    if (usage === undefined) throw new Error('cannot read memory.current');
    if (usage > memory) throw new Error(`memory use ${usage} is above the new limit ${memory}`);
  }

  /** Limits the system-reserved and kube-reserved cgroups when enforced; throws when one cannot be. */
  async enforceReserved(): Promise<void> {
    const { enforce } = this.opts;
    if (enforce.includes(ENFORCE_SYSTEM_RESERVED))
      await this.enforceExisting('System', this.opts.systemReservedCgroup, this.opts.systemReserved);
    if (enforce.includes(ENFORCE_KUBE_RESERVED))
      await this.enforceExisting('Kube', this.opts.kubeReservedCgroup, this.opts.kubeReserved);
  }

  private async enforceExisting(who: 'System' | 'Kube', name: string, reserved: ResourceList): Promise<void> {
    const cgroup = parseConfiguredCgroup(name);
    try {
      if (!(await this.cgroups.exists(cgroup)))
        throw new Error(`"${this.cgroups.name(cgroup)}" cgroup does not exist`);
      await this.cgroups.update(cgroup, cgroupConfigFor(reserved));
    } catch (err) {
      const message = `Failed to enforce ${who} Reserved Cgroup Limits on "${name}": ${(err as Error).message}`;
      this.opts.record?.('Warning', FAILED_NODE_ALLOCATABLE_ENFORCEMENT, message);
      throw new Error(message);
    }
    this.log.info(`Enforced ${who.toLowerCase()} reserved on its cgroup`, { cgroup: name });
    this.opts.record?.(
      'Normal',
      NODE_ALLOCATABLE_ENFORCED,
      `Updated limits on ${who.toLowerCase()} reserved cgroup ${name}`,
    );
  }
}
