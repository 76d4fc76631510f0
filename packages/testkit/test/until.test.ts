import { describe, expect, it } from 'vitest';
import { done, notYet, UntilTimeoutError, until } from '../src/util/until.js';

describe('until', () => {
  it('returns the value of the first look that is done, looking again every interval', async () => {
    const looks: number[] = [];
    const value = await until(
      async () => {
        looks.push(Date.now());
        return looks.length === 3 ? done('ready') : notYet(`look ${looks.length}`);
      },
      { timeoutMs: 5_000, intervalMs: 20, describe: 'the third look' },
    );
    expect(value).toBe('ready');
    expect(looks).toHaveLength(3);
    expect(looks[2]! - looks[0]!).toBeGreaterThanOrEqual(35);
  });

  it('looks once even with no time left, and needs no second look when that one is done', async () => {
    let n = 0;
    await expect(until(async () => done(++n), { timeoutMs: 0, describe: 'x' })).resolves.toBe(1);
  });

  it('says on a timeout what it waited for and what it saw last', async () => {
    let n = 0;
    const err = await until(async () => notYet(`Ready=False (look ${++n})`), {
      timeoutMs: 30,
      intervalMs: 5,
      describe: 'node n1 Ready',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UntilTimeoutError);
    const timeout = err as UntilTimeoutError;
    expect(timeout.message).toBe(
      `timed out after 30 ms waiting for node n1 Ready; last saw: Ready=False (look ${n})`,
    );
    expect(timeout).toMatchObject({
      waitedFor: 'node n1 Ready',
      timeoutMs: 30,
      lastSeen: `Ready=False (look ${n})`,
    });
    expect(n).toBeGreaterThan(1);
  });

  it('ends at once when the condition throws', async () => {
    let n = 0;
    const stop = new Error('agent exited');
    await expect(
      until(
        async () => {
          n++;
          throw stop;
        },
        { timeoutMs: 5_000, intervalMs: 1, describe: 'x' },
      ),
    ).rejects.toBe(stop);
    expect(n).toBe(1);
  });
});
