import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/protocol-acp',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Conformance checks spawn real agents; each awaited message has its own 5 s deadline in the
    // harness, so the whole test only needs a generous ceiling.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
