import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The report tests render pages with the compiled browser script; compile it fresh first.
    globalSetup: ['test/report/build-client.ts'],
    // testcontainers' reaper image cannot be pulled here; everything is removed explicitly.
    env: { TESTCONTAINERS_RYUK_DISABLED: 'true' },
  },
});
