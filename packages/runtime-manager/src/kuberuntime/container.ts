// Containers: the CRI config generated from a container spec, the start sequence
// (image -> create -> start -> postStart), the kill sequence (preStop -> StopContainer with
// the grace period) and a pod's kills in sidecar order, removal with its log, and the status the
// runtime reports back.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type ContainerConfig,
  ContainerState as CriContainerState,
  type ContainerStatus as CriContainerStatus,
  isNotFound,
  MountPropagation,
  NamespaceMode,
  type PodSandboxConfig,
} from '@kh/cri-api';
import type { V1Container, V1LifecycleHandler, V1Pod, V1Secret } from '@kubernetes/client-node';
import type {
  ContainerID,
  ContainerState,
  ContainerStatus,
  PodStatus,
  RunningPod,
  SyncStepResult,
} from '../container/runtime.js';
import {
  ErrCreateContainer,
  ErrCreateContainerConfig,
  ErrKillContainer,
  ErrPostStartHook,
  ErrRunContainer,
  failStep,
  SyncStepError,
} from '../container/sync_result.js';
import type { ImagePresence } from '../images/image_manager.js';
import { findContainerStatusByName, isRestartableInitContainer } from './compute_pod_actions.js';
import { type ManagerContext, nsToMs, recordEvent, toAgentPath, toRuntimePath } from './context.js';
import { expandVars } from './env.js';
import { runHandler } from './hooks.js';
import {
  DefaultTerminationGracePeriodSeconds,
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  newContainerAnnotations,
  newContainerLabels,
  podUid,
} from './labels.js';
import { containerLogPath, podLogDirOf, removeContainerLog, restartCountFromLogDir } from './logs.js';
import { linuxResources } from './resources.js';
import { namespaceOptions } from './sandbox.js';
import { linuxContainerSecurityContext, needsImageUser, verifyRunAsNonRoot } from './security_context.js';
import { readTerminationMessage } from './termination_message.js';

/** Containers always get at least this long to stop, so a zero grace period is not an instant SIGKILL. */
export const MinimumGracePeriodSeconds = 2;

export function toContainerState(s: CriContainerState): ContainerState {
  switch (s) {
    case CriContainerState.CONTAINER_CREATED:
      return 'created';
    case CriContainerState.CONTAINER_RUNNING:
      return 'running';
    case CriContainerState.CONTAINER_EXITED:
      return 'exited';
    default:
      return 'unknown';
  }
}

export function containerId(ctx: ManagerContext, id: string): ContainerID {
  return { type: ctx.runtimeName, id };
}

/** Converts CRI status + our annotations; for exited containers, adds the termination message. */
export async function toContainerStatus(
  ctx: ManagerContext,
  s: CriContainerStatus,
): Promise<ContainerStatus> {
  const labels = getContainerInfoFromLabels(s.labels);
  const ann = getContainerInfoFromAnnotations(s.annotations);
  const state = toContainerState(s.state);
  const out: ContainerStatus = {
    id: containerId(ctx, s.id),
    name: labels.containerName || s.metadata?.name || '',
    state,
    createdAt: new Date(nsToMs(s.createdAt)),
    image: s.image?.userSpecifiedImage || s.image?.image || '',
    imageRef: s.imageRef,
    imageId: s.imageId || undefined,
    hash: ann.hash,
    restartCount: ann.restartCount,
    logPath: s.logPath ? toAgentPath(ctx, s.logPath) : undefined,
  };
  const linux = s.resources?.linux;
  if (linux && state === 'running') {
    const { cpuShares, cpuQuota, cpuPeriod, memoryLimitInBytes } = linux;
    out.resources = { cpuShares, cpuQuota, cpuPeriod, memoryLimitInBytes };
  }
  const user = s.user?.linux;
  if (user) out.user = { uid: user.uid, gid: user.gid, supplementalGroups: [...user.supplementalGroups] };
  if (s.startedAt > 0n) out.startedAt = new Date(nsToMs(s.startedAt));
  if (s.finishedAt > 0n) out.finishedAt = new Date(nsToMs(s.finishedAt));
  if (s.reason) out.reason = s.reason;
  let message = s.message;
  if (state === 'exited') {
    out.exitCode = s.exitCode;
    const tm = await readTerminationMessage({
      path: ann.terminationMessagePath,
      policy: ann.terminationMessagePolicy,
      exitCode: s.exitCode,
      mounts: s.mounts.map((m) => ({
        containerPath: m.containerPath,
        hostPath: toAgentPath(ctx, m.hostPath),
      })),
      logPath: out.logPath,
    });
    if (tm) message = message ? `${message}: ${tm}` : tm;
  }
  if (message) out.message = message;
  return out;
}

const terminationMessagePath = (c: V1Container) => c.terminationMessagePath ?? '/dev/termination-log';

/** Makes the directory of the container's termination message files; undefined when none is mounted. */
function makeTerminationMessageDir(
  ctx: ManagerContext,
  pod: V1Pod,
  container: V1Container,
): Promise<string | undefined> {
  if (!ctx.mountTerminationMessage || !terminationMessagePath(container)) return Promise.resolve(undefined);
  const dir = join(ctx.podsDir, podUid(pod), 'containers', container.name);
  return mkdir(dir, { recursive: true }).then(() => dir);
}

async function terminationMessageMount(container: V1Container, dir: Promise<string | undefined>) {
  const d = await dir;
  if (!d) return [];
  const hostPath = join(d, randomBytes(4).toString('hex'));
  await writeFile(hostPath, '');
  // World-writable whatever the umask, as the kubelet chmods it: a non-root container writes it.
  await chmod(hostPath, 0o666);
  return [{ containerPath: terminationMessagePath(container), hostPath, readonly: false }];
}

export async function generateContainerConfig(
  ctx: ManagerContext,
  pod: V1Pod,
  container: V1Container,
  restartCount: number,
  imageRef: string,
  podIPs: string[],
  /** Made ahead (prepareContainerStart); by default it is made here. */
  terminationMessageDir?: Promise<string | undefined>,
  /** The running container whose PID namespace an ephemeral container joins (targetContainerName). */
  targetId?: string,
): Promise<ContainerConfig> {
  const opts = await ctx.helper.generateRunContainerOptions(pod, container, podIPs);
  const vars = new Map(opts.envs.map((e) => [e.name, e.value]));
  const mounts = [
    ...opts.mounts,
    ...(await terminationMessageMount(
      container,
      terminationMessageDir ?? makeTerminationMessageDir(ctx, pod, container),
    )),
  ];
  // Only runAsNonRoot without runAsUser depends on the image's user: otherwise the runtime picks
  // the same user from the image itself, and an ImageStatus call would buy nothing.
  const imageUser = needsImageUser(pod, container) ? await ctx.imageUser(imageRef) : undefined;
  verifyRunAsNonRoot(pod, container, imageUser);
  const namespaces = await namespaceOptions(ctx, pod, true);
  // A pod sharing one PID namespace (or the host's) keeps it; otherwise the target's is joined.
  if (targetId && namespaces.pid === NamespaceMode.CONTAINER) {
    namespaces.pid = NamespaceMode.TARGET;
    namespaces.targetId = targetId;
  }
  // In a user namespace of its own, every mount is ID-mapped like the pod, so that the files the
  // agent wrote as root (config maps, secrets) are root's inside, as the kubelet asks the runtime.
  const userns = namespaces.usernsOptions;
  return {
    metadata: { name: container.name, attempt: restartCount },
    image: {
      image: imageRef,
      userSpecifiedImage: container.image ?? '',
      annotations: {},
      runtimeHandler: '',
      imageRef: '',
    },
    command: (container.command ?? []).map((c) => expandVars(c, vars)),
    args: (container.args ?? []).map((a) => expandVars(a, vars)),
    workingDir: container.workingDir ?? '',
    // KeyValue.value is proto `bytes` in this CRI version.
    envs: opts.envs.map((e) => ({ key: e.name, value: Buffer.from(e.value, 'utf8') })),
    mounts: mounts.map((m) => ({
      containerPath: m.containerPath,
      hostPath: toRuntimePath(ctx, m.hostPath),
      readonly: m.readonly,
      selinuxRelabel: false,
      propagation: MountPropagation.PROPAGATION_PRIVATE,
      uidMappings: userns?.uids ?? [],
      gidMappings: userns?.gids ?? [],
      recursiveReadOnly: false,
      image: undefined,
      imageSubPath: '',
      mountOptions: [],
    })),
    devices: [],
    labels: { ...ctx.extraLabels, ...newContainerLabels(container, pod) },
    annotations: newContainerAnnotations(container, pod, restartCount),
    logPath: containerLogPath(container.name, restartCount),
    stdin: container.stdin === true,
    stdinOnce: container.stdinOnce === true,
    tty: container.tty === true,
    linux: {
      resources: linuxResources(container),
      securityContext: {
        ...linuxContainerSecurityContext(ctx.security, pod, container, imageUser),
        namespaceOptions: namespaces,
      },
    },
    windows: undefined,
    CDIDevices: [],
    stopSignal: 0,
  };
}

/**
 * The part of a container start that needs no sandbox and changes nothing the runtime or the API
 * sees: the image presence check, the restart count, the termination message directory. A pod's
 * first pass starts it while the sandbox is being created.
 */
export interface ContainerStartPrep {
  imagePresence: ImagePresence | undefined;
  restartCount: Promise<number>;
  terminationMessageDir: Promise<string | undefined>;
}

export function prepareContainerStart(
  ctx: ManagerContext,
  pod: V1Pod,
  container: V1Container,
  podStatus: PodStatus,
): ContainerStartPrep {
  const previous = findContainerStatusByName(podStatus, container.name);
  const terminationMessageDir = makeTerminationMessageDir(ctx, pod, container);
  // Its failure fails the start that awaits it; until then it must not count as unhandled.
  terminationMessageDir.catch(() => undefined);
  return {
    imagePresence: ctx.images.checkPresence(container),
    // With no surviving status, the log directory tells the count; the scan never rejects.
    restartCount: previous
      ? Promise.resolve(previous.restartCount + 1)
      : restartCountFromLogDir(join(podLogDirOf(ctx.podLogsRootDir, pod), container.name)),
    terminationMessageDir,
  };
}

export interface StartContainerArgs {
  pod: V1Pod;
  container: V1Container;
  podStatus: PodStatus;
  pullSecrets: V1Secret[];
  sandboxId: string;
  sandboxConfig: PodSandboxConfig;
  podIPs: string[];
  /** Started earlier (prepareContainerStart); by default the start prepares itself. */
  prep?: ContainerStartPrep;
  /** An ephemeral container's targetContainerName: a container of the pod that must be running. */
  targetContainerName?: string;
}

/** The runtime ID of the running container an ephemeral container targets (the kubelet's getTargetID). */
function targetId(status: PodStatus, name: string | undefined): string | undefined {
  if (!name) return undefined;
  const target = status.containerStatuses.find((s) => s.name === name);
  if (target?.state !== 'running')
    throw new SyncStepError(ErrCreateContainerConfig, `unable to find target container ${name}`);
  return target.id.id;
}

/** Image -> CreateContainer -> StartContainer -> postStart. Throws SyncStepError with the kubelet reason. */
export async function startContainer(ctx: ManagerContext, a: StartContainerArgs): Promise<string> {
  const { pod, container } = a;
  const prep = a.prep ?? prepareContainerStart(ctx, pod, container, a.podStatus);
  const imageRef = await ctx.images.ensureImageExists(
    pod,
    container,
    a.pullSecrets,
    a.sandboxConfig,
    prep.imagePresence,
  );
  const restartCount = await prep.restartCount;

  let config: ContainerConfig;
  try {
    config = await generateContainerConfig(
      ctx,
      pod,
      container,
      restartCount,
      imageRef,
      a.podIPs,
      prep.terminationMessageDir,
      targetId(a.podStatus, a.targetContainerName),
    );
  } catch (err) {
    const msg = `Error: ${(err as Error).message}`;
    recordEvent(ctx, pod, 'Warning', 'Failed', msg);
    throw new SyncStepError(
      err instanceof SyncStepError ? err.reason : ErrCreateContainerConfig,
      (err as Error).message,
      {
        cause: err,
      },
    );
  }

  let id: string;
  try {
    id = (
      await ctx.cri.createContainer({ podSandboxId: a.sandboxId, config, sandboxConfig: a.sandboxConfig })
    ).containerId;
  } catch (err) {
    recordEvent(ctx, pod, 'Warning', 'Failed', `Error: ${(err as Error).message}`);
    throw new SyncStepError(ErrCreateContainer, (err as Error).message, { cause: err });
  }
  recordEvent(ctx, pod, 'Normal', 'Created', `Created container ${container.name}`);

  try {
    await ctx.cri.startContainer({ containerId: id });
  } catch (err) {
    recordEvent(ctx, pod, 'Warning', 'Failed', `Error: ${(err as Error).message}`);
    throw new SyncStepError(ErrRunContainer, (err as Error).message, { cause: err });
  }
  recordEvent(ctx, pod, 'Normal', 'Started', `Started container ${container.name}`);

  const postStart = container.lifecycle?.postStart;
  if (postStart) {
    try {
      await runHandler(
        postStart,
        { containerId: id, containerName: container.name, podIP: a.podIPs[0], ports: container.ports ?? [] },
        hookRunner(ctx),
        gracePeriodSeconds(pod),
      );
    } catch (err) {
      const msg = (err as Error).message;
      recordEvent(ctx, pod, 'Warning', 'FailedPostStartHook', msg);
      await killContainer(ctx, {
        pod,
        container,
        id,
        name: container.name,
        reason: 'FailedPostStartHook',
        message: 'FailedPostStartHook',
      }).catch(() => undefined);
      throw new SyncStepError(ErrPostStartHook, `PostStartHook failed: ${msg}`, { cause: err });
    }
  }
  return id;
}

export function hookRunner(ctx: ManagerContext) {
  return {
    async exec(containerId: string, cmd: string[], timeoutSeconds: number) {
      const r = await ctx.cri.execSync({
        containerId,
        cmd,
        timeout: BigInt(Math.max(1, Math.ceil(timeoutSeconds))),
      });
      return { exitCode: r.exitCode, output: Buffer.concat([r.stdout, r.stderr]).toString('utf8') };
    },
  };
}

/** The pod's grace period: deletionGracePeriodSeconds, then terminationGracePeriodSeconds, then 30s. */
export function gracePeriodSeconds(
  pod: V1Pod | undefined,
  annotated?: { deletion?: number; termination?: number },
): number {
  const deletion = pod?.metadata?.deletionGracePeriodSeconds ?? annotated?.deletion;
  if (deletion != null) return deletion;
  return (
    pod?.spec?.terminationGracePeriodSeconds ?? annotated?.termination ?? DefaultTerminationGracePeriodSeconds
  );
}

/**
 * A liveness or startup kill uses the probe's own terminationGracePeriodSeconds, unless the pod is
 * being deleted: then the deletion's grace period rules, as for every other kill.
 */
function probeGracePeriodSeconds(pod: V1Pod, container: V1Container, reason: string): number | undefined {
  if (pod.metadata?.deletionGracePeriodSeconds != null) return undefined;
  const probe =
    reason === 'LivenessProbe'
      ? container.livenessProbe
      : reason === 'StartupProbe'
        ? container.startupProbe
        : undefined;
  return probe?.terminationGracePeriodSeconds ?? undefined;
}

export interface KillContainerArgs {
  /** Undefined for containers of pods the agent no longer knows: specs come from annotations. */
  pod: V1Pod | undefined;
  container?: V1Container;
  id: string;
  name: string;
  reason: string;
  message: string;
  gracePeriodOverrideSeconds?: number;
  /** Pod IP for httpGet preStop hooks when the pod object is gone. */
  podIP?: () => Promise<string | undefined>;
  /** Resolves when the containers this one must outlive have stopped (sidecar termination order). */
  waitForTurn?: () => Promise<unknown>;
}

/**
 * preStop, then (after waitForTurn) StopContainer with what is left of the grace period (at least
 * 2s). NotFound counts as stopped.
 */
export async function killContainer(ctx: ManagerContext, a: KillContainerArgs): Promise<void> {
  let preStop: V1LifecycleHandler | undefined = a.container?.lifecycle?.preStop;
  let ports = a.container?.ports ?? [];
  let grace: number;
  if (a.pod && a.container) {
    grace = probeGracePeriodSeconds(a.pod, a.container, a.reason) ?? gracePeriodSeconds(a.pod);
  } else {
    // Restore what the kill needs from the container's own annotations.
    let annotations: Record<string, string> = {};
    try {
      annotations = (await ctx.cri.containerStatus({ containerId: a.id })).status?.annotations ?? {};
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    const info = getContainerInfoFromAnnotations(annotations);
    preStop = info.preStopHandler;
    ports = info.ports ?? [];
    grace = gracePeriodSeconds(a.pod, {
      deletion: info.podDeletionGracePeriodSeconds,
      termination: info.podTerminationGracePeriodSeconds,
    });
  }
  recordEvent(ctx, a.pod, 'Normal', 'Killing', a.message || `Stopping container ${a.name}`);
  if (a.gracePeriodOverrideSeconds !== undefined) grace = a.gracePeriodOverrideSeconds;

  if (preStop && grace > 0) {
    const started = ctx.clock.now();
    try {
      const podIP = a.pod?.status?.podIP ?? (await a.podIP?.());
      await runHandler(
        preStop,
        { containerId: a.id, containerName: a.name, podIP, ports },
        hookRunner(ctx),
        grace,
      );
    } catch (err) {
      recordEvent(ctx, a.pod, 'Warning', 'FailedPreStopHook', (err as Error).message);
    }
    grace -= Math.floor((ctx.clock.now() - started) / 1000);
  }
  if (a.waitForTurn) {
    const started = ctx.clock.now();
    await a.waitForTurn();
    grace -= Math.floor((ctx.clock.now() - started) / 1000);
  }
  grace = Math.max(grace, MinimumGracePeriodSeconds);
  try {
    await ctx.cri.stopContainer({ containerId: a.id, timeout: BigInt(grace) });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * Kills the pod's live containers, each as a KillContainer step. KEP-753: sidecars serve the
 * other containers until those have stopped, so app containers get SIGTERM first, then the
 * sidecars in reverse order of declaration, each once every container before it in that order
 * has stopped. All kills start at once (preStop hooks run straight away); only the StopContainer
 * waits, and the wait comes out of the grace period. Each StopContainer call has a deadline of
 * its grace period, which bounds the wait.
 */
export async function killContainersWithSyncResult(
  ctx: ManagerContext,
  pod: V1Pod | undefined,
  runningPod: RunningPod,
  gracePeriodOverrideSeconds: number | undefined,
): Promise<SyncStepResult[]> {
  let podIP: Promise<string | undefined> | undefined;
  const lazyPodIP = () => {
    podIP ??= (async () => {
      for (const s of runningPod.sandboxes) {
        const st = await ctx.cri.podSandboxStatus({ podSandboxId: s.id }).catch(() => undefined);
        if (st?.status?.network?.ip) return st.status.network.ip;
      }
      return undefined;
    })();
    return podIP;
  };
  const specs = [...(pod?.spec?.containers ?? []), ...(pod?.spec?.initContainers ?? [])];
  const sidecars = (pod?.spec?.initContainers ?? []).filter(isRestartableInitContainer).map((c) => c.name);
  const kill = async (
    c: RunningPod['containers'][number],
    waitForTurn?: () => Promise<unknown>,
  ): Promise<SyncStepResult> => {
    const step: SyncStepResult = { action: 'KillContainer', target: c.name };
    try {
      await killContainer(ctx, {
        pod,
        container: specs.find((s) => s.name === c.name),
        id: c.id.id,
        name: c.name,
        reason: '',
        message: '',
        gracePeriodOverrideSeconds,
        podIP: lazyPodIP,
        waitForTurn,
      });
    } catch (err) {
      failStep(step, ErrKillContainer, err);
    }
    return step;
  };
  const live = runningPod.containers.filter(
    (c) => c.state === 'running' || c.state === 'created' || c.state === 'unknown',
  );
  const kills = live.filter((c) => !sidecars.includes(c.name)).map((c) => kill(c));
  for (const name of [...sidecars].reverse()) {
    const before = [...kills];
    kills.push(...live.filter((c) => c.name === name).map((c) => kill(c, () => Promise.all(before))));
  }
  return Promise.all(kills);
}

/** Removes a container and its log file. NotFound counts as removed. */
export async function removeContainer(ctx: ManagerContext, id: string): Promise<void> {
  try {
    const st = await ctx.cri.containerStatus({ containerId: id });
    if (st.status?.logPath) await removeContainerLog(toAgentPath(ctx, st.status.logPath));
    await ctx.cri.removeContainer({ containerId: id });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
