import type { KObject } from '../meta/object.js';
import { toJson } from './json.js';
import { type Snapshot, WriteAheadLog } from './wal.js';
import { type EventType, type StoreEvent, WatchCache } from './watch-cache.js';

/** Events kept for watches that resume from a resourceVersion, unless told otherwise. */
export const WATCH_CACHE_SIZE = 50_000;

export interface StoreOptions {
  /** Events kept for watches that resume from a resourceVersion (WATCH_CACHE_SIZE). */
  watchCacheSize?: number;
  /** Makes the store durable: a write is acknowledged only after it is fsynced. */
  dataDir?: string;
  /** Log size that triggers a snapshot. */
  snapshotBytes?: number;
}

export type StoreListener = (ev: StoreEvent) => void;

/** One resource: objects by namespace then name, with the sorted key orders LIST needs, kept until a key comes or goes. */
class Table {
  readonly byNs = new Map<string, Map<string, KObject>>();
  sortedNs: string[] | undefined;
  readonly sortedNames = new Map<string, string[]>();
  /** Bumped on every put and remove. */
  generation = 0;

  names(ns: string, m: Map<string, KObject>): string[] {
    let names = this.sortedNames.get(ns);
    if (names === undefined) {
      names = [...m.keys()].sort();
      this.sortedNames.set(ns, names);
    }
    return names;
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
  private syncScheduled = false;
  private readonly snapshotBytes: number;

  constructor(opts: StoreOptions = {}) {
    this.snapshotBytes = opts.snapshotBytes ?? 64 * 1024 * 1024;
    if (opts.dataDir !== undefined) {
      const { wal, snapshot, records, interrupted } = WriteAheadLog.open(opts.dataDir);
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
    if (table === undefined) return [];
    const out: KObject[] = [];
    const add = (n: string, m: Map<string, KObject>) => {
      for (const name of table.names(n, m)) out.push(m.get(name)!);
    };
    if (ns !== undefined && ns !== '') {
      const m = table.byNs.get(ns);
      if (m !== undefined) add(ns, m);
      return out;
    }
    table.sortedNs ??= [...table.byNs.keys()].sort();
    for (const n of table.sortedNs) add(n, table.byNs.get(n)!);
    return out;
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
    // Watchers see a change only once it is durable, as etcd-backed watches do.
    await this.wal.commit();
    for (const ev of events) this.dispatch(ev);
    if (this.wal.size > this.snapshotBytes) this.wal.snapshotInBackground(() => this.capture());
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
