import { deepEqual } from '../meta/equal.js';
import type { KObject } from '../meta/object.js';
import { metadataFields } from '../selectors/field.js';
import { checkConfigKey } from '../validation/config_key.js';
import { validateObjectMeta } from '../validation/meta.js';
import { secretColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

/** stringData is write-only: it is merged into data (base64) before storing. */
function foldStringData(s: KObject) {
  for (const [k, v] of Object.entries(s.stringData ?? {})) {
    s.data = { ...(s.data ?? {}), [k]: Buffer.from(String(v)).toString('base64') };
  }
  delete s.stringData;
}

export const secrets: ResourceDef = {
  group: '',
  version: 'v1',
  resource: 'secrets',
  singular: 'secret',
  kind: 'Secret',
  namespaced: true,
  typeName: 'io.k8s.api.core.v1.Secret',
  storage: 'secrets',
  verbs: ALL_VERBS,
  subresources: [],
  hasStatus: false,
  fields: { ...metadataFields, type: (o) => o.type },
  columns: secretColumns,
  prepareForCreate(s) {
    s.type ??= 'Opaque';
    foldStringData(s);
  },
  prepareForUpdate(s, old) {
    s.type ??= old.type;
    foldStringData(s);
  },
  validate(s, errs, old) {
    validateObjectMeta(s, errs, true);
    for (const [k, v] of Object.entries(s.data ?? {})) {
      checkConfigKey(errs, `data[${k}]`, k);
      if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v))
        errs.invalid(`data[${k}]`, '<value>', 'must be base64');
    }
    if (s.type === 'kubernetes.io/dockerconfigjson' && !s.data?.['.dockerconfigjson']) {
      errs.required('data[.dockerconfigjson]');
    }
    if (old !== undefined && old.type !== s.type) errs.invalid('type', s.type, 'field is immutable');
    // ValidateSecretUpdate: once immutable, neither the mark nor the data may change (422 Invalid).
    if (old?.immutable === true) {
      if (s.immutable !== true) errs.forbidden('immutable', 'field is immutable when `immutable` is set');
      if (!deepEqual(s.data ?? {}, old.data ?? {}))
        errs.forbidden('data', 'field is immutable when `immutable` is set');
    }
  },
};
