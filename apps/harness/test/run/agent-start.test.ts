import { describe, expect, it } from 'vitest';
import { startOnSecondBoundary } from '../../src/run/node.js';

describe('startOnSecondBoundary', () => {
  it('starts the agent on a whole second, so its first heartbeat (whole seconds) is at or after `since`', async () => {
    for (let i = 0; i < 3; i++) {
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
      expect(since % 1000).toBe(0);
      // A heartbeat the new agent posts at once carries floor(post) >= floor(began) = since.
      expect(Math.floor(began / 1000) * 1000).toBeGreaterThanOrEqual(since);
    }
  });
});
