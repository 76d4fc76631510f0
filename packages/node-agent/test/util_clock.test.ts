import { FakeClock } from '@kh/apimachinery';
import { describe, expect, it } from 'vitest';
import { untilDoneOr } from '../src/util/clock.js';

describe('untilDoneOr', () => {
  it('settles with the work when it ends first, and cancels its timer', async () => {
    const clock = new FakeClock();
    let fired = false;
    const v = await untilDoneOr(clock, 1_000, Promise.resolve('done'), () => {
      fired = true;
      return 'late';
    });
    expect(v).toBe('done');
    await clock.advance(1_000);
    expect(fired).toBe(false);
  });

  it('settles with what the timeout returns or throws once the deadline passes', async () => {
    const clock = new FakeClock();
    const never = new Promise<string>(() => {});
    const late = untilDoneOr(clock, 1_000, never, () => 'late');
    const failed = untilDoneOr(clock, 2_000, never, () => {
      throw new Error('timed out');
    }).catch((err: Error) => err.message);
    await clock.advance(999);
    let settled = false;
    void late.then(() => {
      settled = true;
    });
    await Promise.resolve();
    expect(settled).toBe(false);
    await clock.advance(1);
    expect(await late).toBe('late');
    await clock.advance(1_000);
    expect(await failed).toBe('timed out');
  });
});
