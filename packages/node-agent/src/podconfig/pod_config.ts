// Turns full snapshots of a source's pods into the kubelet's incremental operations, the way
// the kubelet's PodConfig merges a source: new pods are ADDs, vanished ones REMOVEs, a changed
// spec/labels/annotations is an UPDATE (or a DELETE when deletionTimestamp appeared: graceful
// deletion), and a status-only change is a RECONCILE.
import type { V1Pod } from '@kubernetes/client-node';
import { ConfigSourceAnnotation, type PodUpdate } from '../types/pod_update.js';
import { canonicalJson } from '../util/canonical_json.js';

interface Known {
  pod: V1Pod;
  /** podView(pod) and canonicalJson(pod.status), kept so a change compares only the new pod. */
  view: string;
  status: string;
}

export class PodSnapshotDiff {
  private pods = new Map<string, Known>();

  constructor(private readonly source: PodUpdate['source']) {}

  /** Replaces the source's pods with `snapshot`; returns the updates in the kubelet's order. */
  set(snapshot: readonly V1Pod[]): PodUpdate[] {
    const next = new Map<string, Known>();
    const changes = new Changes(this.source);
    for (const pod of snapshot) {
      const uid = pod.metadata?.uid;
      if (!uid) continue; // the API server always sets one; a pod without it cannot be tracked
      next.set(uid, changes.compare(this.pods.get(uid), pod));
    }
    for (const [uid, known] of this.pods) if (!next.has(uid)) changes.removes.push(known.pod);
    this.pods = next;
    return changes.updates();
  }

  /**
   * One pod added, changed (`pod`) or gone (`removed`): the updates set() would return for the
   * previous snapshot with only that pod changed, without comparing every other pod again. A
   * watch event carries one pod, and a node with 110 pods gets hundreds of them in a burst.
   */
  apply(pod: V1Pod, removed = false): PodUpdate[] {
    const uid = pod.metadata?.uid;
    if (!uid) return [];
    const changes = new Changes(this.source);
    const old = this.pods.get(uid);
    if (removed) {
      if (!old) return [];
      this.pods.delete(uid);
      changes.removes.push(old.pod);
    } else {
      this.pods.set(uid, changes.compare(old, pod));
    }
    return changes.updates();
  }

  /** The source's pods as of the last snapshot. */
  current(): V1Pod[] {
    return [...this.pods.values()].map((k) => k.pod);
  }
}

/** The updates of one diff, grouped by operation. */
class Changes {
  readonly removes: V1Pod[] = [];
  private readonly adds: V1Pod[] = [];
  private readonly changed: V1Pod[] = [];
  private readonly deletes: V1Pod[] = [];
  private readonly reconciles: V1Pod[] = [];

  constructor(private readonly source: PodUpdate['source']) {}

  /** Files `pod` under the operation its change from `old` calls for; returns what to remember. */
  compare(old: Known | undefined, pod: V1Pod): Known {
    // As the kubelet's podStorage.merge, before any comparison: a pod's source is where it came
    // from, whatever its annotations say (an API pod annotated `file` is no static pod).
    pod.metadata = {
      ...pod.metadata,
      annotations: { ...pod.metadata?.annotations, [ConfigSourceAnnotation]: this.source },
    };
    const known = { pod, view: podView(pod), status: canonicalJson(pod.status) };
    if (!old) this.adds.push(pod);
    else if (old.view !== known.view)
      (pod.metadata?.deletionTimestamp ? this.deletes : this.changed).push(pod);
    else if (old.status !== known.status) this.reconciles.push(pod);
    return known;
  }

  updates(): PodUpdate[] {
    const out: PodUpdate[] = [];
    const push = (op: PodUpdate['op'], pods: V1Pod[]) => {
      if (pods.length > 0) out.push({ op, pods, source: this.source });
    };
    push('REMOVE', this.removes);
    push('ADD', this.adds);
    push('UPDATE', this.changed);
    push('DELETE', this.deletes);
    push('RECONCILE', this.reconciles);
    return out;
  }
}

/** What the kubelet acts on: spec, labels, annotations and the deletion fields. Status is not. */
export function podsDifferSemantically(a: V1Pod, b: V1Pod): boolean {
  return podView(a) !== podView(b);
}

function podView(p: V1Pod): string {
  return canonicalJson({
    spec: p.spec,
    labels: p.metadata?.labels ?? {},
    annotations: p.metadata?.annotations ?? {},
    deletionTimestamp: p.metadata?.deletionTimestamp
      ? new Date(p.metadata.deletionTimestamp).getTime()
      : null,
    deletionGracePeriodSeconds: p.metadata?.deletionGracePeriodSeconds ?? null,
  });
}
