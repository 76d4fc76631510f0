import type { DockerClient, DockerEvent, JsonStream } from '../docker/client.js';
import { jsonLines } from '../docker/stream.js';

const RESUBSCRIBE_MS = 1_000;

/**
 * A subscription to Docker's event stream that keeps a cache exact: `live` only while the stream
 * runs, `reset` whenever a subscription starts or breaks (events may have been missed, so the cache
 * must forget everything), and a new subscription a second after a break.
 */
export class DockerEventFeed {
  live = false;
  private stream: JsonStream | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly docker: DockerClient,
    private readonly filters: Record<string, string[]>,
    private readonly onEvent: (event: DockerEvent, raw: string) => void,
    private readonly reset: () => void,
  ) {}

  /** Subscribes; resolves once the subscription is live (or has failed, and will be retried). */
  async start(): Promise<void> {
    try {
      const stream = await this.docker.events(this.filters);
      if (this.closed) {
        stream.destroy();
        return;
      }
      this.stream = stream;
      this.live = true;
      // What was read before the subscription may have changed unseen since.
      this.reset();
      void this.consume(stream);
    } catch {
      this.scheduleRetry();
    }
  }

  private async consume(stream: AsyncIterable<Buffer | string>): Promise<void> {
    try {
      for await (const { value, raw } of jsonLines<DockerEvent>(stream)) this.onEvent(value, raw);
    } catch {
      // Stream broke: fall through to reset.
    }
    this.live = false;
    this.reset();
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.closed) return;
    this.retry = setTimeout(() => void this.start(), RESUBSCRIBE_MS);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.live = false;
    this.stream?.destroy();
  }
}
