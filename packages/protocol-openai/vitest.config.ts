import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/protocol-openai',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // One PostgreSQL server per vitest run for the multi-instance tests (or HERMES_TEST_DATABASE_URL), as in core.
    globalSetup: ['../core/test/support/postgres-global-setup.ts'],
  },
});
