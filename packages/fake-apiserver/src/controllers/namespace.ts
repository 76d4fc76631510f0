import type { KObject } from '../meta/object.js';
import { RESOURCES } from '../registry/index.js';
import type { RestStorage } from '../registry/rest.js';

/**
 * The namespace controller's job in miniature: a namespace being deleted has its content
 * deleted (pods gracefully), and disappears once nothing is left. It also gives every
 * namespace its "default" ServiceAccount, as the serviceaccount controller does.
 */
const CLEANUP_DELAY_MS = 2000;

export class NamespaceController {
  private readonly unsubscribe: (() => void)[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;
  private readonly storages = [
    ...new Map(RESOURCES.filter((r) => r.namespaced).map((r) => [r.storage, r])).values(),
  ];

  constructor(private readonly rest: RestStorage) {}

  start(): void {
    const store = this.rest.store;
    this.unsubscribe.push(
      store.subscribe('namespaces', (ev) => {
        if (ev.type === 'DELETED') return;
        const name = ev.object.metadata.name;
        // Like the real controller, content removal starts a moment after the namespace is marked,
        // so `kubectl delete -f` of a namespace and its objects deletes each of them itself.
        if (ev.object.metadata.deletionTimestamp && !ev.prev?.metadata.deletionTimestamp) {
          this.later(CLEANUP_DELAY_MS, () => this.deleteContent(name));
        } else if (ev.type === 'ADDED') this.later(0, () => this.ensureServiceAccount(ev.object));
      }),
    );
    // A terminating namespace goes away once the last thing inside it does.
    for (const def of this.storages) {
      this.unsubscribe.push(
        store.subscribe(def.storage, (ev) => {
          const ns = ev.object.metadata.namespace;
          if (ev.type === 'DELETED' && store.get('namespaces', '', ns)?.metadata.deletionTimestamp) {
            this.later(0, () => this.removeIfEmpty(ns));
          }
        }),
      );
    }
    for (const ns of store.list('namespaces')) {
      const name = ns.metadata.name;
      if (ns.metadata.deletionTimestamp) this.later(0, () => this.deleteContent(name));
      else this.ensureServiceAccount(ns);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const u of this.unsubscribe) u();
    for (const t of this.timers) clearTimeout(t);
  }

  private ensureServiceAccount(ns: KObject) {
    const name = ns.metadata.name;
    if (this.rest.store.get('serviceaccounts', name, 'default') !== undefined) return;
    const sa = this.storages.find((d) => d.resource === 'serviceaccounts')!;
    try {
      this.rest.create(sa, name, { metadata: { name: 'default' } });
    } catch {
      // Raced with a user creating it, or the namespace went away: nothing to do.
    }
  }

  /** Deletes everything in a terminating namespace (pods gracefully), then the namespace if empty. */
  private deleteContent(ns: string) {
    const store = this.rest.store;
    if (!store.get('namespaces', '', ns)?.metadata.deletionTimestamp) return;
    for (const def of this.storages) {
      for (const o of store.list(def.storage, ns)) {
        if (o.metadata.deletionTimestamp) continue;
        try {
          this.rest.delete(def, ns, o.metadata.name);
        } catch {
          // Already gone.
        }
      }
    }
    this.removeIfEmpty(ns);
  }

  private removeIfEmpty(ns: string) {
    const store = this.rest.store;
    if (!store.get('namespaces', '', ns)?.metadata.deletionTimestamp) return;
    if (this.storages.every((def) => store.list(def.storage, ns).length === 0))
      store.delete('namespaces', '', ns);
  }

  /** Runs `fn` after `ms` unless the controller stopped meanwhile. */
  private later(ms: number, fn: () => void) {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.stopped) fn();
    }, ms);
    this.timers.add(t);
  }
}
