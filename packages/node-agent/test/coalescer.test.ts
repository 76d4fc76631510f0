// Coalesced runs: one in flight, calls meanwhile share the next, each caller settles with a run
// that began after its call, and a failure reaches the callers of that run only.
import { describe, expect, it } from 'vitest';
import { Coalescer } from '../src/util/coalescer.js';

/** A task whose runs wait to be finished one by one; `seen` is the state each run began with. */
function heldTask() {
  const finish: ((err?: Error) => void)[] = [];
  const seen: number[] = [];
  let state = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const task = () => {
    seen.push(state);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    return new Promise<void>((resolve, reject) =>
      finish.push((err) => {
        inFlight--;
        if (err) reject(err);
        else resolve();
      }),
    );
  };
  return {
    task,
    seen,
    finish,
    set: (s: number) => {
      state = s;
    },
    maxInFlight: () => maxInFlight,
  };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('Coalescer', () => {
  it('runs a burst of calls as two runs, the second beginning after the last call', async () => {
    const t = heldTask();
    const c = new Coalescer(t.task);
    t.set(1);
    const first = c.run();
    const rest: Promise<void>[] = [];
    for (let i = 2; i <= 30; i++) {
      t.set(i);
      rest.push(c.run());
    }
    expect(c.idle).toBe(false);
    t.finish[0]?.();
    await first;
    await turn();
    t.finish[1]?.();
    await Promise.all(rest);
    expect(t.seen).toEqual([1, 30]);
    expect(t.maxInFlight()).toBe(1);
    expect(c.idle).toBe(true);
  });

  it('queues a call made as an earlier run settles, never running two at once', async () => {
    const t = heldTask();
    const c = new Coalescer(t.task);
    const first = c.run();
    // A caller of the first run asks again as soon as it resumes, before the queued run began.
    const again = first.then(() => {
      t.set(7);
      return c.run();
    });
    const second = c.run();
    t.finish[0]?.();
    await first;
    await turn();
    t.finish[1]?.();
    await Promise.all([second, again]);
    expect(t.seen).toEqual([0, 7]);
    expect(t.maxInFlight()).toBe(1);
  });

  it("rejects the callers of a failed run, and the next run's callers see it succeed", async () => {
    const t = heldTask();
    const c = new Coalescer(t.task);
    const failed = c.run();
    const next = c.run();
    t.finish[0]?.(new Error('EBUSY'));
    await expect(failed).rejects.toThrow('EBUSY');
    await turn();
    t.finish[1]?.();
    await expect(next).resolves.toBeUndefined();
  });
});
