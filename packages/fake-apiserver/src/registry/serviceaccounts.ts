import { metadataFields } from '../selectors/field.js';
import { validateObjectMeta } from '../validation/meta.js';
import { serviceAccountColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

export const serviceaccounts: ResourceDef = {
  group: '',
  version: 'v1',
  resource: 'serviceaccounts',
  singular: 'serviceaccount',
  kind: 'ServiceAccount',
  namespaced: true,
  shortNames: ['sa'],
  typeName: 'io.k8s.api.core.v1.ServiceAccount',
  storage: 'serviceaccounts',
  verbs: ALL_VERBS,
  subresources: [],
  hasStatus: false,
  fields: metadataFields,
  columns: serviceAccountColumns,
  validate(sa, errs) {
    validateObjectMeta(sa, errs, true);
  },
};
