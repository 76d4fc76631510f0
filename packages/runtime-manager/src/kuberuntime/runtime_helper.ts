// What a container needs from the rest of the agent before it can be created: environment
// variables, volume mounts, and the pod's cgroup and DNS. Config maps, secrets, tokens and the
// node come from a PodObjectSource (the node agent's, over the API server); without one, a pod
// that needs them fails with CreateContainerConfigError.
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { ErrCreateContainerConfig, SyncStepError } from '../container/sync_result.js';
import { type EnvVar, makeEnvironmentVariables } from './env.js';
import type { PodObjectSource } from './pod_objects.js';
import { PodVolumes } from './volumes.js';

export interface MountSpec {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
}

export interface RunContainerOptions {
  envs: EnvVar[];
  mounts: MountSpec[];
}

export interface RuntimeHelper {
  /** Envs and mounts for a container; throw SyncStepError(CreateContainerConfigError) for a bad spec. */
  generateRunContainerOptions(
    pod: V1Pod,
    container: V1Container,
    podIPs: string[],
  ): Promise<RunContainerOptions>;
  /** cgroup parent for the pod's sandbox ('' lets the runtime choose). */
  podCgroupParent(pod: V1Pod): string;
  /** DNS for the sandbox; undefined keeps the runtime's default (the node's resolv.conf). */
  podDNS(pod: V1Pod): { servers: string[]; searches: string[]; options: string[] } | undefined;
}

/**
 * The default helper: envs and volumes (hostPath, emptyDir, and with `objects` configMap,
 * secret, downwardAPI and projected) under `podsDir`.
 */
export class DefaultRuntimeHelper implements RuntimeHelper {
  /** The agent refreshes API-projected volumes through this (`refresh(pod)`) when objects change. */
  readonly volumes: PodVolumes;

  constructor(
    podsDir: string,
    private readonly cgroupParent = '',
    private readonly objects?: PodObjectSource,
  ) {
    this.volumes = new PodVolumes(podsDir, objects);
  }

  async generateRunContainerOptions(
    pod: V1Pod,
    container: V1Container,
    podIPs: string[],
  ): Promise<RunContainerOptions> {
    const mounts: MountSpec[] = [];
    // Volumes first, as the kubelet mounts them before it builds the container's config.
    for (const vm of container.volumeMounts ?? []) {
      const vol = pod.spec?.volumes?.find((v) => v.name === vm.name);
      if (!vol) {
        throw new SyncStepError(
          ErrCreateContainerConfig,
          `volumeMount "${vm.name}" names no volume of the pod`,
        );
      }
      const src = await this.volumes.setUp(pod, vol);
      if (!src) {
        throw new SyncStepError(
          ErrCreateContainerConfig,
          `volume "${vol.name}" has a type the default runtime helper does not mount`,
        );
      }
      const hostPath = vm.subPath ? join(src.hostPath, vm.subPath) : src.hostPath;
      mounts.push({ containerPath: vm.mountPath, hostPath, readonly: src.readonly || vm.readOnly === true });
    }
    const envs = await makeEnvironmentVariables(pod, container, podIPs, this.objects);
    return { envs, mounts };
  }

  podCgroupParent(): string {
    return this.cgroupParent;
  }

  podDNS(pod: V1Pod) {
    const d = pod.spec?.dnsConfig;
    if (!d) return undefined;
    return {
      servers: d.nameservers ?? [],
      searches: d.searches ?? [],
      options: (d.options ?? []).map((o) => (o.value ? `${o.name}:${o.value}` : (o.name ?? ''))),
    };
  }
}
