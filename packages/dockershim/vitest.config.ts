import { defineConfig } from 'vitest/config';

// Unit tests (the fake Engine, pure functions) need no Engine: `npm run test:unit` runs them here.
// The real-engine suite (*.int.test.ts) runs inside a node container next to its dockerd:
// `npm test` (scripts/test-in-node.mjs) starts the node and runs every test there, KH_IN_NODE set.
// One file at a time, generous timeouts on 2 cores.
const inNode = process.env.KH_IN_NODE !== undefined;
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: inNode ? [] : ['test/**/*.int.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
