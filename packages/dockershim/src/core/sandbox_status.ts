import type {
  ListPodSandboxRequest,
  ListPodSandboxResponse,
  PodSandbox,
  PodSandboxStatus,
  PodSandboxStatusRequest,
  PodSandboxStatusResponse,
} from '@kh/cri-api';
import type { ContainerInspect, ContainerSummary } from '../docker/client.js';
import {
  ContainerType,
  createdAtFrom,
  LabelKeys,
  labelFilters,
  sandboxMetadataFrom,
  splitDockerLabels,
} from '../model/labels.js';
import type { ShimContext } from './context.js';
import {
  dockerTimeToNanos,
  nowNanos,
  sandboxNamespaceOptions,
  toSandboxState,
  unixSecondsToNanos,
} from './convert.js';
import { docker } from './errors.js';
import { getManaged } from './lookup.js';
import { sandboxIps } from './pod_network.js';

/** PodSandboxStatus rebuilt from the pause container and the pod's IPs (sandboxIps), IPv4 first. */
export function sandboxStatusFromInspect(info: ContainerInspect, ips: readonly string[]): PodSandboxStatus {
  const dockerLabels = info.Config.Labels ?? {};
  const { labels, annotations } = splitDockerLabels(dockerLabels);
  return {
    id: info.Id,
    metadata: sandboxMetadataFrom(dockerLabels, info.Name),
    state: toSandboxState(info.State.Status),
    createdAt: createdAtFrom(dockerLabels, dockerTimeToNanos(info.Created)),
    network: { ip: ips[0] ?? '', additionalIps: ips.slice(1).map((ip) => ({ ip })) },
    linux: { namespaces: { options: sandboxNamespaceOptions(info.HostConfig) } },
    labels,
    annotations,
    runtimeHandler: dockerLabels[LabelKeys.runtimeHandler] ?? '',
  };
}

export async function podSandboxStatus(
  ctx: ShimContext,
  req: PodSandboxStatusRequest,
): Promise<Partial<PodSandboxStatusResponse>> {
  const info = await getManaged(ctx, req.podSandboxId, ContainerType.sandbox, 'pod_sandbox_id');
  const info_: Record<string, string> = {};
  if (req.verbose) {
    info_.info = JSON.stringify({
      pid: info.State.Pid,
      image: info.Config.Image,
      hostname: info.Config.Hostname,
      networkMode: info.HostConfig.NetworkMode,
      cgroupParent: info.HostConfig.CgroupParent,
      resolvConfPath: info.ResolvConfPath,
    });
  }
  return {
    status: sandboxStatusFromInspect(info, await sandboxIps(ctx, info)),
    info: info_,
    timestamp: nowNanos(),
  };
}

/** A sandbox as `docker ps` shows it; the fields list results carry without one inspect per item. */
export function sandboxFromListItem(item: ContainerSummary): PodSandbox {
  const dockerLabels = item.Labels ?? {};
  const { labels, annotations } = splitDockerLabels(dockerLabels);
  return {
    id: item.Id,
    metadata: sandboxMetadataFrom(dockerLabels, item.Names[0] ?? ''),
    state: toSandboxState(item.State),
    createdAt: createdAtFrom(dockerLabels, unixSecondsToNanos(item.Created)),
    labels,
    annotations,
    runtimeHandler: dockerLabels[LabelKeys.runtimeHandler] ?? '',
  };
}

/** All sandboxes matching a CRI label selector (Docker filters the labels). */
export async function listSandboxItems(
  ctx: ShimContext,
  selector: Record<string, string> | undefined,
): Promise<ContainerSummary[]> {
  return docker('list sandboxes', () =>
    ctx.docker.listContainers({
      all: true,
      filters: { label: labelFilters(ContainerType.sandbox, selector) },
    }),
  );
}

export async function listPodSandbox(
  ctx: ShimContext,
  req: ListPodSandboxRequest,
): Promise<Partial<ListPodSandboxResponse>> {
  const f = req.filter;
  const items = (await listSandboxItems(ctx, f?.labelSelector)).map(sandboxFromListItem);
  return {
    items: items.filter(
      (s) => (!f?.id || s.id.startsWith(f.id)) && (f?.state === undefined || s.state === f.state.state),
    ),
  };
}
