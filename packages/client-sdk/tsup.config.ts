import { defineConfig } from 'tsup';

export default defineConfig({
  // The Node entry and the browser entry share chunks; only `index` reaches `ws` and `node:child_process`.
  entry: { index: 'src/index.ts', browser: 'src/browser.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: true,
  sourcemap: true,
  clean: true,
  splitting: true,
});
