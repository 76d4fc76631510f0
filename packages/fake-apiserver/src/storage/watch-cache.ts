import type { KObject } from '../meta/object.js';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One committed change. The object is frozen by convention: nobody mutates stored objects. */
export interface StoreEvent {
  type: EventType;
  resource: string;
  rv: number;
  object: KObject;
  /** The object before a MODIFIED or DELETED, so watchers with selectors can see it leave their set. */
  prev?: KObject;
  /** Wall-clock time of the commit; the benchmark measures delivery delay against it. */
  at: number;
  /** Encoded watch lines, made once and shared by every watcher (keyed by view and type). */
  lines?: Map<string, Buffer>;
}

/**
 * A bounded ring of recent events across all resources. A watch can start from any
 * resourceVersion not older than `floorRv`; older ones get 410 Expired, like the apiserver's
 * watch cache.
 */
export class WatchCache {
  private readonly ring: (StoreEvent | undefined)[];
  private start = 0;
  private size = 0;

  constructor(
    readonly capacity: number,
    /** Events at or below this resourceVersion are no longer available. */
    public floorRv: number,
  ) {
    this.ring = new Array(capacity);
  }

  push(ev: StoreEvent): void {
    if (this.size === this.capacity) {
      const evicted = this.ring[this.start]!;
      this.floorRv = evicted.rv;
      this.ring[this.start] = ev;
      this.start = (this.start + 1) % this.capacity;
      return;
    }
    this.ring[(this.start + this.size) % this.capacity] = ev;
    this.size++;
  }

  /** Events with rv > fromRv, oldest first; undefined when that history is gone. */
  since(fromRv: number): StoreEvent[] | undefined {
    if (fromRv < this.floorRv) return undefined;
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.at(mid).rv <= fromRv) lo = mid + 1;
      else hi = mid;
    }
    const out: StoreEvent[] = [];
    for (let i = lo; i < this.size; i++) out.push(this.at(i));
    return out;
  }

  private at(i: number): StoreEvent {
    return this.ring[(this.start + i) % this.capacity]!;
  }
}
