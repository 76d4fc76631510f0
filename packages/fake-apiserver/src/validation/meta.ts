import type { KObject } from '../meta/object.js';
import type { FieldErrors } from '../meta/status.js';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function isDnsLabel(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && DNS1123_SUBDOMAIN.test(s);
}

export function checkDnsLabel(errs: FieldErrors, field: string, v: string) {
  if (!isDnsLabel(v)) {
    errs.invalid(
      field,
      v,
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    );
  }
}

export function checkDnsSubdomain(errs: FieldErrors, field: string, v: string) {
  if (!isDnsSubdomain(v)) {
    errs.invalid(
      field,
      v,
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    );
  }
}

/** A label or annotation key: an optional DNS subdomain prefix and a qualified name. */
export function checkQualifiedKey(errs: FieldErrors, field: string, key: string) {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : '';
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if ((slash >= 0 && !isDnsSubdomain(prefix)) || name.length > 63 || !QUALIFIED_NAME.test(name)) {
    errs.invalid(
      field,
      key,
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    );
  }
}

/** Validates metadata common to every object; `nameCheck` is the resource's name rule. */
export function validateObjectMeta(
  obj: KObject,
  errs: FieldErrors,
  namespaced: boolean,
  nameCheck: (errs: FieldErrors, field: string, v: string) => void = checkDnsSubdomain,
) {
  const md = obj.metadata ?? {};
  if (!md.name) errs.required('metadata.name', 'name or generateName is required');
  else nameCheck(errs, 'metadata.name', md.name);
  if (namespaced && !md.namespace) errs.required('metadata.namespace');
  if (!namespaced && md.namespace) errs.forbidden('metadata.namespace', 'not allowed on this type');
  validateLabels(md.labels, errs, 'metadata.labels');
  for (const k of Object.keys(md.annotations ?? {})) checkQualifiedKey(errs, 'metadata.annotations', k);
}

/** A label map (metadata.labels, a node selector): qualified keys, label values. */
export function validateLabels(
  labels: Record<string, unknown> | undefined,
  errs: FieldErrors,
  field: string,
) {
  for (const [k, v] of Object.entries(labels ?? {})) {
    checkQualifiedKey(errs, field, k);
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v)) {
      errs.invalid(
        field,
        v,
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
      );
    }
  }
}
