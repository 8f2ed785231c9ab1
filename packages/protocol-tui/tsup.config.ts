import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'wire/index': 'src/wire/index.ts', 'wire/framing': 'src/wire/framing.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: true,
  sourcemap: true,
  clean: true,
  splitting: true,
});
