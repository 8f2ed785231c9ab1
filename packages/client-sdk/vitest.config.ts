import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/client-sdk',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});
