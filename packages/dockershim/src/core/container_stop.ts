import { setTimeout as sleep } from 'node:timers/promises';
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
  await untilListedStopped(ctx, id);
  return {};
}

/** How long a stop waits for Docker's list to catch up before it returns anyway. */
const LISTED_STOPPED_WAIT_MS = 2_000;

/**
 * Returns once Docker's container list no longer shows `id` running. Docker's stop returns when
 * the container's state says stopped, but `docker ps` reads a view the daemon updates a moment
 * later (handleContainerExit: SetStopped wakes the stop, then CheckpointTo the replica), so a
 * List right after a Stop could still show it running; the CRI's callers (a relist, critest's
 * state filters) expect a stop to be visible once it returned. Usually one list call.
 */
export async function untilListedStopped(ctx: ShimContext, id: string): Promise<void> {
  const deadline = Date.now() + LISTED_STOPPED_WAIT_MS;
  for (;;) {
    // The stop succeeded: a failing list must not turn it into an error.
    const listed = await ctx.docker.listContainers({ all: true, filters: { id: [id] } }).catch(() => []);
    if (listed[0]?.State !== 'running' || Date.now() >= deadline) return;
    await sleep(10);
  }
}
