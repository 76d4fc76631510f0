// The kubelet's event correlation (client-go's EventCorrelator), so a crash-looping pod does not
// write thousands of Event objects:
// - aggregation: events that differ only in their message (same source, object, type and reason)
//   are counted per 10-minute window; from the 10th distinct message on, they collapse into one
//   event whose message starts "(combined from similar events): ";
// - deduplication: an event identical to one already written (same source, object, type, reason
//   and message) becomes an update of that Event: count + 1 and a new lastTimestamp, under the
//   first one's name;
// - spam filtering: per source and object (and type and reason), a token bucket of 25 events
//   refilled at one per 5 minutes. An event past it is not written, but still counted, so the
//   next one written carries the full count.

import type { Clock } from '@kh/apimachinery';
import type { CoreV1Event } from '@kubernetes/client-node';

/** client-go's defaults: 10 similar events per 10 minutes, 4096 remembered keys. */
export const DefaultMaxSimilarEvents = 10;
export const DefaultAggregateIntervalMs = 600_000;
export const DefaultCacheSize = 4096;
export const CombinedPrefix = '(combined from similar events): ';
/** client-go's spam filter: a burst of 25 events per object, then one every 5 minutes. */
export const DefaultSpamBurst = 25;
export const DefaultSpamQps = 1 / 300;

export interface CorrelationResult {
  /** The event to write: the input, the combined event, or the earlier event with a higher count. */
  event: CoreV1Event;
  /** True when an Event of this name was written before: patch count, lastTimestamp and message. */
  update: boolean;
  /** True when the spam filter drops it: nothing is written. */
  skip: boolean;
}

/** A Map kept in recency order, dropping the least recently used key past `max`. */
class Lru<V> {
  private readonly m = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    const v = this.m.get(k);
    if (v !== undefined) {
      this.m.delete(k);
      this.m.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    this.m.delete(k);
    this.m.set(k, v);
    if (this.m.size > this.max) this.m.delete(this.m.keys().next().value as string);
  }
}

/** Source, object, type and reason: client-go's spam key, and the start of its aggregate key. */
function sourceObjectReason(e: CoreV1Event): string[] {
  const o = e.involvedObject;
  return [
    e.source?.component ?? '',
    e.source?.host ?? '',
    o.kind ?? '',
    o.namespace ?? '',
    o.name ?? '',
    o.uid ?? '',
    o.apiVersion ?? '',
    e.type ?? '',
    e.reason ?? '',
  ];
}

/** Events that may combine: same source, object, type, reason and reporter (the aggregate key). */
function aggregateKey(e: CoreV1Event): string {
  return JSON.stringify([...sourceObjectReason(e), e.reportingComponent ?? '', e.reportingInstance ?? '']);
}

/** The spam filter's key: the message and the reporter do not count. */
function spamKey(e: CoreV1Event): string {
  return JSON.stringify(sourceObjectReason(e));
}

export class EventCorrelator {
  private readonly similar: Lru<{ messages: Set<string>; lastMs: number }>;
  private readonly seen: Lru<{ name: string; count: number; firstTimestamp: Date }>;
  private readonly spam: Lru<{ tokens: number; atMs: number }>;
  private readonly maxSimilar: number;
  private readonly intervalMs: number;
  private readonly spamBurst: number;
  private readonly spamQps: number;

  constructor(
    private readonly clock: Clock,
    opts: {
      maxSimilarEvents?: number;
      aggregateIntervalMs?: number;
      cacheSize?: number;
      spamBurst?: number;
      spamQps?: number;
    } = {},
  ) {
    this.maxSimilar = opts.maxSimilarEvents ?? DefaultMaxSimilarEvents;
    this.intervalMs = opts.aggregateIntervalMs ?? DefaultAggregateIntervalMs;
    this.spamBurst = opts.spamBurst ?? DefaultSpamBurst;
    this.spamQps = opts.spamQps ?? DefaultSpamQps;
    this.similar = new Lru(opts.cacheSize ?? DefaultCacheSize);
    this.seen = new Lru(opts.cacheSize ?? DefaultCacheSize);
    this.spam = new Lru(opts.cacheSize ?? DefaultCacheSize);
  }

  /** The spam filter's token bucket for this event's object: false when it is empty. */
  private acceptSpam(event: CoreV1Event, now: number): boolean {
    const key = spamKey(event);
    const bucket = this.spam.get(key) ?? { tokens: this.spamBurst, atMs: now };
    bucket.tokens = Math.min(this.spamBurst, bucket.tokens + ((now - bucket.atMs) / 1000) * this.spamQps);
    bucket.atMs = now;
    const accept = bucket.tokens >= 1;
    if (accept) bucket.tokens -= 1;
    this.spam.set(key, bucket);
    return accept;
  }

  correlate(input: CoreV1Event): CorrelationResult {
    const now = this.clock.now();
    const aggKey = aggregateKey(input);
    let record = this.similar.get(aggKey);
    if (!record || now - record.lastMs > this.intervalMs) record = { messages: new Set(), lastMs: now };
    record.messages.add(input.message ?? '');
    record.lastMs = now;
    this.similar.set(aggKey, record);

    let event = input;
    // Identical events: the aggregate key plus the field path and the message.
    let dedupeKey = JSON.stringify([aggKey, input.involvedObject.fieldPath ?? '', input.message ?? '']);
    if (record.messages.size >= this.maxSimilar) {
      // Keep the set from growing: one slot stays free for the next distinct message.
      const first = record.messages.values().next().value;
      if (first !== undefined) record.messages.delete(first);
      event = { ...input, message: CombinedPrefix + (input.message ?? '') };
      // Every further similar event counts against the one combined event.
      dedupeKey = aggKey;
    }

    const prior = this.seen.get(dedupeKey);
    if (!prior) {
      this.seen.set(dedupeKey, {
        name: event.metadata.name ?? '',
        count: 1,
        firstTimestamp: event.firstTimestamp ?? new Date(now),
      });
      return { event, update: false, skip: !this.acceptSpam(event, now) };
    }
    prior.count++;
    return {
      event: {
        ...event,
        metadata: { ...event.metadata, name: prior.name },
        count: prior.count,
        firstTimestamp: prior.firstTimestamp,
        lastTimestamp: new Date(now),
      },
      update: true,
      skip: !this.acceptSpam(event, now),
    };
  }
}
