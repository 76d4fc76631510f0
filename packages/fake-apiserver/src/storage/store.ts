import type { KObject } from '../meta/object.js';
import { toJson } from './json.js';
import { type Snapshot, type SnapshotPace, WriteAheadLog } from './wal.js';
import { type EventType, type StoreEvent, WatchCache } from './watch-cache.js';

/** Events kept for watches that resume from a resourceVersion, unless told otherwise. */
export const WATCH_CACHE_SIZE = 50_000;

export interface StoreOptions {
  /** Events kept for watches that resume from a resourceVersion (WATCH_CACHE_SIZE). */
  watchCacheSize?: number;
  /** Makes the store durable: a write is acknowledged only after it is fsynced. */
  dataDir?: string;
  /**
   * Log size that triggers a snapshot, and at least the last snapshot's: each snapshot rewrites
   * the whole state, so snapshotting more often than the log grows by the state's size would
   * write more for the snapshots than for the log (at 5k nodes the state is 170 MB).
   */
  snapshotBytes?: number;
  /** How a snapshot yields the disk to the log between its syncs (tests; default: as long as each took). */
  snapshotPace?: SnapshotPace;
}

export type StoreListener = (ev: StoreEvent) => void;

/** Where an object sits in a resource's key order: [namespace, name] ('' for cluster-scoped). */
export type ObjectKey = [namespace: string, name: string];

/** Key order as the store lists: by namespace, then name (a joined string would not: '-' < '/'). */
export const compareKeys = (a: ObjectKey, b: ObjectKey): number =>
  a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;

export const keyOf = (o: KObject): ObjectKey => [o.metadata.namespace ?? '', o.metadata.name];

export interface PageRequest {
  /** One namespace, or all ('' or absent). */
  namespace?: string;
  /** The page starts at the first key at or after this one (etcd's range start). */
  from?: ObjectKey;
  /** Objects as they were at this resourceVersion (the current ones when absent). */
  rv?: number;
  /** Most objects in the page (upstream keeps reading past objects `match` drops). */
  limit: number;
  match?: (o: KObject) => boolean;
}

export interface Page {
  items: KObject[];
  /** The resourceVersion the page was read at. */
  rv: number;
  /** The last key the page read, when keys remain after it (the next page starts just after). */
  next?: ObjectKey;
  /** How many objects remain after `next`, when every object matched (upstream counts only then). */
  remaining?: number;
  /** Stored objects and cached changes the page read: its cost, which must not grow with the resource. */
  visited: number;
}

/** First index of sorted `xs` not `before` the sought value: a binary search. */
function lowerBound<T>(xs: readonly T[], before: (x: T) => boolean): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (before(xs[mid]!)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One resource: objects by namespace then name, with the sorted key orders LIST needs, kept until a key comes or goes. */
class Table {
  readonly byNs = new Map<string, Map<string, KObject>>();
  sortedNs: string[] | undefined;
  readonly sortedNames = new Map<string, string[]>();
  /** Bumped on every put and remove. */
  generation = 0;
  /** Objects `from` has handed out: what a LIST costs, which a page must not grow with the table. */
  reads = 0;

  names(ns: string, m: Map<string, KObject>): string[] {
    let names = this.sortedNames.get(ns);
    if (names === undefined) {
      names = [...m.keys()].sort();
      this.sortedNames.set(ns, names);
    }
    return names;
  }

  /** The namespaces a listing covers, in order: one, or all of them. */
  namespaces(ns: string | undefined): string[] {
    if (ns !== undefined && ns !== '') return this.byNs.has(ns) ? [ns] : [];
    this.sortedNs ??= [...this.byNs.keys()].sort();
    return this.sortedNs;
  }

  /** Current objects in key order, from the first key >= `from`: a seek, not a walk. */
  *from(ns: string | undefined, from: ObjectKey | undefined): Generator<KObject> {
    const nss = this.namespaces(ns);
    for (let i = from ? lowerBound(nss, (n) => n < from[0]) : 0; i < nss.length; i++) {
      const n = nss[i]!;
      const m = this.byNs.get(n)!;
      const names = this.names(n, m);
      for (let j = from && from[0] === n ? lowerBound(names, (x) => x < from[1]) : 0; j < names.length; j++) {
        this.reads++;
        yield m.get(names[j]!)!;
      }
    }
  }

  /** How many current objects have a key after `key`, without visiting them. */
  countAfter(ns: string | undefined, key: ObjectKey): number {
    let n = 0;
    for (const other of this.namespaces(ns)) {
      if (other < key[0]) continue;
      const m = this.byNs.get(other)!;
      n += other > key[0] ? m.size : m.size - lowerBound(this.names(other, m), (x) => x <= key[1]);
    }
    return n;
  }
}

/**
 * The resource store: one table per resource ("pods", "leases.coordination.k8s.io"), keyed by
 * namespace then name, a global monotonic resourceVersion, a watch cache, and an optional
 * write-ahead log. Stored objects are never mutated; writers replace them.
 */
export class Store {
  private rvCounter = 0;
  private readonly tables = new Map<string, Table>();
  /** pods by spec.nodeName (the kubelet's and the scheduler's hot query). */
  private readonly podsByNode = new Map<string, Map<string, KObject>>();
  /** Bumped whenever a pod bound to the node is written or removed. */
  private readonly podsByNodeGeneration = new Map<string, number>();
  private readonly listeners = new Map<string, Set<StoreListener>>();
  readonly cache: WatchCache;
  private readonly wal: WriteAheadLog | undefined;
  private pending: StoreEvent[] = [];
  /** Batches being made durable: in the tables already, not yet in the watch cache. */
  private readonly committing = new Set<StoreEvent[]>();
  private syncScheduled = false;
  private readonly snapshotBytes: number;

  constructor(opts: StoreOptions = {}) {
    this.snapshotBytes = opts.snapshotBytes ?? 64 * 1024 * 1024;
    if (opts.dataDir !== undefined) {
      const { wal, snapshot, records, interrupted } = WriteAheadLog.open(opts.dataDir, opts.snapshotPace);
      this.wal = wal;
      if (snapshot !== undefined) {
        this.rvCounter = snapshot.rv;
        for (const { resource, obj } of snapshot.objects)
          this.put(resource, obj.metadata.namespace ?? '', obj.metadata.name, obj);
      }
      for (const rec of records) {
        this.rvCounter = rec.rv;
        if (rec.op === 'put') this.put(rec.r, rec.ns, rec.name, rec.o!);
        else this.remove(rec.r, rec.ns, rec.name);
      }
      if (interrupted) wal.snapshotNow(this.capture());
    }
    // History before a restart is gone: resuming from an older resourceVersion gets 410.
    this.cache = new WatchCache(opts.watchCacheSize ?? WATCH_CACHE_SIZE, this.rvCounter);
  }

  get resourceVersion(): number {
    return this.rvCounter;
  }

  get(resource: string, ns: string, name: string): KObject | undefined {
    return this.tables.get(resource)?.byNs.get(ns)?.get(name);
  }

  /**
   * Objects of a resource (optionally one namespace), sorted by namespace/name like etcd keys.
   * The order is kept between calls (objects are only replaced), so a LIST does not sort.
   */
  list(resource: string, ns?: string): KObject[] {
    const table = this.tables.get(resource);
    return table === undefined ? [] : [...table.from(ns, undefined)];
  }

  /**
   * One page of a LIST, like etcd's ranged read: it seeks to `from` in key order and reads at most
   * `limit` matching objects plus one key to know whether more remain, as of `rv`. An older `rv` is
   * served by undoing the changes made since, from the watch cache; undefined when that history is
   * gone (the caller's 410).
   */
  page(resource: string, req: PageRequest): Page | undefined {
    const rv = req.rv ?? this.rvCounter;
    const asOf = rv === this.rvCounter ? undefined : this.changedSince(resource, req.namespace, rv);
    if (asOf === undefined && rv !== this.rvCounter) return undefined;
    const table = this.tables.get(resource);
    const items: KObject[] = [];
    const readsBefore = table?.reads ?? 0;
    let last: KObject | undefined;
    let more = false;
    const objects = table === undefined ? [] : table.from(req.namespace, req.from);
    for (const o of asOf ? overlay(objects, asOf.before, req.from) : objects) {
      if (items.length === req.limit) {
        more = true;
        break;
      }
      last = o;
      if (req.match === undefined || req.match(o)) items.push(o);
    }
    const visited = (table?.reads ?? 0) - readsBefore + (asOf?.visited ?? 0);
    if (!more || last === undefined) return { items, rv, visited };
    const next = keyOf(last);
    if (req.match !== undefined) return { items, rv, next, visited };
    // Counted as of `rv`: today's count after `next`, less what came since, plus what went.
    let remaining = table?.countAfter(req.namespace, next) ?? 0;
    for (const [key, obj] of asOf?.before ?? []) {
      if (compareKeys(key, next) <= 0) continue;
      if (table?.byNs.get(key[0])?.has(key[1])) remaining--;
      if (obj !== undefined) remaining++;
    }
    return { items, rv, next, remaining, visited };
  }

  /**
   * Every key of `resource` (in `ns`, or all) changed after `rv`, sorted, with its object as of
   * `rv` (undefined: it did not exist then); undefined when the watch cache no longer reaches `rv`.
   */
  private changedSince(
    resource: string,
    ns: string | undefined,
    rv: number,
  ): { before: [ObjectKey, KObject | undefined][]; visited: number } | undefined {
    const events = this.cache.since(rv);
    if (events === undefined) return undefined;
    const first = new Map<string, [ObjectKey, KObject | undefined]>();
    let visited = 0;
    // Writes not yet durable are in the tables already but not yet in the watch cache.
    for (const ev of [...events, ...[...this.committing].flat(), ...this.pending]) {
      visited++;
      if (ev.resource !== resource) continue;
      const key = keyOf(ev.object);
      if (ns !== undefined && ns !== '' && key[0] !== ns) continue;
      const id = `${key[0]}/${key[1]}`;
      // The earliest change after `rv` holds the object as it was at `rv`.
      if (!first.has(id)) first.set(id, [key, ev.prev]);
    }
    return { before: [...first.values()].sort((a, b) => compareKeys(a[0], b[0])), visited };
  }

  /** Objects of a resource in no particular order: for controllers that scan everything often. */
  *values(resource: string): Iterable<KObject> {
    for (const m of this.tables.get(resource)?.byNs.values() ?? []) yield* m.values();
  }

  podsOnNode(nodeName: string): KObject[] {
    return [...(this.podsByNode.get(nodeName)?.values() ?? [])];
  }

  /**
   * Changes whenever an object of the resource is written or removed (before watchers hear of
   * it), so that a controller may cache what it derives from the current objects.
   */
  generation(resource: string): number {
    return this.tables.get(resource)?.generation ?? 0;
  }

  /** Like `generation`, for the pods bound to one node. */
  podsOnNodeGeneration(nodeName: string): number {
    return this.podsByNodeGeneration.get(nodeName) ?? 0;
  }

  count(resource: string): number {
    let n = 0;
    for (const m of this.tables.get(resource)?.byNs.values() ?? []) n += m.size;
    return n;
  }

  /**
   * Stores `obj` (whose metadata must be complete except resourceVersion) and emits the event.
   * Returns the stored object.
   */
  write(resource: string, type: Exclude<EventType, 'DELETED'>, obj: KObject): KObject {
    this.checkWritable();
    const rv = ++this.rvCounter;
    obj.metadata.resourceVersion = String(rv);
    const ns = obj.metadata.namespace ?? '';
    const prev = this.put(resource, ns, obj.metadata.name, obj);
    // Serialised once, now: the response, the log and every watcher and LIST use this text.
    toJson(obj);
    this.wal?.append({ rv, op: 'put', r: resource, ns, name: obj.metadata.name, o: obj });
    this.emit({ type, resource, rv, object: obj, prev, at: Date.now() });
    return obj;
  }

  /**
   * Removes an object; the DELETED event carries it with a fresh resourceVersion, like etcd, and
   * with `lastMetadata` (a graceful deletion's final timestamp and grace period).
   */
  delete(resource: string, ns: string, name: string, lastMetadata: object = {}): KObject | undefined {
    this.checkWritable();
    const prev = this.remove(resource, ns, name);
    if (prev === undefined) return undefined;
    const rv = ++this.rvCounter;
    const obj = { ...prev, metadata: { ...prev.metadata, ...lastMetadata, resourceVersion: String(rv) } };
    this.wal?.append({ rv, op: 'del', r: resource, ns, name });
    this.emit({ type: 'DELETED', resource, rv, object: obj, prev, at: Date.now() });
    return obj;
  }

  private checkWritable() {
    if (this.wal?.failure !== undefined) throw this.wal.failure;
  }

  /** Resolves when every write so far is durable (immediately in memory mode). */
  async sync(): Promise<void> {
    if (this.wal === undefined) return;
    const events = this.pending;
    this.pending = [];
    this.committing.add(events);
    // Watchers see a change only once it is durable, as etcd-backed watches do.
    try {
      await this.wal.commit();
    } finally {
      this.committing.delete(events);
    }
    for (const ev of events) this.dispatch(ev);
    if (this.wal.size > Math.max(this.snapshotBytes, this.wal.lastSnapshotSize))
      this.wal.snapshotInBackground(() => this.capture());
  }

  /** Subscribes to committed events of one resource. */
  subscribe(resource: string, fn: StoreListener): () => void {
    let set = this.listeners.get(resource);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(resource, set);
    }
    set.add(fn);
    return () => set.delete(fn);
  }

  /** The current state as object references (cheap: stored objects are immutable). */
  private capture(): Snapshot {
    const objects: Snapshot['objects'] = [];
    for (const resource of this.tables.keys())
      for (const obj of this.values(resource)) objects.push({ resource, obj });
    return { rv: this.rvCounter, objects };
  }

  close(): void {
    if (this.wal === undefined) return;
    for (const ev of this.pending) this.cache.push(ev);
    this.pending = [];
    // A background snapshot may still be writing (the log keeps everything either way), or the
    // log has failed (nothing more can be written).
    if (this.wal.busy || this.wal.failure !== undefined) this.wal.close();
    else {
      this.wal.snapshotNow(this.capture());
      this.wal.close();
    }
  }

  private emit(ev: StoreEvent): void {
    if (this.wal === undefined) {
      this.dispatch(ev);
      return;
    }
    this.pending.push(ev);
    if (!this.syncScheduled) {
      // Controllers write without awaiting; commit their writes too.
      this.syncScheduled = true;
      setImmediate(() => {
        this.syncScheduled = false;
        // A failure is reported to the requests awaiting it and refuses later writes.
        this.sync().catch(() => {});
      });
    }
  }

  private dispatch(ev: StoreEvent): void {
    this.cache.push(ev);
    for (const fn of this.listeners.get(ev.resource) ?? []) {
      try {
        fn(ev);
      } catch (e) {
        // A failing watcher or controller must not fail the write that is already committed.
        console.error(`fake-apiserver: listener for ${ev.resource} failed: ${(e as Error).stack ?? e}`);
      }
    }
  }

  private put(resource: string, ns: string, name: string, obj: KObject): KObject | undefined {
    let table = this.tables.get(resource);
    if (table === undefined) {
      table = new Table();
      this.tables.set(resource, table);
    }
    let m = table.byNs.get(ns);
    if (m === undefined) {
      m = new Map();
      table.byNs.set(ns, m);
      table.sortedNs = undefined;
    }
    const prev = m.get(name);
    m.set(name, obj);
    table.generation++;
    if (prev === undefined) table.sortedNames.delete(ns);
    if (resource === 'pods') {
      const key = `${ns}/${name}`;
      const before = prev?.spec?.nodeName;
      const after = obj.spec?.nodeName;
      if (before) this.bumpNode(before);
      if (after && after !== before) this.bumpNode(after);
      if (before && before !== after) this.podsByNode.get(before)?.delete(key);
      if (after) {
        let idx = this.podsByNode.get(after);
        if (idx === undefined) {
          idx = new Map();
          this.podsByNode.set(after, idx);
        }
        idx.set(key, obj);
      }
    }
    return prev;
  }

  private remove(resource: string, ns: string, name: string): KObject | undefined {
    const table = this.tables.get(resource);
    const m = table?.byNs.get(ns);
    const prev = m?.get(name);
    if (prev === undefined) return undefined;
    m!.delete(name);
    table!.generation++;
    table!.sortedNames.delete(ns);
    if (resource === 'pods' && prev.spec?.nodeName) {
      this.podsByNode.get(prev.spec.nodeName)?.delete(`${ns}/${name}`);
      this.bumpNode(prev.spec.nodeName);
    }
    return prev;
  }

  private bumpNode(nodeName: string) {
    this.podsByNodeGeneration.set(nodeName, (this.podsByNodeGeneration.get(nodeName) ?? 0) + 1);
  }
}

/**
 * Today's objects (in key order, from `from`) with the changed keys replaced by their objects as
 * of an earlier resourceVersion (`before`, sorted; undefined ones left out).
 */
function* overlay(
  objects: Iterable<KObject>,
  before: [ObjectKey, KObject | undefined][],
  from: ObjectKey | undefined,
): Generator<KObject> {
  const changed = new Set(before.map(([k]) => `${k[0]}/${k[1]}`));
  let i = from ? lowerBound(before, ([k]) => compareKeys(k, from) < 0) : 0;
  for (const o of objects) {
    const key = keyOf(o);
    for (; i < before.length && compareKeys(before[i]![0], key) < 0; i++) {
      const old = before[i]![1];
      if (old !== undefined) yield old;
    }
    if (!changed.has(`${key[0]}/${key[1]}`)) yield o;
  }
  for (; i < before.length; i++) {
    const old = before[i]![1];
    if (old !== undefined) yield old;
  }
}
