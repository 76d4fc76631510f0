import { defineConfig } from 'vitest/config';

// Unit tests (the fake Engine, pure functions) need no Engine: `npm run test:unit` runs them here.
// The real-engine suite (*.int.test.ts) runs inside a node container next to its dockerd with
// `npm test` (scripts/test-in-node.mjs, KH_IN_NODE set), or against the host's engine with `npm run
// test:host` (KH_HOST_ENGINE set).
// One file at a time, generous timeouts on 2 cores.
const withEngine = process.env.KH_IN_NODE !== undefined || process.env.KH_HOST_ENGINE !== undefined;
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: withEngine ? [] : ['test/**/*.int.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
