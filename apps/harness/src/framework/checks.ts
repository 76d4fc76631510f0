import { isDeepStrictEqual } from 'node:util';
import type { AssertionResult } from '../results/model.js';
import { AssertionFailure, type Checks } from './scenario.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Assertions that record every outcome, so the report can show what was expected and what was seen. */
export function createChecks(onRecord: (a: AssertionResult) => void = () => {}): Checks {
  const recorded: AssertionResult[] = [];
  const record = (a: AssertionResult): void => {
    recorded.push(a);
    onRecord(a);
    if (a.outcome === 'failed') throw new AssertionFailure(a);
  };
  return {
    equal(name, actual, expected) {
      const pass = isDeepStrictEqual(actual, expected);
      record(
        pass
          ? { name, outcome: 'passed' }
          : { name, outcome: 'failed', expected, actual, message: `${name}: values differ` },
      );
    },
    ok(name, condition, actual, expected) {
      record(
        condition
          ? { name, outcome: 'passed' }
          : { name, outcome: 'failed', actual, expected, message: `${name}: condition not met` },
      );
    },
    async eventually(name, probe, accept, opts = {}) {
      const timeoutMs = opts.timeoutMs ?? 60_000;
      const intervalMs = opts.intervalMs ?? 500;
      const deadline = Date.now() + timeoutMs;
      let last: unknown;
      let lastError: unknown;
      for (;;) {
        try {
          const value = await probe();
          last = value;
          lastError = undefined;
          if (accept(value)) {
            record({ name, outcome: 'passed' });
            return value;
          }
        } catch (err) {
          lastError = err;
        }
        if (Date.now() >= deadline) break;
        await sleep(intervalMs);
      }
      const why = lastError instanceof Error ? `; last error: ${lastError.message}` : '';
      record({
        name,
        outcome: 'failed',
        expected: opts.expected,
        actual: last !== undefined && opts.describe ? opts.describe(last as never) : last,
        message: `${name}: not satisfied within ${timeoutMs} ms${why}`,
      });
      throw new Error('unreachable');
    },
    results: () => [...recorded],
  };
}
