import type Dockerode from 'dockerode';
import { jsonLines } from './docker_stream.js';
import { ContainerType, LabelKeys } from './labels.js';

const RESUBSCRIBE_MS = 1_000;

/**
 * Ready sandboxes by id, so CreateContainer (called for every container of a new pod) need not
 * inspect the pause container each time. Docker's event stream evicts a sandbox the moment its pause
 * container dies; while that stream is down the cache answers nothing, so it is never trusted blind.
 * A stale hit is harmless anyway: Docker itself rejects joining a removed container.
 */
export class SandboxCache {
  private readonly ready = new Map<string, Dockerode.ContainerInspectInfo>();
  /** Died since being inspected: a late put() must not bring them back. */
  private readonly dead = new Set<string>();
  private live = false;
  private stream: (NodeJS.ReadableStream & { destroy(): void }) | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(private readonly docker: Dockerode) {}

  /** Subscribes to sandbox events; resolves once the subscription is live (or has failed). */
  async start(): Promise<void> {
    try {
      const stream = (await this.docker.getEvents({
        filters: {
          type: ['container'],
          event: ['die', 'destroy'],
          label: [`${LabelKeys.containerType}=${ContainerType.sandbox}`],
        },
      } as object)) as NodeJS.ReadableStream & { destroy(): void };
      this.stream = stream;
      this.live = true;
      void this.consume(stream);
    } catch {
      this.scheduleRetry();
    }
  }

  private async consume(stream: AsyncIterable<Buffer | string>): Promise<void> {
    try {
      for await (const { value } of jsonLines<{ Action?: string; Actor?: { ID?: string } }>(stream)) {
        const id = value.Actor?.ID;
        if (!id) continue;
        this.ready.delete(id);
        if (value.Action === 'die') this.dead.add(id);
        else this.dead.delete(id);
      }
    } catch {
      // Stream broke: fall through to invalidate.
    }
    this.live = false;
    this.ready.clear();
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.closed) return;
    this.retry = setTimeout(() => void this.start(), RESUBSCRIBE_MS);
  }

  get(id: string): Dockerode.ContainerInspectInfo | undefined {
    return this.live ? this.ready.get(id) : undefined;
  }

  put(info: Dockerode.ContainerInspectInfo): void {
    if (this.live && info.State.Running && !this.dead.has(info.Id)) this.ready.set(info.Id, info);
  }

  evict(id: string): void {
    this.ready.delete(id);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.live = false;
    this.ready.clear();
    this.stream?.destroy();
  }
}
