import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/cli',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // These tests spawn the built binary; a loaded CI machine needs more than the default 5 s.
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // One PostgreSQL server for the gateway tests across instances (or HERMES_TEST_DATABASE_URL), as in core.
    globalSetup: ['../../packages/core/test/support/postgres-global-setup.ts'],
  },
});
