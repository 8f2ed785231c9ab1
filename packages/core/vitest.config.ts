import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/core',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // One PostgreSQL server per vitest run for the store tests (or HERMES_TEST_DATABASE_URL).
    globalSetup: ['test/support/postgres-global-setup.ts'],
  },
});
