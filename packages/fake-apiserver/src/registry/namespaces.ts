import { metadataFields } from '../selectors/field.js';
import { checkDnsLabel, validateObjectMeta } from '../validation/meta.js';
import { namespaceColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

export const namespaces: ResourceDef = {
  group: '',
  version: 'v1',
  resource: 'namespaces',
  singular: 'namespace',
  kind: 'Namespace',
  namespaced: false,
  shortNames: ['ns'],
  typeName: 'io.k8s.api.core.v1.Namespace',
  storage: 'namespaces',
  verbs: ALL_VERBS.filter((v) => v !== 'deletecollection'),
  subresources: [],
  hasStatus: true,
  fields: { ...metadataFields, 'status.phase': (o) => o.status?.phase },
  columns: namespaceColumns,
  prepareForCreate(ns) {
    ns.spec = { finalizers: ['kubernetes'] };
    ns.status = { phase: 'Active' };
    ns.metadata.labels = { ...(ns.metadata.labels ?? {}), 'kubernetes.io/metadata.name': ns.metadata.name };
  },
  prepareForUpdate(ns) {
    ns.metadata.labels = { ...(ns.metadata.labels ?? {}), 'kubernetes.io/metadata.name': ns.metadata.name };
  },
  validate(ns, errs) {
    validateObjectMeta(ns, errs, false, checkDnsLabel);
  },
};
