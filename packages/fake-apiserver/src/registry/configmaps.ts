import { deepEqual } from '../meta/equal.js';
import { metadataFields } from '../selectors/field.js';
import { checkConfigKey } from '../validation/config_key.js';
import { validateObjectMeta } from '../validation/meta.js';
import { configMapColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

const IMMUTABLE = 'field is immutable when `immutable` is set';

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
  // ValidateConfigMap, and ValidateConfigMapUpdate's immutability: once set, `immutable` stays
  // true and data and binaryData stay as they are (metadata may still change).
  validate(cm, errs, old) {
    validateObjectMeta(cm, errs, true);
    const binary = cm.binaryData ?? {};
    for (const k of Object.keys(cm.data ?? {})) {
      checkConfigKey(errs, `data[${k}]`, k);
      if (Object.hasOwn(binary, k)) errs.invalid(`data[${k}]`, k, 'duplicate of key present in binaryData');
    }
    for (const k of Object.keys(binary)) checkConfigKey(errs, `binaryData[${k}]`, k);
    if (old?.immutable === true) {
      if (cm.immutable !== true) errs.forbidden('immutable', IMMUTABLE);
      if (!deepEqual(cm.data, old.data)) errs.forbidden('data', IMMUTABLE);
      if (!deepEqual(cm.binaryData, old.binaryData)) errs.forbidden('binaryData', IMMUTABLE);
    }
  },
};
