import { defineConfig } from 'vitest/config';

// Integration tests drive the host dockerd: one file at a time, generous timeouts on 2 cores.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
