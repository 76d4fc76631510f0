// The kubelet's PodContainerManager (pod_container_manager_linux.go): each pod gets the cgroup
// `pod<uid>` under its QoS tier, made with ResourceConfigForPod's limits (plus podPidsLimit)
// before the sandbox is created, and removed once none of the pod runs any more.
import type { V1Pod } from '@kubernetes/client-node';
import { podQOSClass } from '../types/qos.js';
import type { CgroupManager } from './cgroup_manager.js';
import type { CgroupName } from './cgroup_name.js';
import { parseSystemdToCgroupName } from './cgroup_name.js';
import { type PodResourceOptions, type ResourceConfig, resourceConfigForPod } from './helpers.js';
import type { QOSContainerManager } from './qos_container_manager.js';

const POD_CGROUP_PREFIX = 'pod';

export interface PodContainerManagerOptions {
  /** podPidsLimit: the pod cgroup's pids.max when > 0 (-1, the default, leaves it unlimited). */
  podPidsLimit: number;
  resources?: PodResourceOptions;
}

export class PodContainerManager {
  constructor(
    private readonly cgroups: CgroupManager,
    private readonly qos: QOSContainerManager,
    private readonly opts: PodContainerManagerOptions,
  ) {}

  /** The pod's cgroup (GetPodContainerName): `pod<uid>` under its QoS class's parent. */
  podCgroup(pod: V1Pod): CgroupName {
    return [...this.qos.parent(podQOSClass(pod)), `${POD_CGROUP_PREFIX}${pod.metadata?.uid ?? ''}`];
  }

  /** What the pod cgroup is set to: ResourceConfigForPod plus the node's podPidsLimit. */
  podConfig(pod: V1Pod): ResourceConfig {
    const config = resourceConfigForPod(pod, this.opts.resources);
    if (this.opts.podPidsLimit > 0) config.pidsLimit = BigInt(this.opts.podPidsLimit);
    return config;
  }

  exists(pod: V1Pod): Promise<boolean> {
    return this.cgroups.exists(this.podCgroup(pod));
  }

  /** Makes the pod's cgroup with its limits; the caller found it missing (EnsureExists). */
  create(pod: V1Pod): Promise<void> {
    return this.cgroups.create(this.podCgroup(pod), this.podConfig(pod));
  }

  /** Re-applies the pod's limits to its existing cgroup (an in-place resize changed them). */
  update(pod: V1Pod): Promise<void> {
    return this.cgroups.update(this.podCgroup(pod), this.podConfig(pod));
  }

  destroy(cgroup: CgroupName): Promise<void> {
    return this.cgroups.destroy(cgroup);
  }

  /** Every pod cgroup on the node by pod uid (GetAllPodsFromCgroups), found under the QoS tiers. */
  async podsFromCgroups(): Promise<Map<string, CgroupName>> {
    const found = new Map<string, CgroupName>();
    const { guaranteed, burstable, bestEffort } = this.qos.containers;
    for (const parent of [guaranteed, burstable, bestEffort])
      for (const child of await this.cgroups.children(parent)) {
        // systemd: the leaf slice's last component (kubepods-burstable-pod<uid>.slice).
        const base = child.endsWith('.slice') ? (parseSystemdToCgroupName(child).at(-1) ?? '') : child;
        if (base.startsWith(POD_CGROUP_PREFIX) && base.length > POD_CGROUP_PREFIX.length)
          found.set(base.slice(POD_CGROUP_PREFIX.length), [...parent, base]);
      }
    return found;
  }
}
