// The Priority admission plugin: a new pod's priorityClassName becomes its spec.priority and
// spec.preemptionPolicy (the global default class's, or 0, without a name), which the scheduler and
// the kubelet's eviction and shutdown ordering read; an update keeps what creation resolved. Its
// validating half lets only one PriorityClass be the global default.
import type { KObject } from '../meta/object.js';
import { priorityclasses } from '../registry/priorityclasses.js';
import type { Store } from '../storage/store.js';
import { type AdmissionPlugin, admissionForbidden } from './attributes.js';

/** The priority of a pod without a class when no class is the global default. */
export const DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS = 0;

/** The global default class; should several be (a race upstream too), the one of lowest value. */
export function defaultPriorityClass(store: Store): KObject | undefined {
  let found: KObject | undefined;
  for (const pc of store.list(priorityclasses.storage)) {
    if (pc.globalDefault === true && (found === undefined || pc.value < found.value)) found = pc;
  }
  return found;
}

/** Mutating: resolves a new pod's priority from its class; an update keeps the stored one. */
export function priorityAdmit(store: Store): AdmissionPlugin {
  return (a) => {
    if (a.group !== '' || a.resource !== 'pods' || a.subresource !== '') return;
    const spec = a.object?.spec;
    if (spec === undefined || spec === null) return;
    if (a.operation === 'UPDATE') {
      // Validation forbids changing them; a client that leaves them out means no change.
      const old = a.oldObject?.spec ?? {};
      if (spec.priority === undefined && old.priority !== undefined) spec.priority = old.priority;
      if (spec.preemptionPolicy === undefined && old.preemptionPolicy !== undefined)
        spec.preemptionPolicy = old.preemptionPolicy;
      return;
    }
    if (a.operation !== 'CREATE') return;
    let pc: KObject | undefined;
    if (spec.priorityClassName) {
      pc = store.get(priorityclasses.storage, '', spec.priorityClassName);
      if (pc === undefined)
        throw admissionForbidden(a, `no PriorityClass with name ${spec.priorityClassName} was found`);
    } else {
      pc = defaultPriorityClass(store);
      if (pc !== undefined) spec.priorityClassName = pc.metadata.name;
    }
    const priority: number = pc?.value ?? DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS;
    if (spec.priority !== undefined && spec.priority !== priority) {
      throw admissionForbidden(
        a,
        `the integer value of priority (${spec.priority}) must not be provided in pod spec; priority admission controller computed ${priority} from the given PriorityClass name`,
      );
    }
    spec.priority = priority;
    const policy: string | undefined = pc === undefined ? 'PreemptLowerPriority' : pc.preemptionPolicy;
    if (policy === undefined) return;
    if (spec.preemptionPolicy !== undefined && spec.preemptionPolicy !== policy) {
      throw admissionForbidden(
        a,
        `the string value of PreemptionPolicy (${spec.preemptionPolicy}) must not be provided in pod spec; priority admission controller computed ${policy} from the given PriorityClass name`,
      );
    }
    spec.preemptionPolicy = policy;
  };
}

/** Validating: a class may become the global default only while no other one is. */
export function priorityValidate(store: Store): AdmissionPlugin {
  return (a) => {
    if (a.group !== priorityclasses.group || a.resource !== priorityclasses.resource) return;
    if (a.subresource !== '' || (a.operation !== 'CREATE' && a.operation !== 'UPDATE')) return;
    if (a.object?.globalDefault !== true) return;
    const current = defaultPriorityClass(store);
    if (current === undefined) return;
    if (a.operation === 'CREATE' || current.metadata.name !== a.object.metadata.name) {
      throw admissionForbidden(
        a,
        `PriorityClass ${current.metadata.name} is already marked as default. Only one default can exist`,
      );
    }
  };
}
