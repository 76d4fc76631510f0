import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KObject } from '../meta/object.js';
import { expired } from '../meta/status.js';
import type { ResourceDef } from '../registry/resource.js';
import type { FieldSelector } from '../selectors/field.js';
import type { LabelSelector } from '../selectors/label.js';
import { toJson } from '../storage/json.js';
import type { Store } from '../storage/store.js';
import type { EventType, StoreEvent } from '../storage/watch-cache.js';
import { writeNow } from './body.js';

export interface WatchRequest {
  def: ResourceDef;
  /** '' for all namespaces. */
  namespace: string;
  label?: LabelSelector;
  field?: FieldSelector;
  /** undefined or 0: start with synthetic ADDED events for the current state. */
  fromRv: number | undefined;
  sendInitialEvents: boolean;
  allowBookmarks: boolean;
  timeoutMs: number;
  bookmarkIntervalMs: number;
  /** Renders an object as the client asked (Table rows for kubectl get -w); undefined = plain JSON, cached per event. */
  render?: (obj: KObject) => KObject;
}

/**
 * Least time between two writes to one watch stream. At 5 000 nodes a lease watcher gets an
 * event every 2 ms; written one by one, the syscalls were most of the server's CPU.
 */
export const WRITE_INTERVAL_MS = 25;

/**
 * Caps memory for a client that stops reading: such a watch is cut off (the connection destroyed,
 * its buffer released at once, as the apiserver drops a watcher whose channel is full).
 */
export const MAX_BUFFERED = 32 * 1024 * 1024;

/** A watch's events not written yet; `shareable` while they are all events' shared lines. */
interface WatchStream {
  pending: (string | Buffer)[];
  shareable: boolean;
  /** Writes what is pending; true when the client is too far behind to be written to. */
  flush(shared: SharedWrites | undefined): boolean;
  cutOff(): void;
}

/** One flush round's encoded writes, by the first pending event line (an object, so by identity). */
type SharedWrites = Map<Buffer, { last: string | Buffer; count: number; out: Buffer }>;

/**
 * Most lines one stream's write copies into one buffer. A longer backlog (a watch resuming from
 * an older resourceVersion, the initial state) is written as its lines, without a copy: 500
 * watchers copying theirs at once allocated hundreds of MB in one round.
 */
export const MAX_JOINED_LINES = 64;

/**
 * What one stream writes: its pending lines as one buffer (one chunk, one syscall), or a long
 * backlog's lines as they are. Unfiltered watchers of one resource get the same events, so a
 * round encodes them once for all of them instead of once per watcher (at 5 000 nodes, 167
 * lease watchers).
 */
export function encodePending(
  s: Pick<WatchStream, 'pending'>,
  shared: SharedWrites | undefined,
): Buffer | (string | Buffer)[] {
  const { pending } = s;
  const first = pending[0]!;
  const last = pending[pending.length - 1]!;
  const hit = shared !== undefined && Buffer.isBuffer(first) ? shared.get(first) : undefined;
  if (hit !== undefined && hit.count === pending.length && hit.last === last) return hit.out;
  if (pending.length > MAX_JOINED_LINES) return pending;
  const out =
    pending.length === 1 && Buffer.isBuffer(first)
      ? first
      : Buffer.concat(pending.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
  if (shared !== undefined && Buffer.isBuffer(first)) shared.set(first, { last, count: pending.length, out });
  return out;
}

/**
 * Flushes every watch stream with pending events together, at most once per WRITE_INTERVAL_MS
 * (a quiet server still writes at once), so that streams share one round's encoded writes and
 * the server keeps one timer instead of one per watcher.
 */
class Flusher {
  private dirty = new Set<WatchStream>();
  private scheduled = false;
  private last = 0;

  mark(s: WatchStream): void {
    this.dirty.add(s);
    if (this.scheduled) return;
    this.scheduled = true;
    const wait = this.last + WRITE_INTERVAL_MS - performance.now();
    if (wait > 0) setTimeout(this.run, wait);
    else setImmediate(this.run);
  }

  private readonly run = () => {
    this.scheduled = false;
    this.last = performance.now();
    const streams = [...this.dirty];
    this.dirty = new Set();
    this.write(streams, 0, new Map());
  };

  /** Writes streams from `i` on, in turns of FLUSH_TURN_MS so that requests are served between them. */
  private write(streams: WatchStream[], i: number, shared: SharedWrites): void {
    const until = performance.now() + FLUSH_TURN_MS;
    for (; i < streams.length; i++) {
      if (performance.now() > until) {
        setImmediate(() => this.write(streams, i, shared));
        return;
      }
      const s = streams[i]!;
      if (s.flush(shared)) s.cutOff();
    }
  }
}

/**
 * How long one round writes before requests get a turn: at 5 000 nodes a round is 500 writes,
 * which in one go held every write request that arrived meanwhile.
 */
const FLUSH_TURN_MS = 2;

const flusher = new Flusher();

/** setTimeout's largest delay (2^31 - 1 ms, ~24.8 days); a longer one would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export function serveWatch(store: Store, req: IncomingMessage, res: ServerResponse, w: WatchRequest): void {
  const { def } = w;
  const nsKey = def.namespaced ? w.namespace : '';
  const matches = (o: KObject | undefined) =>
    o !== undefined &&
    (nsKey === '' || o.metadata.namespace === nsKey) &&
    (w.label === undefined || w.label(o.metadata.labels)) &&
    (w.field === undefined || w.field(o));
  const view = (o: KObject) => (def.toView ? def.toView(o) : o);

  const line = (type: EventType, obj: KObject, ev?: StoreEvent): string | Buffer => {
    if (w.render !== undefined) return `${JSON.stringify({ type, object: w.render(view(obj)) })}\n`;
    const text = () => `{"type":"${type}","object":${toJson(view(obj))}}\n`;
    if (ev === undefined) return text();
    // Encoded once per event and view, shared by every watcher (and, by identity, their flushes).
    const key = keys[type];
    ev.lines ??= new Map();
    let b = ev.lines.get(key);
    if (b === undefined) {
      b = Buffer.from(text());
      ev.lines.set(key, b);
    }
    return b;
  };
  const keys = {
    ADDED: `${def.group}|ADDED`,
    MODIFIED: `${def.group}|MODIFIED`,
    DELETED: `${def.group}|DELETED`,
  };
  // Without selectors or rendering a watcher gets every event of its resource and namespace, so
  // its pending events match any other such watcher's with the same first and last event.
  const unfiltered = w.label === undefined && w.field === undefined && w.render === undefined;

  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let bookmarks: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  const stream: WatchStream = {
    pending: [],
    shareable: true,
    flush(shared) {
      if (closed || stream.pending.length === 0) return false;
      // Still buffered past the limit (however large one burst, such as the initial state, was).
      if (res.writableLength > MAX_BUFFERED) return true;
      const out = encodePending(stream, unfiltered && stream.shareable ? shared : undefined);
      // Lines go out in one writev, within this flush turn (not res.cork(), whose uncork wrote
      // every line with a syscall of its own).
      writeNow(res, out);
      stream.pending = [];
      stream.shareable = true;
      return false;
    },
    cutOff: () => finish(true),
  };
  const send = (s: string | Buffer) => {
    if (closed) return;
    if (typeof s === 'string') stream.shareable = false;
    stream.pending.push(s);
    flusher.mark(stream);
  };

  /**
   * Events at or below this resourceVersion are already reflected in what the client has (its
   * list, or the initial ADDED events, which may include a write still being committed).
   */
  let seenUpTo = w.fromRv ?? 0;

  /** What a watcher with selectors sees: objects entering or leaving its set become ADDED/DELETED. */
  const deliver = (ev: StoreEvent) => {
    if (ev.rv <= seenUpTo) return;
    const now = matches(ev.object);
    const before = ev.type === 'ADDED' ? false : matches(ev.prev);
    let type: EventType | undefined;
    if (ev.type === 'DELETED') type = before ? 'DELETED' : undefined;
    else if (now && before) type = 'MODIFIED';
    else if (now) type = 'ADDED';
    else if (before) type = 'DELETED';
    if (type === undefined) return;
    send(line(type, ev.object, type === ev.type ? ev : undefined));
  };

  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Transfer-Encoding': 'chunked',
    'Cache-Control': 'no-cache',
  });
  res.flushHeaders();

  let backlog: StoreEvent[] = [];
  if (w.fromRv === undefined || w.fromRv === 0 || w.sendInitialEvents) {
    seenUpTo = store.resourceVersion;
    for (const o of store.list(def.storage, nsKey || undefined)) if (matches(o)) send(line('ADDED', o));
    if (w.sendInitialEvents && w.allowBookmarks) sendBookmark(true);
  } else {
    const events = store.cache.since(w.fromRv);
    if (events === undefined) {
      // Resuming from history the cache no longer has: an ERROR event with 410, then close.
      const err = expired(`too old resource version: ${w.fromRv} (${store.cache.floorRv + 1})`);
      res.end(`${JSON.stringify({ type: 'ERROR', object: err.toStatus() })}\n`);
      return;
    }
    backlog = events.filter((e) => e.resource === def.storage);
  }
  for (const ev of backlog) deliver(ev);

  unsubscribe = store.subscribe(def.storage, deliver);
  function sendBookmark(initialEnd = false) {
    const md: KObject = { resourceVersion: String(store.resourceVersion) };
    if (initialEnd) md.annotations = { 'k8s.io/initial-events-end': 'true' };
    send(
      `${JSON.stringify({ type: 'BOOKMARK', object: { kind: def.kind, apiVersion: def.group ? `${def.group}/${def.version}` : def.version, metadata: md } })}\n`,
    );
  }
  if (closed) {
    unsubscribe();
    return;
  }
  if (w.allowBookmarks) bookmarks = setInterval(() => sendBookmark(), w.bookmarkIntervalMs);
  timer = setTimeout(
    () => {
      if (w.allowBookmarks) sendBookmark();
      finish();
    },
    Math.min(w.timeoutMs, MAX_TIMER_MS),
  );

  /** Ends the watch; `cutOff` drops a reader that fell too far behind instead of draining it. */
  function finish(cutOff = false) {
    if (closed) return;
    if (!cutOff) stream.flush(undefined);
    closed = true;
    stream.pending = [];
    unsubscribe?.();
    clearTimeout(timer);
    if (bookmarks) clearInterval(bookmarks);
    if (cutOff) res.destroy();
    else res.end();
  }
  req.on('close', () => finish());
  res.on('close', () => finish());
}
