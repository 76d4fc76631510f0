// Whether a node satisfies a pod's nodeSelector and required node affinity, as the scheduler's
// NodeAffinity filter and the kubelet's admission predicate both decide it. One implementation so
// the apiserver's scheduler and the node agent never disagree about where a pod may run.

/** One requirement of a node selector term (v1.NodeSelectorRequirement). */
export interface NodeSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

/** Requirements ANDed together (v1.NodeSelectorTerm). */
export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

/** Terms ORed together (v1.NodeSelector). */
export interface NodeSelector {
  nodeSelectorTerms?: NodeSelectorTerm[];
}

/** The parts of a v1.Node that node affinity reads. */
export interface AffinityNode {
  metadata?: { name?: string; labels?: Record<string, string> };
}

/** The parts of a v1.Pod spec that node affinity reads. */
export interface AffinityPod {
  spec?: {
    nodeSelector?: Record<string, string>;
    affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: NodeSelector } };
  };
}

/** The only field a matchFields requirement may select on. */
export const ObjectNameField = 'metadata.name';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** A Gt/Lt operand as Kubernetes reads it (a base-10 int64), or undefined when it is not one. */
function parseInt64(s: string | undefined): bigint | undefined {
  if (s === undefined || !/^[+-]?\d+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n < INT64_MIN || n > INT64_MAX ? undefined : n;
}

/**
 * Whether a label (or field) value satisfies one requirement; `value` is undefined when the node
 * has no such label. Gt and Lt compare as int64, exactly, and need exactly one value; an operand
 * that is not an int64 matches nothing. Unknown operators match nothing.
 */
export function nodeSelectorRequirementMatches(
  r: NodeSelectorRequirement,
  value: string | undefined,
): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (values.length !== 1) return false;
      const [have, want] = [parseInt64(value), parseInt64(values[0])];
      if (have === undefined || want === undefined) return false;
      return r.operator === 'Gt' ? have > want : have < want;
    }
    default:
      return false;
  }
}

/** A term matches when all its requirements do; a term with no requirements matches nothing. */
export function nodeSelectorTermMatches(term: NodeSelectorTerm, node: AffinityNode): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  const labels = node.metadata?.labels ?? {};
  return (
    exprs.every((r) => nodeSelectorRequirementMatches(r, labels[r.key])) &&
    fields.every((r) =>
      nodeSelectorRequirementMatches(r, r.key === ObjectNameField ? node.metadata?.name : undefined),
    )
  );
}

/** A selector matches when any of its terms does; no terms match nothing. */
export function nodeSelectorMatches(selector: NodeSelector, node: AffinityNode): boolean {
  return (selector.nodeSelectorTerms ?? []).some((t) => nodeSelectorTermMatches(t, node));
}

/**
 * Whether the node carries every label of the pod's nodeSelector and, when the pod has required
 * node affinity, matches it (Kubernetes' GetRequiredNodeAffinity(pod).Match(node)).
 */
export function podMatchesNodeAffinity(pod: AffinityPod, node: AffinityNode): boolean {
  const labels = node.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const required = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  return required === undefined || nodeSelectorMatches(required, node);
}
