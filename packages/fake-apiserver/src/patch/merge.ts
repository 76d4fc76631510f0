import type { KObject } from '../meta/object.js';

const isObject = (v: unknown): v is KObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 7386 JSON merge patch: objects merge, null deletes, anything else (lists too) replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: KObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}
