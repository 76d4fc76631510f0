/**
 * JSON with object keys sorted, for comparing API objects: an object read back from the API
 * server has another key order than one built in code.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value ?? null, (_key, v) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, (v as Record<string, unknown>)[k]]),
    );
  });
}
