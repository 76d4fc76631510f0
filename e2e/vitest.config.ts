import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.e2e.test.ts'],
    // The whole matrix runs in one beforeAll, which sets its own limit from the run's --timeout.
    hookTimeout: 60_000,
    testTimeout: 10_000,
  },
});
