import { badRequest } from './status.js';

/**
 * How deep a body, and an object a patch makes, may nest. Kubernetes' JSON decoder allows
 * 10 000 levels on Go's growable stacks; here structuredClone overflows near 1 600 and
 * JSON.stringify near 4 000, so the limit keeps clear of both (no real object comes close).
 */
export const MAX_DEPTH = 1000;

/** Refuses a value nested deeper than MAX_DEPTH with 400. Walks with its own stack, so it cannot overflow. */
export function checkDepth(value: unknown): void {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > MAX_DEPTH)
      throw badRequest(`the object provided is unrecognized: exceeded max depth ${MAX_DEPTH}`);
    for (const child of Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
}
