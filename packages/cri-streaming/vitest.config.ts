import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Real sockets and child processes on a 2-core machine: generous but finite.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
