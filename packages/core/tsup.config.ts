import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', logger: 'src/logger.ts', 'testing/index': 'src/testing/index.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: true,
  sourcemap: true,
  clean: true,
  splitting: true,
});
