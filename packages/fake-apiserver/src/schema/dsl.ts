/**
 * A compact description of the API types. One source feeds the OpenAPI v2/v3 documents, strict
 * field validation and pruning of unknown fields, and the strategic-merge-patch list keys.
 */
export type Schema =
  | { kind: 'scalar'; type: 'string' | 'integer' | 'boolean' | 'number'; format?: string }
  | { kind: 'ref'; name: string }
  | {
      kind: 'array';
      items: Schema;
      mergeKey?: string;
      strategy?: string;
      listType?: string;
      listMapKeys?: string[];
    }
  | { kind: 'map'; values: Schema }
  /** Any JSON (x-kubernetes-preserve-unknown-fields). */
  | { kind: 'any' };

export interface Definition {
  props: Record<string, Schema>;
  required?: string[];
  /** Only scalar content (Quantity, Time, IntOrString): rendered as a string schema. */
  scalar?: { type: string; format?: string };
  gvk?: { group: string; version: string; kind: string };
  /** Patch strategy for the whole struct (retainKeys on volume sources). */
  strategy?: string;
}

export const str: Schema = { kind: 'scalar', type: 'string' };
export const int: Schema = { kind: 'scalar', type: 'integer', format: 'int32' };
export const int64: Schema = { kind: 'scalar', type: 'integer', format: 'int64' };
export const bool: Schema = { kind: 'scalar', type: 'boolean' };
export const num: Schema = { kind: 'scalar', type: 'number', format: 'double' };
export const bytes: Schema = { kind: 'scalar', type: 'string', format: 'byte' };
export const any: Schema = { kind: 'any' };
export const ref = (name: string): Schema => ({ kind: 'ref', name });
export const map = (values: Schema = str): Schema => ({ kind: 'map', values });
export const arr = (
  items: Schema,
  opts: { mergeKey?: string; strategy?: string; listType?: string; listMapKeys?: string[] } = {},
): Schema => ({ kind: 'array', items, ...opts });
/** A list merged by key, as strategic merge patch and apply treat containers, conditions... */
export const keyed = (items: Schema, key: string): Schema =>
  arr(items, { mergeKey: key, strategy: 'merge', listType: 'map', listMapKeys: [key] });

export const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
export const TIME = 'io.k8s.apimachinery.pkg.apis.meta.v1.Time';
export const MICROTIME = 'io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime';
export const INTORSTRING = 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';
export const OBJECTMETA = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
export const LISTMETA = 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta';

export const quantity = ref(QUANTITY);
export const time = ref(TIME);
export const microTime = ref(MICROTIME);
export const intOrString = ref(INTORSTRING);
export const resources = map(quantity);
