import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/cli',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // These tests spawn the built binary; a loaded CI machine needs more than the default 5 s.
    testTimeout: 30_000,
  },
});
