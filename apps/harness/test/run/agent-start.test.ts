import { afterEach, describe, expect, it, vi } from 'vitest';
import { startOnSecondBoundary } from '../../src/run/node.js';

/** Starts a stand-in agent on the boundary; returns when it began and the `since` it was waited from. */
async function startRecorded(): Promise<{ began: number; since: number }> {
  let began = 0;
  let since = -1;
  await startOnSecondBoundary(
    async () => {
      began = Date.now();
    },
    async (s) => {
      since = s;
    },
  );
  return { began, since };
}

describe('startOnSecondBoundary', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('starts the agent on a whole second, so its first heartbeat (whole seconds) is at or after `since`', async () => {
    for (let i = 0; i < 3; i++) {
      const { began, since } = await startRecorded();
      expect(since % 1000).toBe(0);
      // A heartbeat the new agent posts at once carries floor(post) >= floor(began) = since.
      expect(Math.floor(began / 1000) * 1000).toBeGreaterThanOrEqual(since);
    }
  });

  it('waits on when its timer fires a millisecond early against the wall clock', async () => {
    // The wall clock reads 5.5 s, then, once the 500 ms timer has fired, still 5.999 s (CI saw it).
    const clock = [5_500, 5_500, 5_999];
    vi.spyOn(Date, 'now').mockImplementation(() => clock.shift() ?? 6_000);
    const { began, since } = await startRecorded();
    expect(since).toBe(6_000);
    expect(began).toBeGreaterThanOrEqual(since);
  });
});
