import type { DockerClient, ImageInspect } from '../docker/client.js';
import { isDockerNotFound } from '../docker/errors.js';
import { DockerEventFeed } from './event_feed.js';

/**
 * Image inspects by image id, for ContainerStatus (the image's repo digest is its image_ref). An
 * image id names fixed content; only its tags and digests change, and each such change (pull, push,
 * tag, untag, delete, load, import) is an image event, on which the cache forgets everything. While
 * the event stream is down nothing is cached.
 */
export class ImageCache {
  private readonly byId = new Map<string, ImageInspect>();
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

  private forgetAll(): void {
    this.generation++;
    this.byId.clear();
  }

  /** The image's inspect, or undefined when the image is gone. */
  async inspect(id: string): Promise<ImageInspect | undefined> {
    const cached = this.feed.live ? this.byId.get(id) : undefined;
    if (cached) return cached;
    const generation = this.generation;
    try {
      const info = await this.docker.inspectImage(id);
      if (this.feed.live && generation === this.generation) this.byId.set(id, info);
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
