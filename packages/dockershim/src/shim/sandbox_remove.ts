import type { RemovePodSandboxRequest, RemovePodSandboxResponse } from '@kh/cri-api';
import { findSandboxWithContainers } from './container_list.js';
import { removeDockerContainer } from './container_remove.js';
import type { ShimContext } from './context.js';
import { required } from './errors.js';

/**
 * RemovePodSandbox: remove every container of the pod, then the pause container, running or not.
 * Idempotent: an unknown sandbox is not an error. Log files stay: kubelet owns the log directory.
 */
export async function removePodSandbox(
  ctx: ShimContext,
  req: RemovePodSandboxRequest,
): Promise<Partial<RemovePodSandboxResponse>> {
  required(req.podSandboxId, 'pod_sandbox_id');
  const found = await findSandboxWithContainers(ctx, req.podSandboxId);
  if (!found) return {};
  const { sandbox, containers } = found;
  ctx.sandboxes.evict(sandbox.Id);
  await Promise.all(containers.map((c) => removeDockerContainer(ctx, c.Id)));
  await removeDockerContainer(ctx, sandbox.Id);
  return {};
}
