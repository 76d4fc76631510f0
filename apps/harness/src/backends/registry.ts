// The matrix: every registered backend, in the order the table shows them.
import { containerdBackend } from './containerd.js';
import { dockerBackend } from './docker.js';
import { fakeBackend } from './fake.js';
import type { RuntimeBackend } from './types.js';

export const BACKENDS: readonly RuntimeBackend[] = [containerdBackend, dockerBackend, fakeBackend];

/** The backends named on the command line (all when `names` is undefined), in registry order. */
export function selectBackends(
  names: readonly string[] | undefined,
  registry: readonly RuntimeBackend[] = BACKENDS,
): RuntimeBackend[] {
  if (!names) return [...registry];
  const unknown = names.filter((n) => !registry.some((b) => b.name === n));
  if (unknown.length > 0) {
    throw new Error(
      `unknown runtime ${unknown.map((u) => `"${u}"`).join(', ')}; known: ${registry.map((b) => b.name).join(', ')}`,
    );
  }
  return registry.filter((b) => names.includes(b.name));
}
