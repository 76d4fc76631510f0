import type { KObject } from '../meta/object.js';
import { ApiError } from '../meta/status.js';
import type { Schema } from '../schema/dsl.js';
import { definition } from '../schema/walk.js';

const isObject = (v: unknown): v is KObject => typeof v === 'object' && v !== null && !Array.isArray(v);

const ORDER = '$setElementOrder/';
const DELETE_PRIMITIVE = '$deleteFromPrimitiveList/';

/** How a value at some position merges: by its schema, or as plain JSON where none is known. */
type Shape = { props?: Record<string, Schema>; values?: Schema } | undefined;

function shapeOf(s: Schema | undefined): Shape {
  if (s === undefined || s.kind === 'any' || s.kind === 'scalar') return undefined;
  if (s.kind === 'map') return { values: s.values };
  if (s.kind === 'ref') {
    const d = definition(s.name);
    return d.scalar === undefined ? { props: d.props } : undefined;
  }
  return undefined;
}

function childSchema(shape: Shape, key: string): Schema | undefined {
  if (shape === undefined) return undefined;
  return shape.props !== undefined ? shape.props[key] : shape.values;
}

/**
 * Applies a strategic merge patch to `original` of the named type: lists with a merge key
 * (containers by name, conditions by type, addresses by type...) merge element-wise, primitive
 * lists with the merge strategy union, and the $patch / $retainKeys / $setElementOrder /
 * $deleteFromPrimitiveList directives are honoured.
 */
export function applyStrategicMergePatch(original: unknown, patch: unknown, typeName: string): unknown {
  if (!isObject(patch)) throw new ApiError(400, 'BadRequest', 'strategic merge patch must be a JSON object');
  return mergeMap(isObject(original) ? original : {}, patch, { kind: 'ref', name: typeName });
}

function mergeMap(original: KObject, patch: KObject, schema: Schema | undefined): KObject | undefined {
  const directive = patch.$patch;
  if (directive === 'delete') return undefined;
  if (directive === 'replace') {
    const { $patch: _, ...rest } = patch;
    return stripDirectives(rest) as KObject;
  }
  if (directive !== undefined && directive !== 'merge') {
    throw new ApiError(
      422,
      'Invalid',
      `unknown patch type: ${String(directive)} in map: ${JSON.stringify(patch)}`,
    );
  }
  const shape = shapeOf(schema);
  let out: KObject = { ...original };
  if (Array.isArray(patch.$retainKeys)) {
    const keep = new Set(patch.$retainKeys as string[]);
    out = Object.fromEntries(Object.entries(out).filter(([k]) => keep.has(k)));
  }
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith(ORDER)) continue;
    if (k.startsWith(DELETE_PRIMITIVE)) {
      const field = k.slice(DELETE_PRIMITIVE.length);
      const drop = new Set((v as unknown[]).map((x) => JSON.stringify(x)));
      if (Array.isArray(out[field]))
        out[field] = (out[field] as unknown[]).filter((x) => !drop.has(JSON.stringify(x)));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    const child = childSchema(shape, k);
    if (isObject(v)) {
      const merged = mergeMap(isObject(out[k]) ? out[k] : {}, v, child);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else if (Array.isArray(v)) {
      out[k] = mergeList(Array.isArray(out[k]) ? out[k] : [], v, child, patch[`${ORDER}${k}`]);
    } else out[k] = v;
  }
  // An order directive for a list the patch did not otherwise touch still reorders it.
  for (const [k, order] of Object.entries(patch)) {
    if (!k.startsWith(ORDER)) continue;
    const field = k.slice(ORDER.length);
    if (!Object.hasOwn(patch, field) && Array.isArray(out[field]) && Array.isArray(order)) {
      const s = childSchema(shape, field);
      out[field] = reorder(out[field] as unknown[], order, s?.kind === 'array' ? s.mergeKey : undefined);
    }
  }
  return out;
}

function stripDirectives(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripDirectives);
  if (!isObject(v)) return v;
  const out: KObject = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = stripDirectives(x);
  return out;
}

function mergeList(
  original: unknown[],
  patch: unknown[],
  schema: Schema | undefined,
  order: unknown,
): unknown[] {
  const strategy = schema?.kind === 'array' ? (schema.strategy ?? '') : '';
  const mergeKey = schema?.kind === 'array' ? schema.mergeKey : undefined;
  if (patch.some((p) => isObject(p) && p.$patch === 'replace')) {
    return patch.filter((p) => !(isObject(p) && p.$patch === 'replace')).map(stripDirectives);
  }
  if (!strategy.includes('merge')) return patch.map(stripDirectives);
  let out: unknown[];
  if (mergeKey === undefined) {
    // A set of primitives: union, keeping the original order.
    const seen = new Set(original.map((x) => JSON.stringify(x)));
    out = [...original];
    for (const p of patch) if (!seen.has(JSON.stringify(p))) out.push(p);
  } else {
    out = [...original];
    const items = schema?.kind === 'array' ? schema.items : undefined;
    for (const p of patch) {
      if (!isObject(p)) throw new ApiError(422, 'Invalid', `patch item is not a map: ${JSON.stringify(p)}`);
      const key = p[mergeKey];
      if (key === undefined) {
        throw new ApiError(
          422,
          'Invalid',
          `map: ${JSON.stringify(p)} does not contain declared merge key: ${mergeKey}`,
        );
      }
      const i = out.findIndex((o) => isObject(o) && o[mergeKey] === key);
      if (p.$patch === 'delete') {
        if (i >= 0) out.splice(i, 1);
        continue;
      }
      if (i >= 0) {
        const merged = mergeMap(out[i] as KObject, p, items);
        if (merged === undefined) out.splice(i, 1);
        else out[i] = merged;
      } else out.push(stripDirectives(p));
    }
  }
  return Array.isArray(order) ? reorder(out, order, mergeKey) : out;
}

/** Puts items named in `order` first, in that order; the rest keep their relative order after them. */
function reorder(list: unknown[], order: unknown[], mergeKey: string | undefined): unknown[] {
  const keyOf = (x: unknown) => JSON.stringify(mergeKey !== undefined && isObject(x) ? x[mergeKey] : x);
  const rank = new Map(order.map((o, i) => [keyOf(o), i]));
  const ranked = list
    .filter((x) => rank.has(keyOf(x)))
    .sort((a, b) => rank.get(keyOf(a))! - rank.get(keyOf(b))!);
  return [...ranked, ...list.filter((x) => !rank.has(keyOf(x)))];
}
