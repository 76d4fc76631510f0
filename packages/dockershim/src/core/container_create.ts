import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type ContainerConfig,
  type CreateContainerRequest,
  type CreateContainerResponse,
  FailedPreconditionError,
  InvalidArgumentError,
  NamespaceMode,
  type PodSandboxMetadata,
  SupplementalGroupsPolicy,
} from '@kh/cri-api';
import type { ContainerCreateRequest } from '../docker/client.js';
import {
  ContainerType,
  KubernetesLabels,
  LabelKeys,
  makeDockerLabels,
  sandboxMetadataFrom,
} from '../model/labels.js';
import { makeContainerName } from '../model/naming.js';
import type { ShimContext } from './context.js';
import { checkUserNamespace, containerPidMode, nowNanos, signalName, toDockerMounts } from './convert.js';
import { docker, required } from './errors.js';
import { hostDevices, withCapabilitiesToDrop } from './host_privileges.js';
import { getManaged } from './lookup.js';
import { checkMountPropagation } from './mount_propagation.js';
import {
  emulatesPrivileged,
  loadSeccompProfile,
  requestedProfile,
  requestedSeccomp,
  securityHostConfig,
} from './security.js';

export interface ContainerCreateParams {
  sandboxId: string;
  sandboxMetadata: PodSandboxMetadata;
  /** The sandbox's cgroup parent: the pod's containers live under the same one. */
  cgroupParent: string;
  /** Absolute CRI log path, or '' when the client asked for no log file. */
  logPath: string;
  /** The creating shim's endpoint (see LabelKeys.shimInstance). */
  shimInstance: string;
  createdAt: bigint;
  /** Lowest oom_score_adj allowed (restrict_oom_score_adj), if any. */
  oomScoreAdjFloor: number | undefined;
  /** Content of a Localhost seccomp profile, which Docker takes inline (loadSeccompProfile). */
  seccompJson: string | undefined;
  /** Capabilities the host cannot grant that Docker can name (withCapabilitiesToDrop). */
  missingCapabilities: string[];
  /** The host's devices, given to a container whose privilege is emulated (hostDevices). */
  hostDevices: string[];
  /** The Engine's API version (toDockerMounts: read-only binds differ from 1.44 on). */
  engineApiVersion: string;
}

/** "uid[:gid]" or "name[:gid]" for Docker's Config.User, from the CRI security context. */
export function dockerUser(config: ContainerConfig): string | undefined {
  const sc = config.linux?.securityContext;
  if (!sc) return undefined;
  const user = sc.runAsUser ? String(sc.runAsUser.value) : sc.runAsUsername;
  if (sc.runAsGroup && !user) {
    throw new InvalidArgumentError('run_as_group is set without run_as_user or run_as_username');
  }
  if (!user) return undefined;
  return sc.runAsGroup ? `${user}:${sc.runAsGroup.value}` : user;
}

/** The Docker create request for an application container. Pure: unit-tested without a daemon. */
export function containerCreateOptions(
  config: ContainerConfig,
  params: ContainerCreateParams,
): ContainerCreateRequest {
  const md = required(config.metadata, 'config.metadata');
  const image = required(config.image?.image, 'config.image.image');
  const sc = config.linux?.securityContext;
  const res = config.linux?.resources;
  const ns = sc?.namespaceOptions;
  checkUserNamespace(ns);
  // Docker adds the groups the image's /etc/group gives the user and cannot be told not to.
  if (sc?.supplementalGroupsPolicy === SupplementalGroupsPolicy.Strict) {
    throw new InvalidArgumentError(
      "supplemental_groups_policy Strict is not supported by docker: it always adds the user's groups from the image's /etc/group",
    );
  }
  for (const m of config.mounts) {
    if (m.image)
      throw new InvalidArgumentError(`image volume mounts (${m.containerPath}) are not supported by docker`);
    required(m.containerPath, 'mounts.container_path');
    required(m.hostPath, 'mounts.host_path');
  }
  const memory = Number(res?.memoryLimitInBytes ?? 0n);
  const swap = Number(res?.memorySwapLimitInBytes ?? 0n);
  let oomScoreAdj = res ? Number(res.oomScoreAdj) : undefined;
  if (oomScoreAdj !== undefined && params.oomScoreAdjFloor !== undefined) {
    oomScoreAdj = Math.max(oomScoreAdj, params.oomScoreAdjFloor);
  }
  const privileged = sc?.privileged ?? false;
  const security = securityHostConfig({
    privileged,
    seccomp: requestedSeccomp(sc),
    seccompJson: params.seccompJson,
    apparmor: requestedProfile('apparmor', sc?.apparmor, sc?.apparmorProfile ?? ''),
    noNewPrivs: sc?.noNewPrivs ?? false,
    capabilities: sc?.capabilities,
    maskedPaths: sc?.maskedPaths ?? [],
    readonlyPaths: sc?.readonlyPaths ?? [],
    missingCapabilities: params.missingCapabilities,
  });
  // An emulated privileged container gets every host device; the config's own devices come on top.
  const devices = new Map<
    string,
    { PathOnHost: string; PathInContainer: string; CgroupPermissions: string }
  >();
  if (emulatesPrivileged({ privileged, missingCapabilities: params.missingCapabilities })) {
    for (const path of params.hostDevices) {
      devices.set(path, { PathOnHost: path, PathInContainer: path, CgroupPermissions: 'rwm' });
    }
  }
  for (const d of config.devices) {
    devices.set(d.containerPath, {
      PathOnHost: d.hostPath,
      PathInContainer: d.containerPath,
      CgroupPermissions: d.permissions || 'rwm',
    });
  }

  const labels = makeDockerLabels({
    labels: config.labels,
    annotations: config.annotations,
    standard: {
      [KubernetesLabels.podName]: params.sandboxMetadata.name,
      [KubernetesLabels.podNamespace]: params.sandboxMetadata.namespace,
      [KubernetesLabels.podUid]: params.sandboxMetadata.uid,
      [KubernetesLabels.containerName]: md.name,
    },
    internal: {
      [LabelKeys.containerType]: ContainerType.container,
      [LabelKeys.sandboxId]: params.sandboxId,
      [LabelKeys.metadata]: JSON.stringify({ name: md.name, attempt: md.attempt }),
      [LabelKeys.createdAt]: String(params.createdAt),
      [LabelKeys.image]: image,
      [LabelKeys.logPath]: params.logPath,
      [LabelKeys.shimInstance]: params.shimInstance,
    },
  });

  return {
    name: makeContainerName(params.sandboxMetadata, md),
    Image: image,
    Entrypoint: config.command.length > 0 ? config.command : undefined,
    Cmd: config.args.length > 0 ? config.args : undefined,
    Env: config.envs.map((e) => `${e.key}=${Buffer.from(e.value).toString('utf8')}`),
    WorkingDir: config.workingDir || undefined,
    Labels: labels,
    Tty: config.tty,
    OpenStdin: config.stdin,
    StdinOnce: config.stdinOnce,
    User: dockerUser(config),
    StopSignal: signalName(config.stopSignal),
    HostConfig: {
      NetworkMode: `container:${params.sandboxId}`,
      IpcMode: ns?.ipc === NamespaceMode.NODE ? 'host' : `container:${params.sandboxId}`,
      PidMode: containerPidMode(ns?.pid, params.sandboxId, ns?.targetId ?? ''),
      CgroupParent: params.cgroupParent || undefined,
      ...toDockerMounts(config.mounts, params.engineApiVersion),
      Devices: [...devices.values()],
      CpuShares: res?.cpuShares ? Number(res.cpuShares) : undefined,
      CpuQuota: res?.cpuQuota ? Number(res.cpuQuota) : undefined,
      CpuPeriod: res?.cpuPeriod ? Number(res.cpuPeriod) : undefined,
      CpusetCpus: res?.cpusetCpus || undefined,
      CpusetMems: res?.cpusetMems || undefined,
      Memory: memory > 0 ? memory : undefined,
      // Kubernetes runs without swap unless told otherwise: swap limit = memory limit means no swap.
      MemorySwap: swap > 0 ? swap : memory > 0 ? memory : undefined,
      OomScoreAdj: oomScoreAdj,
      ReadonlyRootfs: sc?.readonlyRootfs ?? false,
      GroupAdd: sc?.supplementalGroups.length ? sc.supplementalGroups.map(String) : undefined,
      ...security,
      RestartPolicy: { Name: 'no' },
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } },
    },
  };
}

/** CreateContainer: create (not start) a container inside a ready sandbox's namespaces. */
export async function createContainer(
  ctx: ShimContext,
  req: CreateContainerRequest,
): Promise<Partial<CreateContainerResponse>> {
  required(req.podSandboxId, 'pod_sandbox_id');
  const config = required(req.config, 'config');
  const md = required(config.metadata, 'config.metadata');
  required(md.name, 'config.metadata.name');
  required(config.image?.image, 'config.image.image');

  const sandbox = await getManaged(ctx, req.podSandboxId, ContainerType.sandbox, 'pod_sandbox_id');
  if (!sandbox.State.Running) {
    throw new FailedPreconditionError(`pod sandbox ${JSON.stringify(req.podSandboxId)} is not ready`);
  }
  const sandboxLabels = sandbox.Config.Labels ?? {};
  const logDirectory = sandboxLabels[LabelKeys.logDirectory] ?? '';
  const sc = config.linux?.securityContext;
  const privileged = sc?.privileged ?? false;
  const seccompJson = await loadSeccompProfile(requestedSeccomp(sc), privileged);
  const engineApiVersion = await ctx.engineApiVersion();
  const containerId = await withCapabilitiesToDrop(async (missingCapabilities) => {
    const options = containerCreateOptions(config, {
      sandboxId: sandbox.Id,
      sandboxMetadata: sandboxMetadataFrom(sandboxLabels, sandbox.Name),
      cgroupParent: sandbox.HostConfig.CgroupParent ?? '',
      logPath: config.logPath && logDirectory ? join(logDirectory, config.logPath) : '',
      shimInstance: ctx.instance,
      createdAt: nowNanos(),
      oomScoreAdjFloor: ctx.config.restrictOomScoreAdj ? ctx.ownOomScoreAdj : undefined,
      seccompJson,
      missingCapabilities,
      hostDevices: emulatesPrivileged({ privileged, missingCapabilities }) ? await hostDevices() : [],
      engineApiVersion,
    });
    // Unlike Binds, Mounts does not create a missing source; containerd creates it, so must we.
    await createMissingSources(options.HostConfig?.Mounts ?? []);
    // After the options, which validate every mount, so a bad one is reported as such.
    await checkMountPropagation(config.mounts);
    return docker(`create container ${JSON.stringify(md.name)}`, () => ctx.docker.createContainer(options));
  });
  ctx.known.add(containerId, ContainerType.container);
  return { containerId };
}

async function createMissingSources(mounts: readonly { Source?: string }[]): Promise<void> {
  for (const { Source } of mounts)
    if (Source && !existsSync(Source)) await mkdir(Source, { recursive: true, mode: 0o755 });
}
