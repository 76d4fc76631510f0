/**
 * JSON with object keys sorted, for comparing API objects: an object read back from the API
 * server has another key order than one built in code. Same output as JSON.stringify on a copy
 * with sorted keys (toJSON honoured, undefined and functions dropped, non-finite numbers null),
 * written directly: the pod sources and the status manager compare every pod on every change,
 * and copying each nested object first made that the agent's busiest code with 110 pods.
 */
export function canonicalJson(value: unknown): string {
  return write(value) ?? 'null';
}

function write(value: unknown): string | undefined {
  let v = value;
  if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    v = (v as { toJSON(): unknown }).toJSON();
  }
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    case 'object': {
      if (v === null) return 'null';
      if (Array.isArray(v)) return `[${v.map((x) => write(x) ?? 'null').join(',')}]`;
      const o = v as Record<string, unknown>;
      const parts: string[] = [];
      for (const k of Object.keys(o).sort()) {
        const s = write(o[k]);
        if (s !== undefined) parts.push(`${JSON.stringify(k)}:${s}`);
      }
      return `{${parts.join(',')}}`;
    }
    default:
      return undefined; // undefined, functions and symbols are left out, as JSON.stringify does
  }
}
