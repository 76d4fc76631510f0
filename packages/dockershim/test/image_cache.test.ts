import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { DockerClient } from '../src/docker/client.js';
import { ImageCache } from '../src/state/image_cache.js';

/** Just what ImageCache asks of the Engine: an event stream it controls and counted image inspects. */
function fakeDocker(opts: { eventsFail?: boolean } = {}) {
  const events = new PassThrough();
  const digests = new Map<string, string[]>([['sha256:a', ['busybox@sha256:1']]]);
  const calls = { inspect: 0, filters: undefined as unknown };
  const docker = {
    events: async (filters: unknown) => {
      calls.filters = filters;
      if (opts.eventsFail) throw new Error('events down');
      return events;
    },
    inspectImage: async (id: string) => {
      calls.inspect++;
      const repoDigests = digests.get(id);
      if (!repoDigests) throw Object.assign(new Error('No such image'), { statusCode: 404 });
      return { Id: id, RepoDigests: [...repoDigests] };
    },
  };
  return { docker: docker as unknown as DockerClient, events, digests, calls };
}

const flush = () => new Promise((r) => setImmediate(r));
let cache: ImageCache | undefined;
afterEach(() => cache?.close());

describe('ImageCache', () => {
  it('inspects an image once while no image event comes, and again after one', async () => {
    const f = fakeDocker();
    cache = new ImageCache(f.docker);
    await cache.start();
    expect(f.calls.filters).toEqual({ type: ['image'] });
    expect((await cache.inspect('sha256:a'))?.RepoDigests).toEqual(['busybox@sha256:1']);
    expect((await cache.inspect('sha256:a'))?.RepoDigests).toEqual(['busybox@sha256:1']);
    expect(f.calls.inspect).toBe(1);
    // A push adds a digest, and says so with an event.
    f.digests.set('sha256:a', ['busybox@sha256:1', 'registry:5000/busybox@sha256:1']);
    f.events.write(
      `${JSON.stringify({ Type: 'image', Action: 'push', Actor: { ID: 'registry:5000/busybox' } })}\n`,
    );
    await flush();
    expect((await cache.inspect('sha256:a'))?.RepoDigests).toHaveLength(2);
    expect(f.calls.inspect).toBe(2);
  });

  it("serves a reference's inspect for its image id too, and forgets both on the shim's own change", async () => {
    const f = fakeDocker();
    f.digests.set('busybox:1.28', ['busybox@sha256:1']);
    cache = new ImageCache(f.docker);
    await cache.start();
    // ImageStatus asks by name; ContainerStatus then by the id Docker resolved it to.
    expect(await cache.inspect('busybox:1.28')).toMatchObject({ Id: 'busybox:1.28' });
    expect(await cache.inspect('busybox:1.28')).toMatchObject({ Id: 'busybox:1.28' });
    expect(f.calls.inspect).toBe(1);
    // A pull or removal by the shim forgets at once, and refuses an inspect begun before it.
    const inFlight = cache.inspect('sha256:a');
    cache.changed();
    await inFlight;
    f.digests.delete('busybox:1.28');
    expect(await cache.inspect('busybox:1.28')).toBeUndefined();
    await cache.inspect('sha256:a');
    expect(f.calls.inspect).toBe(4);
  });

  it('answers undefined for a missing image and does not remember that', async () => {
    const f = fakeDocker();
    cache = new ImageCache(f.docker);
    await cache.start();
    expect(await cache.inspect('sha256:b')).toBeUndefined();
    f.digests.set('sha256:b', []);
    expect(await cache.inspect('sha256:b')).toMatchObject({ Id: 'sha256:b' });
  });

  it('caches nothing while the event stream is down, and forgets all when it breaks', async () => {
    const down = fakeDocker({ eventsFail: true });
    cache = new ImageCache(down.docker);
    await cache.start();
    await cache.inspect('sha256:a');
    await cache.inspect('sha256:a');
    expect(down.calls.inspect).toBe(2);
    cache.close();

    const f = fakeDocker();
    cache = new ImageCache(f.docker);
    await cache.start();
    await cache.inspect('sha256:a');
    f.events.destroy(new Error('engine restarted'));
    await flush();
    await cache.inspect('sha256:a');
    expect(f.calls.inspect).toBe(2);
  });
});
