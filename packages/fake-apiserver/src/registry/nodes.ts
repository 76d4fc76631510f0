import { defaultNode } from '../defaults/node.js';
import { metadataFields } from '../selectors/field.js';
import { validateObjectMeta } from '../validation/meta.js';
import { validateNode } from '../validation/node.js';
import { nodeColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

export const nodes: ResourceDef = {
  group: '',
  version: 'v1',
  resource: 'nodes',
  singular: 'node',
  kind: 'Node',
  namespaced: false,
  shortNames: ['no'],
  typeName: 'io.k8s.api.core.v1.Node',
  storage: 'nodes',
  verbs: ALL_VERBS,
  subresources: [],
  hasStatus: true,
  fields: { ...metadataFields, 'spec.unschedulable': (o) => String(o.spec?.unschedulable ?? false) },
  columns: nodeColumns,
  // The kubelet registers its node with a status; only later writes go through /status.
  prepareForCreate: defaultNode,
  prepareForUpdate: defaultNode,
  validate(node, errs, old) {
    validateObjectMeta(node, errs, false);
    validateNode(node, errs, old);
  },
};
