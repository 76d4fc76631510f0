import {
  type ContainerEventResponse,
  ContainerEventType,
  type ContainerStatus,
  type GetEventsRequest,
  UnavailableError,
} from '@kh/cri-api';
import type { DockerEvent } from '../docker/client.js';
import { eventTimeNanos, jsonLines } from '../docker/stream.js';
import { ContainerType, LabelKeys } from '../model/labels.js';
import { listPodContainerItems } from './container_list.js';
import { getContainerStatus } from './container_status.js';
import type { ShimContext } from './context.js';
import { docker } from './errors.js';
import { findManaged } from './lookup.js';
import { sandboxIps } from './pod_network.js';
import { sandboxStatusFromInspect } from './sandbox_status.js';

const EVENT_TYPES: Record<string, ContainerEventType> = {
  create: ContainerEventType.CONTAINER_CREATED_EVENT,
  start: ContainerEventType.CONTAINER_STARTED_EVENT,
  die: ContainerEventType.CONTAINER_STOPPED_EVENT,
  destroy: ContainerEventType.CONTAINER_DELETED_EVENT,
};

/** The pod's state at the time of the event: sandbox status plus the status of each container. */
async function podSnapshot(
  ctx: ShimContext,
  sandboxId: string,
): Promise<Pick<ContainerEventResponse, 'podSandboxStatus' | 'containersStatuses'>> {
  const sandbox = sandboxId
    ? await findManaged(ctx, sandboxId, ContainerType.sandbox).catch(() => undefined)
    : undefined;
  if (!sandbox) return { podSandboxStatus: undefined, containersStatuses: [] };
  const items = await listPodContainerItems(ctx, sandbox.Id);
  const statuses = await Promise.all(
    items.map((i) =>
      getContainerStatus(ctx, i.Id, 'container_id').then(
        (r) => r.status,
        () => undefined,
      ),
    ),
  );
  return {
    podSandboxStatus: sandboxStatusFromInspect(sandbox, await sandboxIps(ctx, sandbox)),
    containersStatuses: statuses.filter((s): s is ContainerStatus => s !== undefined),
  };
}

/**
 * GetContainerEvents: Docker's event stream for shim-managed containers (sandboxes included), as CRI
 * created / started / stopped / deleted events, each with a snapshot of its pod.
 */
export async function* getContainerEvents(
  ctx: ShimContext,
  _req: GetEventsRequest,
  signal: AbortSignal,
): AsyncGenerator<ContainerEventResponse> {
  const stream = await docker('subscribe to docker events', () =>
    ctx.docker.events({ type: ['container'], label: [LabelKeys.containerType] }),
  );
  const onAbort = () => stream.destroy();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const { value, raw } of jsonLines<DockerEvent>(stream)) {
      const type = EVENT_TYPES[value.Action ?? ''];
      const id = value.Actor?.ID;
      if (type === undefined || !id) continue;
      const attrs = value.Actor?.Attributes ?? {};
      const sandboxId =
        attrs[LabelKeys.containerType] === ContainerType.sandbox ? id : (attrs[LabelKeys.sandboxId] ?? '');
      // The inspect cache hears of this event on its own subscription, maybe later: the snapshot
      // must not show the container as it was before the event.
      ctx.inspects.heard(value.Action, id);
      yield {
        containerId: id,
        containerEventType: type,
        createdAt: eventTimeNanos(raw, value.time),
        ...(await podSnapshot(ctx, sandboxId)),
      };
    }
  } catch (err) {
    if (!signal.aborted) throw new UnavailableError(`docker event stream failed: ${(err as Error).message}`);
  } finally {
    signal.removeEventListener('abort', onAbort);
    stream.destroy();
  }
  if (!signal.aborted) throw new UnavailableError('docker event stream ended (dockerd stopped?)');
}
