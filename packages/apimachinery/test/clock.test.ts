import { describe, expect, it } from 'vitest';
import { FakeClock, realClock, sleep } from '../src/index.js';

describe('FakeClock', () => {
  it('starts at the given time and moves only when stepped', () => {
    const c = new FakeClock(1_000);
    expect(c.now()).toBe(1_000);
    c.step(250);
    expect(c.now()).toBe(1_250);
    expect(new FakeClock().now()).toBe(Date.UTC(2026, 0, 1));
  });

  it('step fires due timers in time order, same-time ones in the order set, at their own time', () => {
    const c = new FakeClock(0);
    const fired: string[] = [];
    c.setTimer(30, () => fired.push(`c@${c.now()}`));
    c.setTimer(10, () => fired.push(`a@${c.now()}`));
    c.setTimer(10, () => fired.push(`b@${c.now()}`));
    c.setTimer(31, () => fired.push('late'));
    c.step(30);
    expect(fired).toEqual(['a@10', 'b@10', 'c@30']);
    expect(c.now()).toBe(30);
    expect(c.pendingTimers()).toBe(1);
  });

  it('honours timers set by timers within the same step, and cancellation', () => {
    const c = new FakeClock(0);
    const fired: number[] = [];
    const tick = () => {
      fired.push(c.now());
      c.setTimer(10, tick);
    };
    c.setTimer(10, tick);
    const cancel = c.setTimer(15, () => fired.push(-1));
    cancel();
    c.step(35);
    expect(fired).toEqual([10, 20, 30]);
    expect(c.pendingTimers()).toBe(1);
  });

  it('a negative delay fires at the next step', () => {
    const c = new FakeClock(0);
    let fired = false;
    c.setTimer(-5, () => {
      fired = true;
    });
    c.step(0);
    expect(fired).toBe(true);
  });

  it('advance lets async work started by each timer settle before the next one', async () => {
    const c = new FakeClock(0);
    const seen: number[] = [];
    const loop = async () => {
      for (let i = 0; i < 3; i++) {
        await sleep(c, 100);
        await Promise.resolve();
        seen.push(c.now());
      }
    };
    const done = loop();
    await c.advance(300);
    await done;
    expect(seen).toEqual([100, 200, 300]);
  });
});

describe('sleep', () => {
  it('rejects with the abort reason and cancels its timer', async () => {
    const c = new FakeClock(0);
    const ac = new AbortController();
    const p = sleep(c, 1_000, ac.signal);
    ac.abort(new Error('stop'));
    await expect(p).rejects.toThrow('stop');
    expect(c.pendingTimers()).toBe(0);
    await expect(sleep(c, 1, ac.signal)).rejects.toThrow('stop');
  });

  it('waits on the real clock too', async () => {
    const start = realClock.now();
    await sleep(realClock, 20);
    expect(realClock.now() - start).toBeGreaterThanOrEqual(15);
  });
});
