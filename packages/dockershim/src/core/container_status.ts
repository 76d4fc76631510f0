import {
  ContainerState,
  type ContainerStatus,
  type ContainerStatusRequest,
  type ContainerStatusResponse,
} from '@kh/cri-api';
import type { ContainerInspect, ImageInspect } from '../docker/client.js';
import {
  ContainerType,
  containerMetadataFrom,
  createdAtFrom,
  LabelKeys,
  splitDockerLabels,
} from '../model/labels.js';
import type { ShimContext } from './context.js';
import {
  dockerTimeToNanos,
  exitReason,
  propagationFromDocker,
  resourcesFromHostConfig,
  signalFromDocker,
  toContainerState,
} from './convert.js';
import { getManaged } from './lookup.js';

// How long ContainerStatus waits, in all, for the last log lines of an exited container to reach the
// CRI file, so a client that sees EXITED can read the complete log. Quiet, the copier is done within
// milliseconds of the exit, but it makes two Docker requests after it (the follow stream's end, one
// catch-up read), and a dockerd busy with other suites on two cores can take seconds for them.
const LOG_DRAIN_MS = 10_000;

// 128 + SIGKILL: how Docker reports a main process the kernel's OOM killer (or anyone) SIGKILLed.
const EXIT_SIGKILL = 137;

/**
 * ContainerStatus from `docker inspect` of the container and (for the digest) of its image;
 * `oomEvent`: Docker's `oom` event says it was OOM-killed, though its State does not (yet).
 */
export function containerStatusFromInspect(
  info: ContainerInspect,
  image: ImageInspect | undefined,
  oomEvent = false,
): ContainerStatus {
  const dockerLabels = info.Config.Labels ?? {};
  const { labels, annotations } = splitDockerLabels(dockerLabels);
  const s = info.State;
  let state = toContainerState(s.Status);
  let reason = '';
  let startedAt = dockerTimeToNanos(s.StartedAt);
  let finishedAt = dockerTimeToNanos(s.FinishedAt);
  const created = createdAtFrom(dockerLabels, dockerTimeToNanos(info.Created));
  if (state === ContainerState.CONTAINER_EXITED) {
    reason = exitReason({ ExitCode: s.ExitCode, OOMKilled: s.OOMKilled || oomEvent });
  } else if (state === ContainerState.CONTAINER_CREATED && s.ExitCode !== 0) {
    // Docker leaves a container whose start failed in "created" with an exit code: it ran and failed.
    state = ContainerState.CONTAINER_EXITED;
    reason = 'ContainerCannotRun';
    startedAt = created;
    finishedAt = created;
  }
  const imageName = dockerLabels[LabelKeys.image] ?? info.Config.Image;
  const imageRef = image?.RepoDigests?.[0] ?? info.Image;
  // Inspect's Mounts cannot say a bind is recursively read-only; the HostConfig it was created with can.
  const forcedRecursive = new Set(
    (info.HostConfig.Mounts ?? []).filter((m) => m.BindOptions?.ReadOnlyForceRecursive).map((m) => m.Target),
  );
  return {
    id: info.Id,
    metadata: containerMetadataFrom(dockerLabels, info.Name),
    state,
    createdAt: created,
    startedAt,
    finishedAt,
    exitCode: s.ExitCode,
    image: { image: imageName, annotations: {}, userSpecifiedImage: imageName, runtimeHandler: '', imageRef },
    imageRef,
    imageId: info.Image,
    reason,
    message: s.Error ?? '',
    labels,
    annotations,
    mounts: (info.Mounts ?? []).map((m) => ({
      containerPath: m.Destination,
      hostPath: m.Source,
      readonly: !m.RW,
      selinuxRelabel: false,
      propagation: propagationFromDocker(m.Propagation),
      uidMappings: [],
      gidMappings: [],
      recursiveReadOnly: forcedRecursive.has(m.Destination),
      image: undefined,
      imageSubPath: '',
      mountOptions: [],
    })),
    logPath: dockerLabels[LabelKeys.logPath] ?? '',
    resources: { linux: resourcesFromHostConfig(info.HostConfig), windows: undefined },
    user: undefined,
    stopSignal: signalFromDocker((info.Config as { StopSignal?: string }).StopSignal),
  };
}

/**
 * Whether Docker's `oom` event names an exited container whose State does not say OOMKilled. A
 * SIGKILLed one (137) may be an OOM kill whose event dockerd handles after the exit, so for it the
 * shim waits a moment (OomEvents.lateOom) unless Docker sent the SIGKILL itself; other exits never wait.
 */
async function oomEventAfterExit(ctx: ShimContext, info: ContainerInspect): Promise<boolean> {
  const s = info.State;
  if (toContainerState(s.Status) !== ContainerState.CONTAINER_EXITED || s.OOMKilled) return false;
  const startedAt = dockerTimeToNanos(s.StartedAt);
  if (s.ExitCode !== EXIT_SIGKILL) return ctx.ooms.seen(info.Id, startedAt);
  return ctx.ooms.lateOom(info.Id, startedAt, Number(dockerTimeToNanos(s.FinishedAt) / 1_000_000n));
}

/** ContainerStatus of a container, and the inspect it was made from. */
export async function getContainerStatus(
  ctx: ShimContext,
  id: string,
  field: string,
): Promise<{ status: ContainerStatus; info: ContainerInspect }> {
  const info = await getManaged(ctx, id, ContainerType.container, field);
  const [oomEvent] = await Promise.all([
    oomEventAfterExit(ctx, info),
    // Only a container that ran has a log to wait for: a created one's copier may be waiting for its start.
    toContainerState(info.State.Status) === ContainerState.CONTAINER_EXITED
      ? ctx.logs.drained(info.Id, LOG_DRAIN_MS)
      : undefined,
  ]);
  const image = await ctx.images.inspect(info.Image);
  return { status: containerStatusFromInspect(info, image, oomEvent), info };
}

export async function containerStatus(
  ctx: ShimContext,
  req: ContainerStatusRequest,
): Promise<Partial<ContainerStatusResponse>> {
  const { status, info: raw } = await getContainerStatus(ctx, req.containerId, 'container_id');
  return { status, info: req.verbose ? { info: verboseInfo(raw) } : {} };
}

/**
 * Verbose ContainerStatus's `info`, once per inspect: the inspect cache hands out the same object
 * until Docker says the container changed (inspects are replaced, never edited), and the kubelet
 * and critest ask for the status of an unchanged container over and over.
 */
const verboseInfos = new WeakMap<ContainerInspect, string>();
function verboseInfo(raw: ContainerInspect): string {
  let json = verboseInfos.get(raw);
  if (json === undefined) {
    json = JSON.stringify({
      sandboxID: raw.Config.Labels?.[LabelKeys.sandboxId],
      pid: raw.State.Pid,
      hostConfig: raw.HostConfig,
      config: {
        env: raw.Config.Env,
        user: raw.Config.User,
        cmd: raw.Config.Cmd,
        entrypoint: raw.Config.Entrypoint,
      },
    });
    verboseInfos.set(raw, json);
  }
  return json;
}
