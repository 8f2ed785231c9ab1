import { defineConfig } from 'tsup';

export default defineConfig({
  // `initialize` is its own entry: the CLI answers an editor's `initialize` with it before the
  // SDK loads (docs/adr/0019).
  entry: { index: 'src/index.ts', initialize: 'src/initialize.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: true,
  sourcemap: true,
  clean: true,
  splitting: true,
});
