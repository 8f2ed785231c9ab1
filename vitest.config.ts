import { defineConfig } from 'vitest/config';

/**
 * One run over every workspace project. The JSON report is what `.ci/run` reads to print its
 * closing `N passed, N failed` line.
 */
export default defineConfig({
  test: {
    projects: [
      'packages/*',
      'apps/*',
      'examples/*',
      // The fault suite (issue 33 item 6): real processes, real PostgreSQL, faults injected from outside.
      'apps/server/test/faults',
      {
        // The packaging and test-command checks spawn builds and vitest runs: never the 5 s default.
        test: { name: 'workspace', include: ['test/**/*.test.ts'], testTimeout: 120_000, hookTimeout: 120_000 },
      },
    ],
    reporters: ['default', ['json', { outputFile: 'reports/vitest.json' }]],
  },
});
