import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/example-desktop-host',
    include: ['test/**/*.test.ts'],
    // The test spawns a real gateway.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
