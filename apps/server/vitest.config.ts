import { configDefaults, defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/server',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // The fault suite is a project of its own (test/faults/vitest.config.ts).
    exclude: [...configDefaults.exclude, 'test/faults/**'],
    // These tests start the built server process; a loaded CI machine needs more than 5 s.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // One PostgreSQL server per vitest run for the multi-instance tests (or HERMES_TEST_DATABASE_URL), as in core.
    globalSetup: ['../../packages/core/test/support/postgres-global-setup.ts'],
  },
});
