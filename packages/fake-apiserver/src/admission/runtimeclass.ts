// The RuntimeClass admission plugin: a new pod naming a RuntimeClass must name one that exists,
// and takes the class's pod overhead and scheduling constraints (node selector, tolerations), so
// the scheduler and the kubelet account for what the class's runtime costs and needs. Its
// mutating half fills them in; its validating half makes sure no later plugin changed the overhead.
import { Quantity } from '@kh/apimachinery';
import type { KObject } from '../meta/object.js';
import { runtimeclasses } from '../registry/runtimeclasses.js';
import type { Store } from '../storage/store.js';
import { type AdmissionAttributes, type AdmissionPlugin, admissionForbidden } from './attributes.js';

type ResourceList = Record<string, unknown>;

interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

/** The pod and its class, or nothing for writes the plugin ignores (only pod CREATE counts). */
function podAndClass(store: Store, a: AdmissionAttributes): { pod: KObject; rc?: KObject } | undefined {
  if (a.operation !== 'CREATE' || a.group !== '' || a.resource !== 'pods' || a.subresource !== '')
    return undefined;
  const pod = a.object;
  if (pod === undefined) return undefined;
  const name: unknown = pod.spec?.runtimeClassName;
  // An empty name is no class at all (validation then refuses it), not a lookup of "".
  if (typeof name !== 'string' || name === '') return { pod };
  const rc = store.get(runtimeclasses.storage, '', name);
  if (rc === undefined) throw admissionForbidden(a, `pod rejected: RuntimeClass "${name}" not found`);
  return { pod, rc };
}

/** apimachinery's semantic equality of resource lists: the same names, quantities equal by value. */
export function resourceListsEqual(a: ResourceList | undefined, b: ResourceList | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => {
    if (!(k in b)) return false;
    const qa = Quantity.tryFromJSON(a[k]);
    const qb = Quantity.tryFromJSON(b[k]);
    return qa !== undefined && qb !== undefined ? qa.cmp(qb) === 0 : a[k] === b[k];
  });
}

const OVERHEAD_MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";

/** Mutating: sets the pod's overhead and scheduling constraints from its class. */
export function runtimeClassAdmit(store: Store): AdmissionPlugin {
  return (a) => {
    const found = podAndClass(store, a);
    if (found?.rc === undefined) return;
    const { pod, rc } = found;
    const podFixed: ResourceList | undefined = rc.overhead?.podFixed;
    if (podFixed !== undefined) {
      if (pod.spec.overhead !== undefined && !resourceListsEqual(podFixed, pod.spec.overhead))
        throw admissionForbidden(a, OVERHEAD_MISMATCH);
      pod.spec.overhead = structuredClone(podFixed);
    }
    const scheduling = rc.scheduling;
    if (scheduling === undefined) return;
    const classSelector: Record<string, string> = scheduling.nodeSelector ?? {};
    const podSelector: Record<string, string> | undefined = pod.spec.nodeSelector;
    if (podSelector === undefined) {
      if (scheduling.nodeSelector !== undefined) pod.spec.nodeSelector = { ...classSelector };
    } else {
      for (const [key, value] of Object.entries(classSelector)) {
        const podValue = podSelector[key];
        if (podValue !== undefined && podValue !== value) {
          throw admissionForbidden(
            a,
            `conflict: runtimeClass.scheduling.nodeSelector[${key}] = ${value}; pod.spec.nodeSelector[${key}] = ${podValue}`,
          );
        }
        podSelector[key] = value;
      }
    }
    const merged = mergeTolerations(pod.spec.tolerations ?? [], scheduling.tolerations ?? []);
    if (merged.length > 0 || pod.spec.tolerations !== undefined) pod.spec.tolerations = merged;
  };
}

/** Validating: the overhead the pod is stored with is exactly its class's (or none without one). */
export function runtimeClassValidate(store: Store): AdmissionPlugin {
  return (a) => {
    const found = podAndClass(store, a);
    if (found === undefined) return;
    const podFixed: ResourceList | undefined = found.rc?.overhead?.podFixed;
    const overhead: ResourceList | undefined = found.pod.spec?.overhead;
    if (podFixed !== undefined) {
      if (!resourceListsEqual(podFixed, overhead)) throw admissionForbidden(a, OVERHEAD_MISMATCH);
    } else if (overhead !== undefined) {
      throw admissionForbidden(
        a,
        'pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead',
      );
    }
  };
}

/**
 * Kubernetes' tolerations.MergeTolerations: both lists in order, leaving out each toleration
 * that another one kept (or a different later one) already covers.
 */
export function mergeTolerations(first: Toleration[], second: Toleration[]): Toleration[] {
  const all = [...first, ...second];
  const merged: Toleration[] = [];
  all.forEach((t, i) => {
    if (merged.some((kept) => isSuperset(kept, t))) return;
    if (all.slice(i + 1).some((later) => !sameToleration(t, later) && isSuperset(later, t))) return;
    merged.push(t);
  });
  return merged;
}

const sameToleration = (a: Toleration, b: Toleration) =>
  (a.key ?? '') === (b.key ?? '') &&
  (a.operator ?? '') === (b.operator ?? '') &&
  (a.value ?? '') === (b.value ?? '') &&
  (a.effect ?? '') === (b.effect ?? '') &&
  a.tolerationSeconds === b.tolerationSeconds;

/** Whether `ss` tolerates every taint `t` does (for NoExecute, for at least as long). */
export function isSuperset(ss: Toleration, t: Toleration): boolean {
  if (sameToleration(ss, t)) return true;
  // An empty key with Exists matches every key.
  if ((t.key ?? '') !== (ss.key ?? '') && ((ss.key ?? '') !== '' || ss.operator !== 'Exists')) return false;
  // An empty effect matches every effect.
  if ((t.effect ?? '') !== (ss.effect ?? '') && (ss.effect ?? '') !== '') return false;
  if (ss.effect === 'NoExecute' && ss.tolerationSeconds !== undefined) {
    if (t.tolerationSeconds === undefined || t.tolerationSeconds > ss.tolerationSeconds) return false;
  }
  switch (ss.operator ?? '') {
    case '':
    case 'Equal':
      return t.operator === 'Equal' && (t.value ?? '') === (ss.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}
