import { defaultPod, qosClass } from '../defaults/pod.js';
import type { KObject } from '../meta/object.js';
import { metadataFields } from '../selectors/field.js';
import { validateObjectMeta } from '../validation/meta.js';
import {
  dropDisabledRestartFields,
  validateEphemeralContainersUpdate,
  validatePodCreate,
  validatePodResize,
  validatePodSpec,
  validatePodSpecUpdate,
  validatePodStatus,
} from '../validation/pod.js';
import { podColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

/**
 * What a part's write starts from: the stored pod, under the request's resourceVersion (its
 * precondition); the request is defaulted, so the part taken from it is as a pod write has it.
 */
function storedWithVersionOf(pod: KObject, old: KObject): KObject {
  defaultPod(pod);
  const next = structuredClone(old);
  next.metadata.resourceVersion = pod.metadata.resourceVersion;
  return next;
}

export const pods: ResourceDef = {
  group: '',
  version: 'v1',
  resource: 'pods',
  singular: 'pod',
  kind: 'Pod',
  namespaced: true,
  shortNames: ['po'],
  categories: ['all'],
  typeName: 'io.k8s.api.core.v1.Pod',
  storage: 'pods',
  verbs: ALL_VERBS,
  subresources: ['binding', 'ephemeralcontainers', 'eviction', 'log', 'resize'],
  hasStatus: true,
  tracksGeneration: true,
  fields: {
    ...metadataFields,
    'spec.nodeName': (o) => o.spec?.nodeName ?? '',
    'spec.restartPolicy': (o) => o.spec?.restartPolicy,
    'spec.schedulerName': (o) => o.spec?.schedulerName,
    'spec.serviceAccountName': (o) => o.spec?.serviceAccountName,
    'spec.hostNetwork': (o) => String(o.spec?.hostNetwork ?? false),
    'status.phase': (o) => o.status?.phase ?? '',
    'status.podIP': (o) => o.status?.podIP ?? '',
    'status.nominatedNodeName': (o) => o.status?.nominatedNodeName ?? '',
  },
  columns: podColumns,
  prepareForCreate(pod) {
    dropDisabledRestartFields(pod.spec, undefined);
    defaultPod(pod);
    pod.status = { phase: 'Pending', qosClass: qosClass(pod.spec) };
  },
  prepareForUpdate(pod, old) {
    dropDisabledRestartFields(pod.spec, old.spec);
    defaultPod(pod);
    // The QoS class is fixed at creation.
    if (pod.status && old.status?.qosClass) pod.status.qosClass = old.status.qosClass;
  },
  validate(pod, errs, old) {
    validateObjectMeta(pod, errs, true);
    validatePodSpec(pod.spec, errs);
    if (old === undefined) validatePodCreate(pod.spec, errs);
    else validatePodSpecUpdate(pod.spec, old.spec, errs);
    validatePodStatus(pod.status, errs);
  },
  parts: {
    // pods/resize (1.33): the request's containers' and init containers' resources and
    // resizePolicy over the stored pod; anything else it carries is dropped. Names travel with them
    // so validation sees a reordering; validation refuses any change to a non-sidecar init container.
    resize: {
      prepare(pod, old) {
        const next = storedWithVersionOf(pod, old);
        for (const list of ['containers', 'initContainers']) {
          const have: KObject[] = next.spec[list] ?? [];
          const given: KObject[] = pod.spec?.[list] ?? [];
          given.forEach((c, i) => {
            const target = have[i];
            if (target === undefined) return;
            target.name = c.name;
            if (c.resources === undefined) delete target.resources;
            else target.resources = c.resources;
            if (c.resizePolicy === undefined) delete target.resizePolicy;
            else target.resizePolicy = c.resizePolicy;
          });
          if (given.length !== have.length) {
            if (given.length > 0) next.spec[list] = given;
            else delete next.spec[list];
          }
        }
        return next;
      },
      validate: (pod, errs, old) => validatePodResize(pod, old, errs),
    },
    // pods/ephemeralcontainers: the request's spec.ephemeralContainers over the stored pod (as
    // dropNonEphemeralContainerUpdates); validation lets them only be added.
    ephemeralcontainers: {
      prepare(pod, old) {
        const next = storedWithVersionOf(pod, old);
        const given = pod.spec?.ephemeralContainers ?? [];
        if (given.length > 0) next.spec.ephemeralContainers = given;
        else delete next.spec.ephemeralContainers;
        return next;
      },
      validate: (pod, errs, old) => validateEphemeralContainersUpdate(pod, old, errs),
    },
  },
  gracePeriod(pod, requested) {
    // Pods never bound to a node and finished pods have nothing to stop: delete at once.
    if (!pod.spec?.nodeName) return 0;
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return 0;
    return requested ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
  },
};
