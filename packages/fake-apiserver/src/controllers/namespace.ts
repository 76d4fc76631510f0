import { RESOURCES } from '../registry/index.js';
import type { RestStorage } from '../registry/rest.js';
import type { KObject } from '../types.js';

/**
 * The namespace controller's job in miniature: a namespace being deleted has its content
 * deleted (pods gracefully), and disappears once nothing is left. It also gives every
 * namespace its "default" ServiceAccount, as the serviceaccount controller does.
 */
export class NamespaceController {
  private readonly unsubscribe: (() => void)[] = [];
  private readonly storages = [
    ...new Map(RESOURCES.filter((r) => r.namespaced).map((r) => [r.storage, r])).values(),
  ];

  constructor(private readonly rest: RestStorage) {}

  start(): void {
    const store = this.rest.store;
    this.unsubscribe.push(
      store.subscribe('namespaces', (ev) => {
        if (ev.type === 'DELETED') return;
        if (ev.object.metadata.deletionTimestamp) this.finalize(ev.object.metadata.name);
        else if (ev.type === 'ADDED') setImmediate(() => this.ensureServiceAccount(ev.object));
      }),
    );
    // A terminating namespace is re-checked whenever something inside it goes away.
    for (const def of this.storages) {
      this.unsubscribe.push(
        store.subscribe(def.storage, (ev) => {
          const ns = ev.object.metadata.namespace;
          if (ev.type === 'DELETED' && store.get('namespaces', '', ns)?.metadata.deletionTimestamp)
            this.finalize(ns);
        }),
      );
    }
    for (const ns of store.list('namespaces')) {
      if (ns.metadata.deletionTimestamp) this.finalize(ns.metadata.name);
      else this.ensureServiceAccount(ns);
    }
  }

  stop(): void {
    for (const u of this.unsubscribe) u();
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

  private finalize(ns: string) {
    // Deferred so that the triggering write completes first.
    setImmediate(() => {
      const store = this.rest.store;
      const nsObj = store.get('namespaces', '', ns);
      if (!nsObj?.metadata.deletionTimestamp) return;
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
      const left = this.storages.reduce((n, def) => n + store.list(def.storage, ns).length, 0);
      if (left === 0) store.delete('namespaces', '', ns);
    });
  }
}
