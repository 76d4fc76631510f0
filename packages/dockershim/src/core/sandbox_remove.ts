import type { RemovePodSandboxRequest, RemovePodSandboxResponse } from '@kh/cri-api';
import { findSandboxWithContainers } from './container_list.js';
import { removeDockerContainer } from './container_remove.js';
import type { ShimContext } from './context.js';
import { required } from './errors.js';
import { tearDownPodNetwork } from './pod_network.js';

/**
 * RemovePodSandbox: tear the pod network down if StopPodSandbox did not, then remove every
 * container of the pod and the pause container, running or not, all at once: the containers are found by their sandbox label, so if one removal fails, a second call
 * finds what is left even with the pause container gone. Idempotent: an unknown sandbox is not an
 * error. Log files stay: kubelet owns the log directory.
 */
export async function removePodSandbox(
  ctx: ShimContext,
  req: RemovePodSandboxRequest,
): Promise<Partial<RemovePodSandboxResponse>> {
  required(req.podSandboxId, 'pod_sandbox_id');
  const { sandboxId, containers } = await findSandboxWithContainers(ctx, req.podSandboxId);
  await tearDownPodNetwork(ctx, sandboxId ?? req.podSandboxId);
  const ids = containers.map((c) => c.Id);
  if (sandboxId) ids.push(sandboxId);
  await Promise.all(ids.map((id) => removeDockerContainer(ctx, id)));
  return {};
}
