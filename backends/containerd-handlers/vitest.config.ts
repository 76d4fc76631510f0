import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The contributor test runs a whole harness run: world, node, agent, two scenarios.
    testTimeout: 600_000,
    hookTimeout: 300_000,
    fileParallelism: false,
  },
});
