// What a container needs from the rest of the agent before it can be created: environment
// variables, volume mounts, and the pod's cgroup and DNS. Config maps, secrets, tokens and the
// node come from a PodObjectSource (the node agent's, over the API server); without one, a pod
// that needs them fails with CreateContainerConfigError. A mount's subPath (or subPathExpr) is
// prepared as the kubelet prepares it (subpath.ts): never a path outside its volume. Once the pod
// has IPs, a container that mounts nothing at /etc/hosts gets the pod's managed hosts file (etc_hosts.ts).
import { join } from 'node:path';
import type { V1Container, V1Pod, V1VolumeMount } from '@kubernetes/client-node';
import { ErrCreateContainerConfig, SyncStepError } from '../container/sync_result.js';
import { type EnvVar, makeEnvironmentVariables } from './env.js';
import { ETC_HOSTS_PATH, ensureHostsFile } from './etc_hosts.js';
import type { PodObjectSource } from './pod_objects.js';
import {
  cleanSubPaths,
  hostMounter,
  mountSubPath,
  prepareSubPath,
  SubPathError,
  type SubPathMounter,
  type TmpfsMounter,
} from './subpath.js';
import { PodVolumes, type VolumeMountSource } from './volumes.js';

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
  /** Releases what the pod's containers were given (sub-path mounts, emptyDir volumes) once none of them runs. */
  cleanupPod?(podUid: string): Promise<Error[]>;
}

/**
 * The default helper: envs and volumes (hostPath, emptyDir, and with `objects` configMap,
 * secret, downwardAPI and projected) under `podsDir`.
 */
export class DefaultRuntimeHelper implements RuntimeHelper {
  /** The agent refreshes API-projected volumes through this (`refresh(pod)`) when objects change. */
  readonly volumes: PodVolumes;

  constructor(
    private readonly podsDir: string,
    /** The sandbox's cgroup parent: one for every pod, or the pod's own (the agent's podCgroups). */
    private readonly cgroupParent: string | ((pod: V1Pod) => string) = '',
    private readonly objects?: PodObjectSource,
    /** Bind mounts for sub-paths; the default runs mount(8) (root, the runtime's mount namespace). */
    private readonly mounter: SubPathMounter = hostMounter,
    /** tmpfs for memory-backed emptyDir volumes; the default runs mount(8) too. */
    tmpfs: TmpfsMounter = hostMounter,
    /** The kubelet's clusterDomain (a pod's subdomain names in /etc/hosts) and the node's hosts file. */
    private readonly hosts: { clusterDomain?: string; nodeHostsPath?: string } = {},
  ) {
    this.volumes = new PodVolumes(podsDir, objects, tmpfs);
  }

  async generateRunContainerOptions(
    pod: V1Pod,
    container: V1Container,
    podIPs: string[],
  ): Promise<RunContainerOptions> {
    // Volumes are set up first, as the kubelet's volume manager mounts them before the container's
    // config is built; sub-paths come after the envs, which subPathExpr expands (makeMounts).
    const sources: { vm: V1VolumeMount; src: VolumeMountSource }[] = [];
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
      sources.push({ vm, src });
    }
    const envs = await makeEnvironmentVariables(pod, container, podIPs, this.objects);
    const mounts: MountSpec[] = [];
    for (const [index, { vm, src }] of sources.entries()) {
      const hostPath = await this.subPathSource(pod, container, vm, index, src.hostPath, envs);
      mounts.push({ containerPath: vm.mountPath, hostPath, readonly: src.readonly || vm.readOnly === true });
    }
    // Without IPs (the sandbox's network is not known yet) the kubelet leaves /etc/hosts to the runtime.
    if (podIPs.length > 0 && !(container.volumeMounts ?? []).some((vm) => vm.mountPath === ETC_HOSTS_PATH)) {
      mounts.push({
        containerPath: ETC_HOSTS_PATH,
        hostPath: await this.hostsFile(pod, podIPs),
        readonly: false,
      });
    }
    return { envs, mounts };
  }

  private async hostsFile(pod: V1Pod, podIPs: string[]): Promise<string> {
    try {
      return await ensureHostsFile(pod, {
        podDir: join(this.podsDir, pod.metadata?.uid ?? ''),
        podIPs,
        clusterDomain: this.hosts.clusterDomain ?? '',
        ...(this.hosts.nodeHostsPath ? { nodeHostsPath: this.hosts.nodeHostsPath } : {}),
      });
    } catch (err) {
      throw new SyncStepError(
        ErrCreateContainerConfig,
        `failed to write the pod's hosts file: ${(err as Error).message}`,
      );
    }
  }

  /** The volume's path, or its prepared sub-path; a bad one is the kubelet's CreateContainerConfigError. */
  private async subPathSource(
    pod: V1Pod,
    container: V1Container,
    vm: V1VolumeMount,
    index: number,
    volumePath: string,
    envs: EnvVar[],
  ): Promise<string> {
    try {
      const subPath = mountSubPath(vm, envs);
      if (!subPath) return volumePath;
      return await prepareSubPath(this.mounter, {
        podsDir: this.podsDir,
        podUid: pod.metadata?.uid ?? '',
        volumeName: vm.name,
        containerName: container.name,
        index,
        volumePath,
        subPath,
      });
    } catch (err) {
      if (err instanceof SubPathError) throw new SyncStepError(ErrCreateContainerConfig, err.message);
      throw err;
    }
  }

  async cleanupPod(podUid: string): Promise<Error[]> {
    // Sub-path mounts first: they pin the volumes they were made from. One still mounted keeps
    // the emptyDir data it shows, as the kubelet does not tear a volume down under its sub-paths.
    const errors = await cleanSubPaths(this.mounter, this.podsDir, podUid);
    if (errors.length > 0) return errors;
    return this.volumes.tearDownEmptyDirs(podUid);
  }

  podCgroupParent(pod: V1Pod): string {
    return typeof this.cgroupParent === 'string' ? this.cgroupParent : this.cgroupParent(pod);
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
