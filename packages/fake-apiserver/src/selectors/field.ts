import type { KObject } from '../meta/object.js';
import { badRequest } from '../meta/status.js';

export type FieldSelector = (obj: KObject) => boolean;

/** A resource's selectable fields: label -> value extracted from the object. */
export type FieldSet = Record<string, (obj: KObject) => string | undefined>;

export const metadataFields: FieldSet = {
  'metadata.name': (o) => o.metadata?.name,
  'metadata.namespace': (o) => o.metadata?.namespace ?? '',
};

/** Parses `?fieldSelector=` (=, ==, != joined by commas) against the fields a resource supports. */
export function parseFieldSelector(
  s: string | undefined | null,
  fields: FieldSet,
): FieldSelector | undefined {
  if (s === undefined || s === null || s.trim() === '') return undefined;
  const terms = s
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '')
    .map((t) => {
      const m = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/.exec(t);
      if (!m) throw badRequest(`invalid selector: '${s}'; can't understand '${t}'`);
      // Own properties only: `__proto__` or `constructor` must not reach Object.prototype.
      const get = Object.hasOwn(fields, m[1]!) ? fields[m[1]!] : undefined;
      if (typeof get !== 'function') {
        throw badRequest(`field label not supported: ${m[1]}`);
      }
      return { get, neg: m[2] === '!=', value: m[3]!.replace(/\\(.)/g, '$1') };
    });
  return (obj) => terms.every((t) => ((t.get(obj) ?? '') === t.value) !== t.neg);
}

/**
 * The value a raw field selector requires `field` to equal (`field=v` or `field==v`), as
 * kube-apiserver reads a list's name from `metadata.name=` and the Node authorizer a pod list's
 * node from `spec.nodeName=`; undefined when no term pins it.
 */
export function exactMatch(raw: string | null | undefined, field: string): string | undefined {
  for (const term of (raw ?? '').split(',')) {
    const m = /^\s*([^=!]+?)\s*(==|=)\s*(.*?)\s*$/.exec(term);
    if (m?.[1] === field) return m[3]!.replace(/\\(.)/g, '$1');
  }
  return undefined;
}
