import { defineConfig } from 'vitest/config';

/**
 * One run over every workspace project. The JSON report is what `.ci/run` reads to print its
 * closing `N passed, N failed` line.
 */
export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*', 'examples/*', { test: { name: 'workspace', include: ['test/**/*.test.ts'] } }],
    reporters: ['default', ['json', { outputFile: 'reports/vitest.json' }]],
  },
});
