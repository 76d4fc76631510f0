// Turns full snapshots of a source's pods into the kubelet's incremental operations, the way
// the kubelet's PodConfig merges a source: new pods are ADDs, vanished ones REMOVEs, a changed
// spec/labels/annotations is an UPDATE (or a DELETE when deletionTimestamp appeared: graceful
// deletion), and a status-only change is a RECONCILE.
import type { V1Pod } from '@kubernetes/client-node';
import type { PodUpdate } from '../pods/types.js';
import { canonicalJson } from '../util/canonical_json.js';

export class PodSnapshotDiff {
  private pods = new Map<string, V1Pod>();

  constructor(private readonly source: PodUpdate['source']) {}

  /** Replaces the source's pods with `snapshot`; returns the updates in the kubelet's order. */
  set(snapshot: readonly V1Pod[]): PodUpdate[] {
    const next = new Map<string, V1Pod>();
    const adds: V1Pod[] = [];
    const updates: V1Pod[] = [];
    const deletes: V1Pod[] = [];
    const reconciles: V1Pod[] = [];
    for (const pod of snapshot) {
      const uid = pod.metadata?.uid;
      if (!uid) continue; // the API server always sets one; a pod without it cannot be tracked
      next.set(uid, pod);
      const old = this.pods.get(uid);
      if (!old) adds.push(pod);
      else if (podsDifferSemantically(old, pod))
        (pod.metadata?.deletionTimestamp ? deletes : updates).push(pod);
      else if (canonicalJson(old.status) !== canonicalJson(pod.status)) reconciles.push(pod);
    }
    const removes = [...this.pods].filter(([uid]) => !next.has(uid)).map(([, pod]) => pod);
    this.pods = next;
    const out: PodUpdate[] = [];
    const push = (op: PodUpdate['op'], pods: V1Pod[]) => {
      if (pods.length > 0) out.push({ op, pods, source: this.source });
    };
    push('REMOVE', removes);
    push('ADD', adds);
    push('UPDATE', updates);
    push('DELETE', deletes);
    push('RECONCILE', reconciles);
    return out;
  }

  /** The source's pods as of the last snapshot. */
  current(): V1Pod[] {
    return [...this.pods.values()];
  }
}

/** What the kubelet acts on: spec, labels, annotations and the deletion fields. Status is not. */
export function podsDifferSemantically(a: V1Pod, b: V1Pod): boolean {
  const view = (p: V1Pod) =>
    canonicalJson({
      spec: p.spec,
      labels: p.metadata?.labels ?? {},
      annotations: p.metadata?.annotations ?? {},
      deletionTimestamp: p.metadata?.deletionTimestamp
        ? new Date(p.metadata.deletionTimestamp).getTime()
        : null,
      deletionGracePeriodSeconds: p.metadata?.deletionGracePeriodSeconds ?? null,
    });
  return view(a) !== view(b);
}
