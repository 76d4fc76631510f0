import { describe, expect, it } from 'vitest';
import { createChecks } from '../../src/framework/checks.js';
import { AssertionFailure } from '../../src/framework/scenario.js';

describe('createChecks', () => {
  it('records passes and throws an AssertionFailure with expected and actual on a failure', () => {
    const seen: string[] = [];
    const c = createChecks((a) => seen.push(`${a.name}:${a.outcome}`));
    c.equal('same', { a: 1 }, { a: 1 });
    c.ok('true', true);
    expect(() => c.equal('differs', 'x', 'y')).toThrow(AssertionFailure);
    expect(c.results()).toEqual([
      { name: 'same', outcome: 'passed' },
      { name: 'true', outcome: 'passed' },
      { name: 'differs', outcome: 'failed', expected: 'y', actual: 'x', message: 'differs: values differ' },
    ]);
    expect(seen).toEqual(['same:passed', 'true:passed', 'differs:failed']);
  });

  it('eventually returns the first accepted value', async () => {
    let n = 0;
    const c = createChecks();
    const v = await c.eventually(
      'counts',
      async () => ++n,
      (x) => x >= 3,
      { intervalMs: 1 },
    );
    expect(v).toBe(3);
    expect(c.results()).toEqual([{ name: 'counts', outcome: 'passed' }]);
  });

  it('eventually fails with the last value (described) and the last error', async () => {
    const c = createChecks();
    let calls = 0;
    const failure = await c
      .eventually(
        'pod runs',
        async () => {
          calls++;
          if (calls % 2 === 0) throw new Error('connection reset');
          return { status: { phase: 'Pending' }, spec: { big: true } };
        },
        () => false,
        { timeoutMs: 30, intervalMs: 5, expected: 'Running', describe: (p) => p.status },
      )
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(AssertionFailure);
    const a = c.results()[0]!;
    expect(a).toMatchObject({ name: 'pod runs', outcome: 'failed', expected: 'Running' });
    expect(a.actual).toEqual({ phase: 'Pending' });
    expect(a.message).toMatch(/^pod runs: not satisfied within 30 ms/);
  });

  it('a failed eventually check with a describe records the distinct values it went through', async () => {
    const c = createChecks();
    const phases = ['Pending', 'Pending', 'Running', 'Running', 'Failed', 'Failed'];
    let n = 0;
    await c
      .eventually(
        'window',
        async () => ({ phase: phases[Math.min(n++, phases.length - 1)], big: true }),
        () => false,
        { timeoutMs: 60, intervalMs: 1, describe: (p) => p.phase },
      )
      .catch(() => undefined);
    const seen = c.results()[0]!.seen!;
    expect(seen.map((s) => s.value)).toEqual(['Pending', 'Running', 'Failed']);
    expect(seen[0]!.atMs).toBeLessThanOrEqual(seen[1]!.atMs);
    expect(seen[1]!.atMs).toBeLessThanOrEqual(seen[2]!.atMs);
  });

  it('keeps the first and the latest distinct values of a long trail', async () => {
    const c = createChecks();
    let n = 0;
    await c
      .eventually(
        'counts',
        async () => n++,
        () => false,
        // 31 looks, however slow the machine: the wait ends on the value, not on a clock.
        {
          timeoutMs: 60_000,
          intervalMs: 1,
          describe: (x) => x,
          cannotSucceed: (x) => (x >= 30 ? 'enough' : undefined),
        },
      )
      .catch(() => undefined);
    const seen = c.results()[0]!.seen!.map((s) => s.value as number);
    expect(seen.length).toBe(12);
    expect(seen[0]).toBe(0);
    expect(seen.at(-1)).toBe(30);
  });

  it('ends a wait at once when a value shows it cannot succeed, with that reason and the trail', async () => {
    const c = createChecks();
    const restarts = [0, 0, 1, 1];
    let n = 0;
    const failure = await c
      .eventually(
        'pod runs with no restart',
        async () => ({ running: n > 1, restartCount: restarts[Math.min(n++, restarts.length - 1)]! }),
        (p) => p.running && p.restartCount === 0,
        {
          timeoutMs: 60_000,
          intervalMs: 1,
          describe: (p) => p,
          cannotSucceed: (p) =>
            p.restartCount > 0 ? `restartCount ${p.restartCount}, expected 0` : undefined,
        },
      )
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(AssertionFailure);
    expect(n).toBe(3);
    const a = c.results()[0]!;
    expect(a.message).toMatch(
      /^pod runs with no restart: cannot be satisfied any more after \d+ ms: restartCount 1, expected 0$/,
    );
    expect(a.actual).toEqual({ running: true, restartCount: 1 });
    expect(a.seen?.map((s) => s.value)).toEqual([
      { running: false, restartCount: 0 },
      { running: true, restartCount: 1 },
    ]);
  });

  it('an accepted value passes even when cannotSucceed would refuse it', async () => {
    const c = createChecks();
    const v = await c.eventually(
      'accepted',
      async () => 1,
      (x) => x === 1,
      { cannotSucceed: () => 'never consulted for an accepted value' },
    );
    expect(v).toBe(1);
    expect(c.results()).toEqual([{ name: 'accepted', outcome: 'passed' }]);
  });
});
