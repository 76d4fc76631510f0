import type { RemoveContainerRequest, RemoveContainerResponse } from '@kh/cri-api';
import { dockerStatusCode, isDockerNotFound } from '../docker/errors.js';
import { ContainerType } from '../model/labels.js';
import type { ShimContext } from './context.js';
import { required, toCriError } from './errors.js';
import { findManaged } from './lookup.js';

/** Force-removes a Docker container and its anonymous volumes; gone already is fine. */
export async function removeDockerContainer(ctx: ShimContext, id: string): Promise<void> {
  ctx.logs.forget(id);
  try {
    await ctx.docker.removeContainer(id);
  } catch (err) {
    // 409 "removal already in progress": someone else is removing it.
    if (dockerStatusCode(err) === 409) return;
    if (!isDockerNotFound(err)) throw toCriError(err, `remove container ${JSON.stringify(id)}`);
  } finally {
    // Even a failed removal may have left it dead or half removed.
    ctx.inspects.evict(id);
  }
  ctx.known.forget(id);
  ctx.cpu.forget(id);
}

/**
 * RemoveContainer: remove a container in any state (a running one is killed first). Idempotent.
 * The CRI log file stays: kubelet removes it with the container's log directory.
 */
export async function removeContainer(
  ctx: ShimContext,
  req: RemoveContainerRequest,
): Promise<Partial<RemoveContainerResponse>> {
  required(req.containerId, 'container_id');
  // A container the shim knows needs no inspect first: removing one already gone is a 404, fine here.
  const id =
    ctx.known.kindOf(req.containerId) === ContainerType.container
      ? req.containerId
      : (await findManaged(ctx, req.containerId, ContainerType.container))?.Id;
  if (id) await removeDockerContainer(ctx, id);
  return {};
}
