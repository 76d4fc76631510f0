import { ContainerEventType, isUnimplemented } from '@kh/cri-api';
import { expectEqual } from '../framework/assert.js';
import { AssertionError, defineGroup, Skip, waitFor } from '../framework/framework.js';

export const events = defineGroup('events', {
  'GetContainerEvents streams created, started, stopped and deleted': async (ctx) => {
    const pod = await ctx.runPod();
    const abort = new AbortController();
    const seen: { id: string; type: ContainerEventType }[] = [];
    let streamError: unknown;
    const reading = (async () => {
      for await (const e of ctx.client.getContainerEvents({}, { signal: abort.signal })) {
        seen.push({ id: e.containerId, type: e.containerEventType });
      }
    })().catch((err: unknown) => {
      if (!abort.signal.aborted) streamError = err;
    });
    try {
      // The subscription is live once a probe container's event comes through (in another pod).
      const probePod = await ctx.runPod();
      for (let n = 0; ; n++) {
        const probe = await ctx.createContainer(probePod, `probe${n}`);
        const arrived = await waitFor(
          async () => {
            if (isUnimplemented(streamError)) {
              throw new Skip(`GetContainerEvents is not implemented: ${(streamError as Error).message}`);
            }
            return seen.some((e) => e.id === probe) ? true : undefined;
          },
          'an event of a probe container',
          1_000,
        ).catch((err: unknown) => {
          if (err instanceof Skip) throw err;
          return false;
        });
        if (arrived) break;
        if (n >= 20) throw new AssertionError('no event arrived for 20 probe containers');
      }
      const id = await ctx.startedContainer(pod, 'evented');
      await ctx.client.stopContainer({ containerId: id, timeout: 0n });
      await ctx.client.removeContainer({ containerId: id });
      await waitFor(async () => {
        if (isUnimplemented(streamError))
          throw new Skip(`GetContainerEvents is not implemented: ${(streamError as Error).message}`);
        if (streamError) throw streamError;
        return seen.some((e) => e.id === id && e.type === ContainerEventType.CONTAINER_DELETED_EVENT)
          ? true
          : undefined;
      }, 'the deleted event');
      expectEqual(
        seen.filter((e) => e.id === id).map((e) => ContainerEventType[e.type]),
        [
          'CONTAINER_CREATED_EVENT',
          'CONTAINER_STARTED_EVENT',
          'CONTAINER_STOPPED_EVENT',
          'CONTAINER_DELETED_EVENT',
        ],
        'events of the container, in order',
      );
    } finally {
      abort.abort();
      await reading;
    }
  },
});
