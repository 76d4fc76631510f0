import type { KObject } from '../meta/object.js';
import type { RestStorage } from '../registry/rest.js';

export interface EventTtlOptions {
  /** kube-apiserver's --event-ttl: events live one hour by default. */
  ttlMs?: number;
  /** How often expired events are swept. */
  sweepMs?: number;
}

/** Expires events like etcd leases do for kube-apiserver's --event-ttl, so long runs do not grow forever. */
export class EventTtlController {
  private readonly ttl: number;
  private readonly sweepMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly rest: RestStorage,
    opts: EventTtlOptions = {},
  ) {
    this.ttl = opts.ttlMs ?? 3600_000;
    this.sweepMs = opts.sweepMs ?? 60_000;
  }

  start(): void {
    this.timer = setInterval(() => this.sweep(), this.sweepMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Deletes events last written more than the TTL ago; exposed for tests with an injected clock. */
  sweep(): void {
    const store = this.rest.store;
    const cutoff = this.rest.clock.now() - this.ttl;
    const expired: KObject[] = [];
    for (const ev of store.values('events')) {
      // The TTL restarts with every update, as it does for an etcd lease attached on each write.
      const last = Date.parse(
        ev.lastTimestamp ?? ev.series?.lastObservedTime ?? ev.eventTime ?? ev.metadata.creationTimestamp,
      );
      if (Number.isFinite(last) && last < cutoff) expired.push(ev);
    }
    for (const ev of expired) store.delete('events', ev.metadata.namespace, ev.metadata.name);
  }
}
