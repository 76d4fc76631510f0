// Taints and tolerations as the scheduler's TaintToleration filter and the kubelet's admission
// handlers match them (v1.Toleration.ToleratesTaint).

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  /** How long a NoExecute taint is tolerated before eviction; matching ignores it. */
  tolerationSeconds?: number;
}

/**
 * Whether one toleration tolerates a taint. An empty effect matches every effect; an empty key
 * with operator Exists matches every taint; Equal (the default operator) needs key and value to
 * be equal (an absent value is ""). Unknown operators tolerate nothing.
 */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  switch (t.operator ?? '') {
    case 'Exists':
      return true;
    case '':
    case 'Equal':
      // An empty key is a wildcard only for Exists (the API rejects it with Equal).
      return (t.key ?? '') === taint.key && (t.value ?? '') === (taint.value ?? '');
    default:
      return false;
  }
}

/** Whether any of the tolerations tolerates the taint. */
export function tolerationsTolerateTaint(
  tolerations: readonly Toleration[] | undefined,
  taint: Taint,
): boolean {
  return (tolerations ?? []).some((t) => toleratesTaint(t, taint));
}

/** The first taint that passes `filter` and no toleration tolerates, or undefined. */
export function findMatchingUntoleratedTaint<T extends Taint>(
  taints: readonly T[] | undefined,
  tolerations: readonly Toleration[] | undefined,
  filter: (t: T) => boolean = () => true,
): T | undefined {
  return (taints ?? []).find((t) => filter(t) && !tolerationsTolerateTaint(tolerations, t));
}
