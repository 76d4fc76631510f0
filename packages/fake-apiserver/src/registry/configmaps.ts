import { deepEqual } from '../meta/equal.js';
import { metadataFields } from '../selectors/field.js';
import { validateObjectMeta } from '../validation/meta.js';
import { configMapColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

const KEY = /^[-._a-zA-Z0-9]+$/;

export const configmaps: ResourceDef = {
  group: '',
  version: 'v1',
  resource: 'configmaps',
  singular: 'configmap',
  kind: 'ConfigMap',
  namespaced: true,
  shortNames: ['cm'],
  typeName: 'io.k8s.api.core.v1.ConfigMap',
  storage: 'configmaps',
  verbs: ALL_VERBS,
  subresources: [],
  hasStatus: false,
  fields: metadataFields,
  columns: configMapColumns,
  validate(cm, errs, old) {
    validateObjectMeta(cm, errs, true);
    for (const k of [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})]) {
      if (!KEY.test(k))
        errs.invalid(
          `data[${k}]`,
          k,
          "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
        );
    }
    if (old?.immutable && !deepEqual([cm.data, cm.binaryData], [old.data, old.binaryData])) {
      errs.forbidden('data', 'field is immutable when `immutable` is set');
    }
  },
};
