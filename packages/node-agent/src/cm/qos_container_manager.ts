// The kubelet's QOSContainerManager (qos_container_manager_linux.go): under the node's pods
// cgroup (`kubepods`), Burstable and BestEffort pods each get a parent cgroup, and Guaranteed
// pods sit directly in `kubepods`. BestEffort always gets the minimum cpu.shares; Burstable gets
// the shares of the CPU its pods request, recomputed as pods come and go (each pod's first pass
// asks; the passes of a burst share the runs, as the kubelet's UpdateCgroups serializes them).
import type { V1Pod } from '@kubernetes/client-node';
import { podRequests } from '../admission/resources.js';
import { podQOSClass, type QOSClass } from '../types/qos.js';
import { Coalescer } from '../util/coalescer.js';
import type { CgroupManager } from './cgroup_manager.js';
import { type CgroupName, KUBEPODS_CGROUP } from './cgroup_name.js';
import { MIN_SHARES, milliCPUToShares, type ResourceConfig } from './helpers.js';

/** The QoS tiers' fixed names under kubepods. */
export const BURSTABLE_CGROUP = 'burstable';
export const BESTEFFORT_CGROUP = 'besteffort';

export interface QOSContainersInfo {
  guaranteed: CgroupName;
  burstable: CgroupName;
  bestEffort: CgroupName;
}

export function qosContainers(cgroupRoot: CgroupName): QOSContainersInfo {
  const kubepods = [...cgroupRoot, KUBEPODS_CGROUP];
  return {
    guaranteed: kubepods,
    burstable: [...kubepods, BURSTABLE_CGROUP],
    bestEffort: [...kubepods, BESTEFFORT_CGROUP],
  };
}

/** The QoS tiers' configs for these active pods (setCPUCgroupConfig). */
export function qosCgroupConfigs(activePods: V1Pod[]): {
  burstable: ResourceConfig;
  bestEffort: ResourceConfig;
} {
  let burstableMilliCPU = 0n;
  for (const pod of activePods)
    if (podQOSClass(pod) === 'Burstable') burstableMilliCPU += podRequests(pod).cpu ?? 0n;
  return {
    burstable: { cpuShares: milliCPUToShares(burstableMilliCPU) },
    bestEffort: { cpuShares: MIN_SHARES },
  };
}

export class QOSContainerManager {
  readonly containers: QOSContainersInfo;
  private readonly updates = new Coalescer(() => this.updateNow());

  constructor(
    private readonly cgroups: CgroupManager,
    cgroupRoot: CgroupName,
    private readonly activePods: () => V1Pod[],
  ) {
    this.containers = qosContainers(cgroupRoot);
  }

  /** The pods' parent cgroup for a QoS class. */
  parent(qos: QOSClass): CgroupName {
    if (qos === 'Guaranteed') return this.containers.guaranteed;
    return qos === 'Burstable' ? this.containers.burstable : this.containers.bestEffort;
  }

  /** Makes `kubepods` and the two tiers (Start); what exists already is kept and updated. */
  async start(): Promise<void> {
    await this.cgroups.validateControllers();
    await this.ensure(this.containers.guaranteed, {});
    await this.update();
  }

  /**
   * Re-applies the tiers' configs for the pods active now (UpdateCgroups); calls made while one
   * runs share the next run, which reads the active pods after them.
   */
  update(): Promise<void> {
    return this.updates.run();
  }

  private async updateNow(): Promise<void> {
    const configs = qosCgroupConfigs(this.activePods());
    await Promise.all([
      this.ensure(this.containers.burstable, configs.burstable),
      this.ensure(this.containers.bestEffort, configs.bestEffort),
    ]);
  }

  private async ensure(cgroup: CgroupName, config: ResourceConfig): Promise<void> {
    if (await this.cgroups.exists(cgroup)) await this.cgroups.update(cgroup, config);
    else await this.cgroups.create(cgroup, config);
  }
}
