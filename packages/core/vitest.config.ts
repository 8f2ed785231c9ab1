import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/core',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // One PostgreSQL server per vitest run for the store tests (or HERMES_TEST_DATABASE_URL).
    globalSetup: ['test/support/postgres-global-setup.ts'],
    // The store tests start PostgreSQL servers and the tool tests child processes; on a loaded 2-core
    // machine neither fits vitest's 5 s default.
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
