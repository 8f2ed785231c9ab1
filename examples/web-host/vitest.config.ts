import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/example-web-host',
    include: ['test/**/*.test.ts'],
    // The test starts apps/server and a real Chromium.
    testTimeout: 120_000,
  },
});
