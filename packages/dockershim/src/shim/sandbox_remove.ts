import type { RemovePodSandboxRequest, RemovePodSandboxResponse } from '@kh/cri-api';
import { listPodContainerItems } from './container_list.js';
import { removeDockerContainer } from './container_remove.js';
import type { ShimContext } from './context.js';
import { required } from './errors.js';
import { ContainerType } from './labels.js';
import { findManaged } from './lookup.js';

/**
 * RemovePodSandbox: remove every container of the pod, then the pause container, running or not.
 * Idempotent: an unknown sandbox is not an error. Log files stay: kubelet owns the log directory.
 */
export async function removePodSandbox(
  ctx: ShimContext,
  req: RemovePodSandboxRequest,
): Promise<Partial<RemovePodSandboxResponse>> {
  required(req.podSandboxId, 'pod_sandbox_id');
  const sandbox = await findManaged(ctx, req.podSandboxId, ContainerType.sandbox);
  if (!sandbox) return {};
  const containers = await listPodContainerItems(ctx, sandbox.Id);
  await Promise.all(containers.map((c) => removeDockerContainer(ctx, c.Id)));
  await removeDockerContainer(ctx, sandbox.Id);
  return {};
}
