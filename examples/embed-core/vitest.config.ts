import { defineProject } from 'vitest/config';

export default defineProject({
  test: { name: '@hermes/example-embed-core', include: ['test/**/*.test.ts'] },
});
