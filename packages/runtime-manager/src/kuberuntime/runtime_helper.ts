// What a container needs from the rest of the agent before it can be created: environment
// variables, volume mounts, and the pod's cgroup and DNS. The node agent can replace this
// (secrets, config maps, projected volumes need the API); the default covers what a pod spec
// alone determines: literal and downward-API env vars, hostPath and emptyDir volumes.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import { ErrCreateContainerConfig, SyncStepError } from '../container/sync_result.js';

export interface EnvVar {
  name: string;
  value: string;
}

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

/** $(VAR) expansion as the API defines it: $$ escapes, unknown references stay as written. */
export function expandVars(text: string, vars: ReadonlyMap<string, string>): string {
  return text.replace(/\$\$|\$\(([^)]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && vars.has(name) ? vars.get(name)! : m;
  });
}

function fieldRefValue(pod: V1Pod, path: string, podIPs: string[]): string {
  switch (path) {
    case 'metadata.name':
      return pod.metadata?.name ?? '';
    case 'metadata.namespace':
      return pod.metadata?.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata?.uid ?? '';
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.podIP':
      return podIPs[0] ?? '';
    case 'status.podIPs':
      return podIPs.join(',');
    case 'status.hostIP':
      return pod.status?.hostIP ?? '';
  }
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (m) return (m[1] === 'labels' ? pod.metadata?.labels : pod.metadata?.annotations)?.[m[2]!] ?? '';
  throw new SyncStepError(ErrCreateContainerConfig, `unsupported fieldRef "${path}"`);
}

export function containerEnvs(pod: V1Pod, container: V1Container, podIPs: string[]): EnvVar[] {
  const vars = new Map<string, string>();
  const out: EnvVar[] = [];
  for (const e of container.env ?? ([] as V1EnvVar[])) {
    let value: string;
    if (e.valueFrom?.fieldRef) value = fieldRefValue(pod, e.valueFrom.fieldRef.fieldPath, podIPs);
    else if (e.valueFrom) {
      throw new SyncStepError(
        ErrCreateContainerConfig,
        `env "${e.name}" uses a source this runtime helper cannot resolve (secrets, config maps and resources need the node agent)`,
      );
    } else value = expandVars(e.value ?? '', vars);
    vars.set(e.name, value);
    out.push({ name: e.name, value });
  }
  return out;
}

/** The default helper: pod-spec-only envs, hostPath and emptyDir volumes under `podsDir`. */
export class DefaultRuntimeHelper implements RuntimeHelper {
  constructor(
    private readonly podsDir: string,
    private readonly cgroupParent = '',
  ) {}

  async generateRunContainerOptions(
    pod: V1Pod,
    container: V1Container,
    podIPs: string[],
  ): Promise<RunContainerOptions> {
    const envs = containerEnvs(pod, container, podIPs);
    const mounts: MountSpec[] = [];
    for (const vm of container.volumeMounts ?? []) {
      const vol = pod.spec?.volumes?.find((v) => v.name === vm.name);
      if (!vol) {
        throw new SyncStepError(
          ErrCreateContainerConfig,
          `volumeMount "${vm.name}" names no volume of the pod`,
        );
      }
      let hostPath: string;
      if (vol.hostPath) hostPath = vol.hostPath.path;
      else if (vol.emptyDir) {
        hostPath = join(
          this.podsDir,
          pod.metadata?.uid ?? '',
          'volumes',
          'kubernetes.io~empty-dir',
          vol.name,
        );
        await mkdir(hostPath, { recursive: true, mode: 0o777 });
      } else {
        throw new SyncStepError(
          ErrCreateContainerConfig,
          `volume "${vol.name}" has a type the default runtime helper does not mount`,
        );
      }
      if (vm.subPath) hostPath = join(hostPath, vm.subPath);
      mounts.push({ containerPath: vm.mountPath, hostPath, readonly: vm.readOnly === true });
    }
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
