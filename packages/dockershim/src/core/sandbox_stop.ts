import type { StopPodSandboxRequest, StopPodSandboxResponse } from '@kh/cri-api';
import { dockerStatusCode, isDockerNotFound } from '../docker/errors.js';
import { findSandboxWithContainers } from './container_list.js';
import { untilListedStopped } from './container_stop.js';
import type { ShimContext } from './context.js';
import { required, toCriError } from './errors.js';
import { tearDownPodNetwork } from './pod_network.js';

/** Stops a container at once (SIGKILL after a zero grace period). Already stopped or gone is fine. */
export async function stopNow(ctx: ShimContext, id: string): Promise<void> {
  try {
    await ctx.docker.stopContainer(id, 0);
  } catch (err) {
    const code = dockerStatusCode(err);
    if (code === 304 || isDockerNotFound(err)) return;
    throw toCriError(err, `stop container ${JSON.stringify(id)}`);
  } finally {
    // Its die event can arrive after this call has returned.
    ctx.inspects.evict(id);
  }
  await untilListedStopped(ctx, id);
}

/**
 * StopPodSandbox: tear the pod network down (CNI DEL, while the pause process still holds the
 * namespace), kill whatever still runs in the pod (kubelet has already given its containers their
 * grace period), then the pause container, which releases a Docker network's pod IP. Idempotent:
 * an unknown or already stopped sandbox is not an error.
 */
export async function stopPodSandbox(
  ctx: ShimContext,
  req: StopPodSandboxRequest,
): Promise<Partial<StopPodSandboxResponse>> {
  required(req.podSandboxId, 'pod_sandbox_id');
  const { sandboxId, containers } = await findSandboxWithContainers(ctx, req.podSandboxId);
  // A pause container removed behind the shim's back may still have its network to release.
  await tearDownPodNetwork(ctx, sandboxId ?? req.podSandboxId);
  if (!sandboxId) return {};
  await Promise.all(containers.filter((c) => c.State === 'running').map((c) => stopNow(ctx, c.Id)));
  await stopNow(ctx, sandboxId);
  return {};
}
