import type { DockerClient, ImageInspect } from '../docker/client.js';
import { isDockerNotFound } from '../docker/errors.js';
import { DockerEventFeed } from './event_feed.js';

/**
 * Image inspects by the name they were asked with: an image id (ContainerStatus: the image's repo
 * digest is its image_ref) or a reference (ImageStatus, which critest and the kubelet ask before
 * every CreateContainer). An id names fixed content; only tags and digests change, and which image a
 * reference names changes with them. Each such change (pull, push, tag, untag, delete, load, import)
 * is an image event, on which the cache forgets everything; the shim's own pulls and removals forget
 * it too as they return (`changed`), before their event arrives. While the event stream is down
 * nothing is cached.
 */
export class ImageCache {
  private readonly byName = new Map<string, ImageInspect>();
  /** Bumped by every image event: an inspect that started before one must not be stored. */
  private generation = 0;
  private readonly feed: DockerEventFeed;

  constructor(private readonly docker: DockerClient) {
    this.feed = new DockerEventFeed(
      docker,
      { type: ['image'] },
      () => this.forgetAll(),
      () => this.forgetAll(),
    );
  }

  start(): Promise<void> {
    return this.feed.start();
  }

  /** The shim pulled or removed an image: forget everything, and refuse inspects begun before. */
  changed(): void {
    this.forgetAll();
  }

  private forgetAll(): void {
    this.generation++;
    this.byName.clear();
  }

  /** The inspect of the image an id or reference names, or undefined when there is none. */
  async inspect(name: string): Promise<ImageInspect | undefined> {
    const cached = this.feed.live ? this.byName.get(name) : undefined;
    if (cached) return cached;
    const generation = this.generation;
    try {
      const info = await this.docker.inspectImage(name);
      if (this.feed.live && generation === this.generation) {
        // The same answer serves the id: ContainerStatus asks by the id a create resolved the name to.
        this.byName.set(name, info);
        this.byName.set(info.Id, info);
      }
      return info;
    } catch (err) {
      if (isDockerNotFound(err)) return undefined;
      throw err;
    }
  }

  close(): void {
    this.feed.close();
    this.forgetAll();
  }
}
