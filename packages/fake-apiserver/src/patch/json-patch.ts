import { deepEqual } from '../meta/equal.js';
import type { KObject } from '../meta/object.js';
import { ApiError } from '../meta/status.js';

interface Op {
  op: string;
  path: string;
  from?: string;
  value?: unknown;
}

const invalid = (msg: string) => new ApiError(422, 'Invalid', msg);

function parsePointer(p: string): string[] {
  if (p === '') return [];
  if (!p.startsWith('/'))
    throw invalid(`the server rejected our request due to an error in our request: invalid path "${p}"`);
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(
  doc: unknown,
  tokens: string[],
  path: string,
): { parent: KObject | unknown[]; key: string } {
  let cur: unknown = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (typeof cur === 'object' && cur !== null) cur = (cur as KObject)[t];
    else cur = undefined;
    if (cur === undefined || cur === null) throw invalid(`doc is missing path: "${path}": missing value`);
  }
  if (typeof cur !== 'object' || cur === null) throw invalid(`doc is missing path: "${path}": missing value`);
  return { parent: cur as KObject | unknown[], key: tokens[tokens.length - 1]! };
}

function get(doc: unknown, path: string): unknown {
  let cur = doc;
  for (const t of parsePointer(path)) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (typeof cur === 'object' && cur !== null && Object.hasOwn(cur, t)) cur = (cur as KObject)[t];
    else throw invalid(`doc is missing path: "${path}": missing value`);
    if (cur === undefined) throw invalid(`doc is missing path: "${path}": missing value`);
  }
  return cur;
}

function arrayIndex(arr: unknown[], key: string, path: string, forAdd: boolean): number {
  if (forAdd && key === '-') return arr.length;
  const i = Number(key);
  if (!/^\d+$/.test(key) || i > arr.length || (!forAdd && i === arr.length)) {
    throw invalid(`Unable to access invalid index: ${key}: invalid index referenced: ${path}`);
  }
  return i;
}

function add(doc: unknown, path: string, value: unknown): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return value;
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, path, true), 0, value);
  else parent[key] = value;
  return doc;
}

function remove(doc: unknown, path: string): unknown {
  const tokens = parsePointer(path);
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, path, false), 1);
  else {
    if (!Object.hasOwn(parent, key)) throw invalid(`Unable to remove nonexistent key: ${key}: missing value`);
    delete parent[key];
  }
  return doc;
}

const clone = <T>(v: T): T => (v === undefined ? v : structuredClone(v));

/** RFC 6902 JSON patch: add, remove, replace, move, copy, test. */
export function applyJsonPatch(doc: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops))
    throw new ApiError(
      400,
      'BadRequest',
      'json: cannot unmarshal object into Go value of type jsonpatch.Patch',
    );
  let out = clone(doc);
  for (const raw of ops as Op[]) {
    if (typeof raw?.path !== 'string')
      throw invalid('the server rejected our request due to an error in our request: missing path');
    switch (raw.op) {
      case 'add':
        out = add(out, raw.path, clone(raw.value));
        break;
      case 'remove':
        out = remove(out, raw.path);
        break;
      case 'replace':
        get(out, raw.path);
        out = remove(out, raw.path);
        out = add(out, raw.path, clone(raw.value));
        break;
      case 'move': {
        const v = get(out, raw.from ?? '');
        out = remove(out, raw.from ?? '');
        out = add(out, raw.path, v);
        break;
      }
      case 'copy':
        out = add(out, raw.path, clone(get(out, raw.from ?? '')));
        break;
      case 'test':
        if (!deepEqual(get(out, raw.path), raw.value)) {
          throw invalid(
            `the server rejected our request due to an error in our request: testing value ${raw.path} failed: test failed`,
          );
        }
        break;
      default:
        throw invalid(
          `the server rejected our request due to an error in our request: Unexpected kind: ${raw.op}`,
        );
    }
  }
  return out;
}
