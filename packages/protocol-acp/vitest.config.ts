import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/protocol-acp',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});
