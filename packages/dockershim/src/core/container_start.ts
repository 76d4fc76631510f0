import type { StartContainerRequest, StartContainerResponse } from '@kh/cri-api';
import { FailedPreconditionError, InternalError } from '@kh/cri-api';
import { dockerMessage, dockerStatusCode } from '../docker/errors.js';
import { createLogFile } from '../logs/copier.js';
import { ContainerType, LabelKeys } from '../model/labels.js';
import type { ShimContext } from './context.js';
import { toCriError } from './errors.js';
import { findManaged, getManaged } from './lookup.js';

/** StartContainer: start a created container and begin copying its output to the CRI log file. */
export async function startContainer(
  ctx: ShimContext,
  req: StartContainerRequest,
): Promise<Partial<StartContainerResponse>> {
  const info = await getManaged(ctx, req.containerId, ContainerType.container, 'container_id');
  if (info.State.Status !== 'created') {
    throw new FailedPreconditionError(
      `container ${JSON.stringify(req.containerId)} is ${info.State.Status}, not created`,
    );
  }
  const logPath = info.Config.Labels?.[LabelKeys.logPath];
  // A client may read the log as soon as StartContainer returns, before the copier wrote anything.
  if (logPath) {
    await createLogFile(logPath).catch((err: Error) => {
      throw new InternalError(`cannot create the log file ${JSON.stringify(logPath)}: ${err.message}`);
    });
  }
  let answered = (): void => undefined;
  const answer = new Promise<void>((resolve) => {
    answered = resolve;
  });
  // The copier is there before the start: a quick process can exit, and a status (a relist, the
  // exit's event) find it exited, before this call reads Docker's answer; that status then waits
  // for the log as for any exited container. It reads once the start has answered, whatever the
  // answer: one lost on the way (a dropped connection, a busy dockerd) may still have run the
  // process, and a failed start may have printed why. As with cri-dockerd, which links the CRI
  // path to Docker's own log, the file holds what Docker logged.
  if (logPath) ctx.logs.follow(info.Id, logPath, info.Config.Tty, answer);
  try {
    await ctx.docker.startContainer(info.Id);
  } catch (err) {
    if (dockerStatusCode(err) === 500) {
      // The runtime could not run it (bad command, bad mount...): Docker's message says why.
      throw new InternalError(
        `failed to start container ${JSON.stringify(req.containerId)}: ${dockerMessage(err)}`,
      );
    }
    throw toCriError(err, `start container ${JSON.stringify(req.containerId)}`);
  } finally {
    // Started, or failed and left with an exit code: either way its status reads differently now,
    // and Docker's event saying so can arrive after this call has returned.
    ctx.inspects.evict(info.Id);
    answered();
  }
  // The client's ContainerStatus comes next (the kubelet's relist, critest): inspect the running
  // container now, so that call is answered from the cache. The start is done whatever this says.
  await findManaged(ctx, info.Id, ContainerType.container).catch(() => undefined);
  return {};
}
