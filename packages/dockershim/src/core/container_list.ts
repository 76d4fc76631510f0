import type { Container, ListContainersRequest, ListContainersResponse } from '@kh/cri-api';
import type { ContainerSummary } from '../docker/client.js';
import {
  ContainerType,
  containerMetadataFrom,
  createdAtFrom,
  LabelKeys,
  labelFilters,
  splitDockerLabels,
} from '../model/labels.js';
import type { ShimContext } from './context.js';
import { toContainerState, unixSecondsToNanos } from './convert.js';
import { docker } from './errors.js';
import { findManaged } from './lookup.js';

/** A container as `docker ps` shows it. */
export function containerFromListItem(item: ContainerSummary): Container {
  const dockerLabels = item.Labels ?? {};
  const { labels, annotations } = splitDockerLabels(dockerLabels);
  const image = dockerLabels[LabelKeys.image] ?? item.Image;
  return {
    id: item.Id,
    podSandboxId: dockerLabels[LabelKeys.sandboxId] ?? '',
    metadata: containerMetadataFrom(dockerLabels, item.Names[0] ?? ''),
    image: { image, annotations: {}, userSpecifiedImage: image, runtimeHandler: '', imageRef: item.ImageID },
    imageRef: item.ImageID,
    imageId: item.ImageID,
    state: toContainerState(item.State),
    createdAt: createdAtFrom(dockerLabels, unixSecondsToNanos(item.Created)),
    labels,
    annotations,
  };
}

/** Docker list items of application containers matching a label selector (and sandbox, if given). */
export async function listContainerItems(
  ctx: ShimContext,
  selector: Record<string, string> | undefined,
  opts: { size?: boolean } = {},
): Promise<ContainerSummary[]> {
  return docker('list containers', () =>
    ctx.docker.listContainers({
      all: true,
      size: opts.size ?? false,
      filters: { label: labelFilters(ContainerType.container, selector) },
    }),
  );
}

/** Every application container of one sandbox. */
export function listPodContainerItems(ctx: ShimContext, sandboxId: string): Promise<ContainerSummary[]> {
  return listContainerItems(ctx, { [LabelKeys.sandboxId]: sandboxId });
}

/**
 * A sandbox's full id (undefined when `id` names no sandbox) and the containers labelled with it. A
 * sandbox the shim knows needs no inspect; otherwise the inspect and the listing run in parallel
 * (kubelet passes full ids), and only a prefix id needs a second listing. The containers are found
 * by their label even when the sandbox itself is gone, so a removal that failed half-way can be
 * finished by calling again.
 */
export async function findSandboxWithContainers(
  ctx: ShimContext,
  id: string,
): Promise<{ sandboxId: string | undefined; containers: ContainerSummary[] }> {
  const [sandboxId, containers] = await Promise.all([
    ctx.known.kindOf(id) === ContainerType.sandbox
      ? id
      : findManaged(ctx, id, ContainerType.sandbox).then((info) => info?.Id),
    listPodContainerItems(ctx, id),
  ]);
  return {
    sandboxId,
    containers:
      sandboxId === undefined || sandboxId === id ? containers : await listPodContainerItems(ctx, sandboxId),
  };
}

/** ListContainers with every CRI filter: id and sandbox id by prefix, state, label selector. */
export async function listContainers(
  ctx: ShimContext,
  req: ListContainersRequest,
): Promise<Partial<ListContainersResponse>> {
  const f = req.filter;
  const containers = (await listContainerItems(ctx, f?.labelSelector)).map(containerFromListItem);
  return {
    containers: containers.filter(
      (c) =>
        (!f?.id || c.id.startsWith(f.id)) &&
        (!f?.podSandboxId || c.podSandboxId.startsWith(f.podSandboxId)) &&
        (f?.state === undefined || c.state === f.state.state),
    ),
  };
}
