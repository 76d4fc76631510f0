import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration tests start containers and may build the node image on a cold cache (~1.5 min).
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // One file at a time: the machine has 2 cores and the files share the host engine.
    fileParallelism: false,
  },
});
