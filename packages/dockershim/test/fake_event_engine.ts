import { PassThrough } from 'node:stream';
import type { DockerClient } from '../src/docker/client.js';

/**
 * Just what an event-fed cache asks of the Engine: an event stream the test writes to, and the
 * filters it subscribed with (`eventsFail`: the subscription itself fails).
 */
export function fakeEventEngine(opts: { eventsFail?: boolean } = {}) {
  const events = new PassThrough();
  const calls = { filters: undefined as unknown };
  const docker = {
    events: async (filters: unknown) => {
      calls.filters = filters;
      if (opts.eventsFail) throw new Error('events down');
      return events;
    },
  };
  return { docker: docker as unknown as DockerClient, events, calls };
}

/** Lets the stream's pending writes reach the feed. */
export const flush = () => new Promise((r) => setImmediate(r));
