import type { ContainerInspect, DockerClient } from '../docker/client.js';
import { LabelKeys } from '../model/labels.js';
import { DockerEventFeed } from './event_feed.js';

const MAX_CHANGES = 50_000;

/**
 * Docker's events after which a container's inspect reads differently. Exec, attach, resize, top,
 * kill (the die that follows counts) and health events change nothing the shim reads, and probes
 * exec all the time, so they do not evict.
 */
const CHANGING_ACTIONS = [
  'start',
  'die',
  'oom',
  'destroy',
  'update',
  'pause',
  'unpause',
  'rename',
  'restart',
];

/**
 * The inspects of the shim's sandboxes and containers by full id, kept until Docker says the
 * container changed. The kubelet asks for a container's status after every start and on every PLEG
 * relist; each would cost a `docker inspect` (a few ms), where containerd answers from memory.
 *
 * Exactness:
 * - Docker's event stream evicts an entry the moment its container starts, dies, is updated or
 *   removed; the shim's own start, stop, update and remove calls evict too, as they return, before
 *   their event arrives.
 * - A lookup takes a `mark()` before its inspect, and `put` refuses the result if the container
 *   changed after that mark: an inspect that raced a change never lands.
 * - Except a `start` event for an inspect that already says running. A running container can only
 *   start again after it died, and its `die` event comes first on the stream, so the start is one
 *   the inspect has seen. The shim's own start and run inspect the container as soon as it runs,
 *   and the event, on another connection, often comes after: evicting then made every status
 *   right after a start a second inspect.
 * - While the stream is down the cache answers nothing, and a new subscription forgets everything,
 *   so it is never trusted blind.
 */
export class InspectCache {
  private readonly entries = new Map<string, ContainerInspect>();
  /** The tick at which each id last changed, the oldest first; a mark older than that is stale. */
  private readonly changed = new Map<string, number>();
  /** The tick of each id's last `start` event, which spoils only inspects that do not say running. */
  private readonly started = new Map<string, number>();
  private tick = 0;
  /** Marks taken before the last subscription (re)start cannot be trusted for any id. */
  private resetTick = 0;
  private readonly feed: DockerEventFeed;

  constructor(docker: DockerClient) {
    this.feed = new DockerEventFeed(
      docker,
      { type: ['container'], event: CHANGING_ACTIONS, label: [LabelKeys.containerType] },
      (event) => {
        const id = event.Actor?.ID;
        if (id) this.heard(event.Action, id);
      },
      () => {
        this.entries.clear();
        this.changed.clear();
        this.started.clear();
        this.resetTick = ++this.tick;
      },
    );
  }

  /** Subscribes to container events; resolves once the subscription is live (or has failed). */
  start(): Promise<void> {
    return this.feed.start();
  }

  get(id: string): ContainerInspect | undefined {
    return this.feed.live ? this.entries.get(id) : undefined;
  }

  /** Taken before an inspect whose result will be `put`. */
  mark(): number {
    return this.tick;
  }

  /** Keeps an inspect made after `mark`, unless its container changed since. */
  put(info: ContainerInspect, mark: number): void {
    if (!this.feed.live || mark < this.resetTick) return;
    if ((this.changed.get(info.Id) ?? -1) > mark) return;
    if (!info.State.Running && (this.started.get(info.Id) ?? -1) > mark) return;
    this.entries.set(info.Id, info);
  }

  /** Docker's event `action` for container `id` (this cache's subscription, or GetContainerEvents'). */
  heard(action: string | undefined, id: string): void {
    if (action !== 'start') {
      this.evict(id);
      return;
    }
    if (!this.entries.get(id)?.State.Running) this.entries.delete(id);
    bounded(this.started, id, ++this.tick);
  }

  /** The container changed (or is about to be asked to): forget it, and refuse inspects begun before. */
  evict(id: string): void {
    this.entries.delete(id);
    bounded(this.changed, id, ++this.tick);
  }

  close(): void {
    this.feed.close();
    this.entries.clear();
  }
}

/** Sets `id`'s tick as the newest; only the marks of inspects in flight matter, so the oldest can go. */
function bounded(ticks: Map<string, number>, id: string, tick: number): void {
  ticks.delete(id);
  ticks.set(id, tick);
  if (ticks.size > MAX_CHANGES) {
    const oldest = ticks.keys().next().value;
    if (oldest !== undefined) ticks.delete(oldest);
  }
}
