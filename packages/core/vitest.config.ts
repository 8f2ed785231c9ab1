import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/core',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});
