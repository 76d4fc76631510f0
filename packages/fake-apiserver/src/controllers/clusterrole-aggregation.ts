// The clusterrole-aggregation controller: a ClusterRole with an aggregationRule gets as its rules
// those of every other ClusterRole one of its selectors matches (as upstream's admin, edit and
// view are built), kept current as matching roles come, change and go.
import { deepEqual } from '../meta/equal.js';
import type { KObject } from '../meta/object.js';
import { clusterroles } from '../registry/rbac.js';
import type { RestStorage } from '../registry/rest.js';
import { labelSelectorOf } from '../selectors/label.js';

export class ClusterRoleAggregationController {
  private unsubscribe: (() => void) | undefined;
  private pending = false;

  constructor(private readonly rest: RestStorage) {}

  start(): void {
    // Synced after the write that triggered it, so its own writes are not nested in the store's dispatch.
    this.unsubscribe = this.rest.store.subscribe(clusterroles.storage, () => {
      if (this.pending) return;
      this.pending = true;
      queueMicrotask(() => {
        this.pending = false;
        if (this.unsubscribe !== undefined) this.sync();
      });
    });
    this.sync();
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** Writes the aggregated rules of every aggregating ClusterRole whose rules are not them yet. */
  sync(): void {
    const roles = this.rest.store.list(clusterroles.storage, '');
    for (const role of roles) {
      const selectors: KObject[] | undefined = role.aggregationRule?.clusterRoleSelectors;
      if (selectors === undefined) continue;
      const matchers = selectors.map(labelSelectorOf);
      const rules: KObject[] = [];
      for (const other of roles) {
        if (other.metadata.name === role.metadata.name) continue;
        if (!matchers.some((m) => m(other.metadata.labels))) continue;
        for (const r of other.rules ?? []) if (!rules.some((x) => deepEqual(x, r))) rules.push(r);
      }
      if (deepEqual(rules, role.rules ?? [])) continue;
      try {
        this.rest.update(clusterroles, '', role.metadata.name, { ...role, rules });
      } catch (e) {
        // A refused write (a failed log) is retried at the next change of any ClusterRole.
        console.error(
          `fake-apiserver: aggregating ClusterRole ${role.metadata.name}: ${(e as Error).message}`,
        );
      }
    }
  }
}
