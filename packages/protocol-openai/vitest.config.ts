import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/protocol-openai',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // One PostgreSQL server per vitest run for the multi-instance tests (or HERMES_TEST_DATABASE_URL), as in core.
    globalSetup: ['../core/test/support/postgres-global-setup.ts'],
    // The multi-instance tests open PostgreSQL stores; a loaded 2-core machine needs more than 5 s.
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
