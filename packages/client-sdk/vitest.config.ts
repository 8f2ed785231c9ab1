import { fileURLToPath } from 'node:url';
import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: {
    // The README example imports the package by name; run it against the sources.
    alias: { '@hermes/client-sdk': fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
  },
  test: {
    name: '@hermes/client-sdk',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Tests spawn real gateways and servers; a slow machine must not turn that into failures.
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
