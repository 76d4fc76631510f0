import type { ContainerEventResponse, DeepPartial } from '../gen/runtime/v1/api.js';
import { AsyncQueue } from '../util/async_queue.js';

type Event = DeepPartial<ContainerEventResponse>;

/** Fans container events out to every open GetContainerEvents stream. */
export class EventBus {
  readonly #subscribers = new Set<AsyncQueue<Event>>();

  subscribe(signal: AbortSignal): AsyncIterable<Event> {
    const queue: AsyncQueue<Event> = new AsyncQueue(() => this.#subscribers.delete(queue));
    this.#subscribers.add(queue);
    const end = () => {
      this.#subscribers.delete(queue);
      queue.end();
    };
    if (signal.aborted) end();
    else signal.addEventListener('abort', end, { once: true });
    return queue;
  }

  publish(event: Event): void {
    for (const q of this.#subscribers) q.push(event);
  }

  get subscriberCount(): number {
    return this.#subscribers.size;
  }
}
