import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: '@hermes/protocol-openai',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});
