import { inspect, isDeepStrictEqual } from 'node:util';
import { CriError } from '@kh/cri-api';
import { AssertionError } from './framework.js';

// Small assertions with messages that say what the runtime did, for a report read by runtime authors.

const show = (v: unknown) => inspect(v, { depth: 4, breakLength: 120 });

export function expectEqual<T>(actual: T, expected: T, what: string): void {
  if (!isDeepStrictEqual(actual, expected)) {
    throw new AssertionError(`${what}: expected ${show(expected)}, got ${show(actual)}`);
  }
}

export function expectTrue(condition: unknown, what: string): asserts condition {
  if (!condition) throw new AssertionError(what);
}

export function expectContains(haystack: string, needle: string, what: string): void {
  if (!haystack.includes(needle))
    throw new AssertionError(`${what}: expected to contain ${show(needle)}, got ${show(haystack)}`);
}

/** Expects the call to fail with the given gRPC code name (e.g. 'NOT_FOUND'), or with any error if omitted. */
export async function expectFailure(
  call: Promise<unknown>,
  what: string,
  codeName?: string,
): Promise<CriError | Error> {
  try {
    await call;
  } catch (err) {
    if (codeName && !(err instanceof CriError && err.codeName === codeName)) {
      const got = err instanceof CriError ? `${err.codeName} (${err.details})` : String(err);
      throw new AssertionError(`${what}: expected ${codeName}, got ${got}`);
    }
    return err as Error;
  }
  throw new AssertionError(`${what}: expected ${codeName ?? 'an error'}, but the call succeeded`);
}
