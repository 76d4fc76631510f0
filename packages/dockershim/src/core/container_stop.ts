import type { StopContainerRequest, StopContainerResponse } from '@kh/cri-api';
import { dockerStatusCode, isDockerNotFound } from '../docker/errors.js';
import { ContainerType } from '../model/labels.js';
import type { ShimContext } from './context.js';
import { required, toCriError } from './errors.js';
import { findManaged } from './lookup.js';

/**
 * StopContainer: the stop signal, then SIGKILL after `timeout` seconds. Idempotent: stopping an
 * unknown or already stopped container is not an error.
 */
export async function stopContainer(
  ctx: ShimContext,
  req: StopContainerRequest,
): Promise<Partial<StopContainerResponse>> {
  required(req.containerId, 'container_id');
  let id = req.containerId;
  // A container the shim knows needs no inspect: Docker answers 304 (not running) or 404 (gone).
  if (ctx.known.kindOf(id) !== ContainerType.container) {
    const info = await findManaged(ctx, id, ContainerType.container);
    if (!info || !info.State.Running) return {};
    id = info.Id;
  }
  const t = Math.max(0, Number(req.timeout));
  try {
    await ctx.docker.stopContainer(id, t);
  } catch (err) {
    if (dockerStatusCode(err) === 304 || isDockerNotFound(err)) return {};
    throw toCriError(err, `stop container ${JSON.stringify(req.containerId)}`);
  } finally {
    ctx.inspects.evict(id);
  }
  return {};
}
