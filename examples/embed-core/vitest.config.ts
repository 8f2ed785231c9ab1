import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/example-embed-core',
    include: ['test/**/*.test.ts'],
    // The example runs the agent end to end; a loaded 2-core machine needs more than vitest's 5 s.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
