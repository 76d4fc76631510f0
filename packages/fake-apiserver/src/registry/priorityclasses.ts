import type { KObject } from '../meta/object.js';
import { forbidden } from '../meta/status.js';
import { metadataFields } from '../selectors/field.js';
import { validateObjectMeta } from '../validation/meta.js';
import { validatePreemptionPolicy } from '../validation/pod.js';
import { priorityClassColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

/** The highest value a class not created by the system may have (scheduling.HighestUserDefinablePriority). */
export const HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000;
/** The value of system-cluster-critical; the kubelet treats pods at or above it as critical. */
export const SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY;
/** Names with this prefix belong to the built-in classes only. */
export const SYSTEM_PRIORITY_CLASS_PREFIX = 'system-';

/** The classes kube-apiserver's bootstrap hook creates at start-up and never lets be deleted. */
export const SYSTEM_PRIORITY_CLASSES: readonly KObject[] = [
  {
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: 'system-node-critical' },
    value: SYSTEM_CRITICAL_PRIORITY + 1000,
    description: 'Used for system critical pods that must not be moved from their current node.',
  },
  {
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: 'system-cluster-critical' },
    value: SYSTEM_CRITICAL_PRIORITY,
    description:
      'Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.',
  },
];

/** Why a `system-` class is not one of the built-ins exactly (IsKnownSystemPriorityClass), if it is not. */
function unknownSystemClass(pc: KObject): string | undefined {
  const known = SYSTEM_PRIORITY_CLASSES.find((s) => s.metadata.name === pc.metadata.name);
  if (known === undefined) return `${pc.metadata.name} is not a known system priority class`;
  if (pc.value !== known.value) return `value of ${known.metadata.name} PriorityClass must be ${known.value}`;
  if ((pc.globalDefault ?? false) !== false)
    return `globalDefault of ${known.metadata.name} PriorityClass must be false`;
  return undefined;
}

/** SetDefaults_PriorityClass, and the zero value a Go client would decode an absent `value` to. */
function defaultPriorityClass(pc: KObject) {
  pc.value ??= 0;
  pc.preemptionPolicy ??= 'PreemptLowerPriority';
}

/**
 * scheduling.k8s.io/v1 PriorityClass: cluster-scoped, no status. The Priority admission plugin
 * turns a pod's priorityClassName into its spec.priority and preemptionPolicy, so a class's value
 * and policy never change once created; values above 1e9 and `system-` names are the built-ins'.
 */
export const priorityclasses: ResourceDef = {
  group: 'scheduling.k8s.io',
  version: 'v1',
  resource: 'priorityclasses',
  singular: 'priorityclass',
  kind: 'PriorityClass',
  namespaced: false,
  shortNames: ['pc'],
  typeName: 'io.k8s.api.scheduling.v1.PriorityClass',
  storage: 'priorityclasses.scheduling.k8s.io',
  verbs: ALL_VERBS,
  subresources: [],
  hasStatus: false,
  fields: metadataFields,
  columns: priorityClassColumns,
  prepareForCreate(pc) {
    defaultPriorityClass(pc);
    // Set once, never bumped: the strategy's PrepareForCreate, with an empty PrepareForUpdate.
    pc.metadata.generation = 1;
  },
  prepareForUpdate: defaultPriorityClass,
  validate(pc, errs, old) {
    validateObjectMeta(pc, errs, false);
    // ValidatePriorityClassUpdate checks only what may not change, not what creation checked.
    if (old !== undefined) {
      if (pc.value !== old.value) errs.forbidden('value', 'may not be changed in an update.');
      if (pc.preemptionPolicy !== old.preemptionPolicy)
        errs.invalid('preemptionPolicy', pc.preemptionPolicy, 'field is immutable');
      return;
    }
    const name: string = pc.metadata.name ?? '';
    if (name.startsWith(SYSTEM_PRIORITY_CLASS_PREFIX)) {
      const why = unknownSystemClass(pc);
      if (why !== undefined) {
        errs.forbidden(
          'metadata.name',
          `priority class names with '${SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use only. error: ${why}`,
        );
      }
    } else if (pc.value > HIGHEST_USER_DEFINABLE_PRIORITY) {
      errs.forbidden(
        'value',
        `maximum allowed value of a user defined priority is ${HIGHEST_USER_DEFINABLE_PRIORITY}`,
      );
    }
    validatePreemptionPolicy(pc.preemptionPolicy, errs, 'preemptionPolicy');
  },
  beforeDelete(pc) {
    if (SYSTEM_PRIORITY_CLASSES.some((s) => s.metadata.name === pc.metadata.name)) {
      throw forbidden(
        { group: 'scheduling.k8s.io', resource: 'priorityclasses' },
        pc.metadata.name,
        'this is a system priority class and cannot be deleted',
      );
    }
  },
};
