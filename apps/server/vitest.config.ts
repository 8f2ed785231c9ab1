import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/server',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // These tests start the built server process; a loaded CI machine needs more than 5 s.
    testTimeout: 30_000,
  },
});
