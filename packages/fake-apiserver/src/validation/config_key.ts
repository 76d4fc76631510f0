import type { FieldErrors } from '../meta/status.js';

const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

/**
 * validation.IsConfigMapKey, each message a field.Invalid at `field` (e.g. `data[key]`): config
 * map and secret keys become file names in a volume, so `.`, `..` and a `..` prefix are refused.
 */
export function checkConfigKey(errs: FieldErrors, field: string, key: string) {
  if (key.length > 253) errs.invalid(field, key, 'must be no more than 253 characters');
  if (!CONFIG_KEY.test(key))
    errs.invalid(
      field,
      key,
      "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
    );
  if (key === '.') errs.invalid(field, key, "must not be '.'");
  else if (key === '..') errs.invalid(field, key, "must not be '..'");
  else if (key.startsWith('..')) errs.invalid(field, key, "must not start with '..'");
}
