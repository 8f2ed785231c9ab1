import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'wire/index': 'src/wire/index.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: true,
  sourcemap: true,
  clean: true,
  splitting: true,
  // zod is bundled, tree-shaken (`import * as z` keeps its 64 locales out): a cold start compiles what the
  // schemas use instead of resolving and loading zod's ~95 modules (ADR 0057).
  // ws likewise (CommonJS, its files resolved and lexed by Node at every `hermes serve` start; ADR 0073).
  noExternal: ['zod', 'ws'],
  // The bundled CommonJS package `require`s Node built-ins: an ES module needs a real `require` for that.
  banner: {
    js: "import { createRequire as __hermesCreateRequire } from 'node:module';\nconst require = __hermesCreateRequire(import.meta.url);",
  },
});
