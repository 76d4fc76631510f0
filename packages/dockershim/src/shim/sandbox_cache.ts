import type Dockerode from 'dockerode';
import { DockerEventFeed } from './docker_events.js';
import { ContainerType, LabelKeys } from './labels.js';

/**
 * Ready sandboxes by id, as inspected while running. A sandbox's inspect only changes when its pause
 * container stops (state, pod IP): Docker's event stream evicts it the moment that container dies,
 * and StopPodSandbox/RemovePodSandbox evict it too. So CreateContainer (called for every container
 * of a new pod) and PodSandboxStatus (polled by the kubelet, called right after RunPodSandbox) need
 * no inspect of a ready sandbox. While the stream is down the cache answers nothing, so it is never
 * trusted blind.
 */
export class SandboxCache {
  private readonly ready = new Map<string, Dockerode.ContainerInspectInfo>();
  /** Died since being inspected: a late put() must not bring them back. */
  private readonly dead = new Set<string>();
  private readonly feed: DockerEventFeed;

  constructor(docker: Dockerode) {
    this.feed = new DockerEventFeed(
      docker,
      {
        type: ['container'],
        event: ['die', 'destroy'],
        label: [`${LabelKeys.containerType}=${ContainerType.sandbox}`],
      },
      (event) => {
        const id = event.Actor?.ID;
        if (!id) return;
        this.ready.delete(id);
        if (event.Action === 'die') this.dead.add(id);
        else this.dead.delete(id);
      },
      () => this.ready.clear(),
    );
  }

  /** Subscribes to sandbox events; resolves once the subscription is live (or has failed). */
  start(): Promise<void> {
    return this.feed.start();
  }

  get(id: string): Dockerode.ContainerInspectInfo | undefined {
    return this.feed.live ? this.ready.get(id) : undefined;
  }

  put(info: Dockerode.ContainerInspectInfo): void {
    if (this.feed.live && info.State.Running && !this.dead.has(info.Id)) this.ready.set(info.Id, info);
  }

  evict(id: string): void {
    this.ready.delete(id);
  }

  close(): void {
    this.feed.close();
    this.ready.clear();
  }
}
