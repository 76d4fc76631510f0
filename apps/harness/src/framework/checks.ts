import { isDeepStrictEqual } from 'node:util';
import { done, notYet, UntilTimeoutError, until } from '@kh/testkit';
import type { AssertionResult, SeenValue } from '../results/model.js';
import { AssertionFailure, type Checks } from './scenario.js';

/** How many of an eventually check's distinct values a failure keeps: the first and the latest. */
const MAX_SEEN = 12;

/** Ends an eventually check early: its value says the wait can no longer succeed. */
class CannotSucceed extends Error {}

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
      // The last value the probe returned, and its error if the last look failed: the failure
      // records the value as `actual` even when a later look only got an error.
      let last: unknown;
      let lastError: unknown;
      // With a describe, the distinct descriptions the probe went through and when: a window
      // that opened and closed between two looks, or never opened, shows in the failure.
      const started = performance.now();
      const seen: SeenValue[] = [];
      let lastSeen: string | undefined;
      let lastDescribed: unknown;
      // Why the last value shows the wait can no longer succeed (opts.cannotSucceed): it ends then.
      let hopeless: string | undefined;
      try {
        const value = await until(
          async () => {
            let value: Awaited<ReturnType<typeof probe>>;
            try {
              value = await probe();
            } catch (err) {
              lastError = err;
              return notYet(`error: ${(err as Error).message}`);
            }
            last = value;
            lastError = undefined;
            if (opts.describe) {
              const described = opts.describe(value);
              lastDescribed = described;
              const key = JSON.stringify(described);
              if (key !== lastSeen) {
                lastSeen = key;
                seen.push({ atMs: Math.round(performance.now() - started), value: described });
                if (seen.length > MAX_SEEN) seen.splice(1, 1);
              }
            }
            if (accept(value)) return done(value);
            hopeless = opts.cannotSucceed?.(value);
            if (hopeless !== undefined) throw new CannotSucceed();
            return notYet('a value not accepted');
          },
          { timeoutMs, intervalMs: opts.intervalMs ?? 500, describe: name },
        );
        record({ name, outcome: 'passed' });
        return value;
      } catch (err) {
        if (!(err instanceof UntilTimeoutError || err instanceof CannotSucceed)) throw err;
      }
      const why = lastError instanceof Error ? `; last error: ${lastError.message}` : '';
      const ended =
        hopeless !== undefined
          ? `cannot be satisfied any more after ${Math.round(performance.now() - started)} ms: ${hopeless}`
          : `not satisfied within ${timeoutMs} ms${why}`;
      record({
        name,
        outcome: 'failed',
        expected: opts.expected,
        actual: last !== undefined && opts.describe ? lastDescribed : last,
        ...(seen.length > 1 ? { seen } : {}),
        message: `${name}: ${ended}`,
      });
      throw new Error('unreachable');
    },
    results: () => [...recorded],
  };
}
