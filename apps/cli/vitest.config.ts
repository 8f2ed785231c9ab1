import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/cli',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});
