import type { UpdateContainerResourcesRequest, UpdateContainerResourcesResponse } from '@kh/cri-api';
import type { ResourceUpdate } from '../docker/client.js';
import { ContainerType } from '../model/labels.js';
import type { ShimContext } from './context.js';
import { docker } from './errors.js';
import { getManaged } from './lookup.js';

/** UpdateContainerResources: CPU and memory limits of a live container (docker update). */
export async function updateContainerResources(
  ctx: ShimContext,
  req: UpdateContainerResourcesRequest,
): Promise<Partial<UpdateContainerResourcesResponse>> {
  const info = await getManaged(ctx, req.containerId, ContainerType.container, 'container_id');
  const r = req.linux;
  if (!r) return {};
  const memory = Number(r.memoryLimitInBytes);
  const swap = Number(r.memorySwapLimitInBytes);
  const update: ResourceUpdate = {};
  if (r.cpuShares > 0n) update.CpuShares = Number(r.cpuShares);
  if (r.cpuQuota !== 0n) update.CpuQuota = Number(r.cpuQuota);
  if (r.cpuPeriod > 0n) update.CpuPeriod = Number(r.cpuPeriod);
  if (r.cpusetCpus) update.CpusetCpus = r.cpusetCpus;
  if (r.cpusetMems) update.CpusetMems = r.cpusetMems;
  if (memory > 0) {
    update.Memory = memory;
    update.MemorySwap = swap > 0 ? swap : memory;
  }
  try {
    await docker(`update container ${JSON.stringify(req.containerId)}`, () =>
      ctx.docker.updateContainer(info.Id, update),
    );
  } finally {
    ctx.inspects.evict(info.Id);
  }
  return {};
}
