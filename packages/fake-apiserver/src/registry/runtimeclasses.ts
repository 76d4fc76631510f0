import { Quantity } from '@kh/apimachinery';
import { metadataFields } from '../selectors/field.js';
import { checkDnsLabel, validateLabels, validateObjectMeta } from '../validation/meta.js';
import { validateTolerations } from '../validation/pod.js';
import { runtimeClassColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

/**
 * node.k8s.io/v1 RuntimeClass: cluster-scoped, no status. `handler` names the CRI runtime handler
 * a node passes to RunPodSandbox for pods of the class, so it must be a DNS-1123 label and can
 * never change; overhead and scheduling are optional.
 */
export const runtimeclasses: ResourceDef = {
  group: 'node.k8s.io',
  version: 'v1',
  resource: 'runtimeclasses',
  singular: 'runtimeclass',
  kind: 'RuntimeClass',
  namespaced: false,
  typeName: 'io.k8s.api.node.v1.RuntimeClass',
  storage: 'runtimeclasses.node.k8s.io',
  verbs: ALL_VERBS,
  subresources: [],
  hasStatus: false,
  fields: metadataFields,
  columns: runtimeClassColumns,
  validate(rc, errs, old) {
    validateObjectMeta(rc, errs, false);
    if (typeof rc.handler !== 'string' || rc.handler === '') errs.required('handler');
    else checkDnsLabel(errs, 'handler', rc.handler);
    if (old && rc.handler !== old.handler) errs.invalid('handler', rc.handler, 'field is immutable');
    for (const [name, q] of Object.entries(rc.overhead?.podFixed ?? {})) {
      const field = `overhead.podFixed[${name}]`;
      const quantity = Quantity.tryFromJSON(q);
      if (quantity === undefined) errs.invalid(field, q, 'must be a valid quantity');
      else if (quantity.sign() < 0) errs.invalid(field, q, 'must be greater than or equal to 0');
    }
    validateLabels(rc.scheduling?.nodeSelector, errs, 'scheduling.nodeSelector');
    validateTolerations(rc.scheduling?.tolerations, errs, 'scheduling.tolerations');
  },
};
