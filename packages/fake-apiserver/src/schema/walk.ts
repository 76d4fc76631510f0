import type { KObject } from '../meta/object.js';
import type { Definition, Schema } from './dsl.js';
import { definitions } from './types.js';

export function definition(name: string): Definition {
  const d = definitions[name];
  if (d === undefined) throw new Error(`schema: no definition ${name}`);
  return d;
}

export interface DecodeProblems {
  unknown: string[];
  /** A value of the wrong JSON type: the typed decoder in the apiserver rejects these. */
  typeErrors: string[];
}

function typeOk(s: Schema, v: unknown): boolean {
  if (v === null) return true;
  switch (s.kind) {
    case 'any':
      return true;
    case 'scalar':
      if (s.type === 'string') return typeof v === 'string';
      if (s.type === 'boolean') return typeof v === 'boolean';
      if (s.type === 'integer') return typeof v === 'number' && Number.isInteger(v);
      return typeof v === 'number';
    case 'array':
      return Array.isArray(v);
    case 'map':
      return typeof v === 'object' && !Array.isArray(v);
    case 'ref': {
      const d = definition(s.name);
      if (d.scalar !== undefined) return typeof v === 'string' || typeof v === 'number';
      return typeof v === 'object' && !Array.isArray(v);
    }
  }
}

function describe(s: Schema): string {
  if (s.kind === 'scalar') return s.type === 'integer' ? (s.format ?? 'int') : s.type;
  if (s.kind === 'array') return 'array';
  if (s.kind === 'ref') return definition(s.name).scalar?.type ?? 'object';
  return 'object';
}

/**
 * Removes fields the typed API does not know (as decoding into Go structs drops them) and
 * reports them, plus type mismatches. Paths use the apiserver's notation: spec.containers[0].foo.
 */
export function pruneUnknownFields(obj: KObject, defName: string): DecodeProblems {
  const problems: DecodeProblems = { unknown: [], typeErrors: [] };
  walkStruct(obj, definition(defName), '', problems);
  return problems;
}

function walkStruct(obj: KObject, d: Definition, path: string, p: DecodeProblems) {
  for (const key of Object.keys(obj)) {
    const s = d.props[key];
    const here = path === '' ? key : `${path}.${key}`;
    if (s === undefined) {
      p.unknown.push(here);
      delete obj[key];
      continue;
    }
    walkValue(obj[key], s, here, p);
  }
}

function walkValue(v: unknown, s: Schema, path: string, p: DecodeProblems) {
  if (v === null || v === undefined) return;
  if (!typeOk(s, v)) {
    p.typeErrors.push(`${path}: expected ${describe(s)}, got ${Array.isArray(v) ? 'array' : typeof v}`);
    return;
  }
  if (s.kind === 'array') {
    (v as unknown[]).forEach((item, i) => {
      walkValue(item, s.items, `${path}[${i}]`, p);
    });
  } else if (s.kind === 'map') {
    for (const [k, item] of Object.entries(v as KObject)) walkValue(item, s.values, `${path}.${k}`, p);
  } else if (s.kind === 'ref') {
    const d = definition(s.name);
    if (d.scalar === undefined) walkStruct(v as KObject, d, path, p);
  }
}
