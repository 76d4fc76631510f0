import { access } from 'node:fs/promises';
import {
  FailedPreconditionError,
  type ReopenContainerLogRequest,
  type ReopenContainerLogResponse,
} from '@kh/cri-api';
import { ContainerType, LabelKeys } from '../model/labels.js';
import type { ShimContext } from './context.js';
import { getManaged } from './lookup.js';

// The CRI side of container logs; the copying itself is LogManager's (logs.ts).

/**
 * ReopenContainerLog: kubelet renamed the log file away (rotation) and asks for a fresh one at the
 * same path. Only a running container has a log being written, and only its own shim writes it.
 */
export async function reopenContainerLog(
  ctx: ShimContext,
  req: ReopenContainerLogRequest,
): Promise<Partial<ReopenContainerLogResponse>> {
  const info = await getManaged(ctx, req.containerId, ContainerType.container, 'container_id');
  if (!info.State.Running) {
    throw new FailedPreconditionError(`container ${JSON.stringify(req.containerId)} is not running`);
  }
  const labels = info.Config.Labels ?? {};
  const path = labels[LabelKeys.logPath];
  if (!path)
    throw new FailedPreconditionError(`container ${JSON.stringify(req.containerId)} has no log path`);
  const owner = labels[LabelKeys.shimInstance];
  if (owner !== ctx.instance) {
    throw new FailedPreconditionError(
      `the log of container ${JSON.stringify(req.containerId)} is written by the shim at ${owner ?? '(unknown)'}, not this one`,
    );
  }
  ctx.logs.follow(info.Id, path, info.Config.Tty);
  await ctx.logs.reopen(info.Id);
  return {};
}

/**
 * After a shim (re)start: resume copying for the containers this shim created. Running ones are
 * followed again; one that exited while no shim was copying gets its remaining output, provided its
 * log file is still there (a file kubelet removed is not brought back).
 */
export async function resumeLogCopiers(ctx: ShimContext): Promise<number> {
  const items = await ctx.docker.listContainers({
    all: true,
    filters: {
      label: [
        `${LabelKeys.containerType}=${ContainerType.container}`,
        `${LabelKeys.shimInstance}=${ctx.instance}`,
      ],
      status: ['running', 'exited'],
    },
  });
  let resumed = 0;
  for (const item of items) {
    const path = item.Labels?.[LabelKeys.logPath];
    if (!path) continue;
    const fileKept = await access(path).then(
      () => true,
      () => false,
    );
    if (item.State !== 'running' && !fileKept) continue;
    const info = await ctx.docker.inspectContainer(item.Id);
    ctx.logs.follow(item.Id, path, info.Config.Tty);
    resumed++;
  }
  return resumed;
}
