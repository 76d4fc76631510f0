import { defaultPod, qosClass } from '../defaults/pod.js';
import { metadataFields } from '../selectors/field.js';
import { validateObjectMeta } from '../validation/meta.js';
import { validatePodSpec, validatePodSpecUpdate, validatePodStatus } from '../validation/pod.js';
import { podColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

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
  subresources: ['binding', 'eviction', 'log'],
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
    defaultPod(pod);
    pod.status = { phase: 'Pending', qosClass: qosClass(pod.spec) };
  },
  prepareForUpdate(pod, old) {
    defaultPod(pod);
    // The QoS class is fixed at creation.
    if (pod.status && old.status?.qosClass) pod.status.qosClass = old.status.qosClass;
  },
  validate(pod, errs, old) {
    validateObjectMeta(pod, errs, true);
    validatePodSpec(pod.spec, errs);
    if (old !== undefined) validatePodSpecUpdate(pod.spec, old.spec, errs);
    validatePodStatus(pod.status, errs);
  },
  gracePeriod(pod, requested) {
    // Pods never bound to a node and finished pods have nothing to stop: delete at once.
    if (!pod.spec?.nodeName) return 0;
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return 0;
    return requested ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
  },
};
