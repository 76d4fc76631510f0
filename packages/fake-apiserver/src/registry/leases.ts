import { metadataFields } from '../selectors/field.js';
import { validateObjectMeta } from '../validation/meta.js';
import { leaseColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

export const leases: ResourceDef = {
  group: 'coordination.k8s.io',
  version: 'v1',
  resource: 'leases',
  singular: 'lease',
  kind: 'Lease',
  namespaced: true,
  typeName: 'io.k8s.api.coordination.v1.Lease',
  storage: 'leases.coordination.k8s.io',
  verbs: ALL_VERBS,
  subresources: [],
  hasStatus: false,
  allowCreateOnUpdate: true,
  fields: metadataFields,
  columns: leaseColumns,
  validate(lease, errs) {
    validateObjectMeta(lease, errs, true);
    const d = lease.spec?.leaseDurationSeconds;
    if (d !== undefined && d !== null && d <= 0)
      errs.invalid('spec.leaseDurationSeconds', d, 'must be greater than 0');
  },
};
