import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The report tests render pages with the compiled browser script; compile it fresh first.
    globalSetup: ['test/report/build-client.ts'],
  },
});
