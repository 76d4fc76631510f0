import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.e2e.test.ts'],
    // The whole matrix runs in beforeAll; its own cell timeouts bound it.
    hookTimeout: 60 * 60_000,
    testTimeout: 10_000,
  },
});
