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
  // zod is bundled, tree-shaken (`import * as z` keeps its 64 locales out): a cold start compiles what the
  // schemas use instead of resolving and loading zod's ~95 modules (ADR 0057).
  // ws and json-rpc-2.0 likewise (CommonJS, ~20 files resolved and lexed by Node at every start; ADR 0073).
  noExternal: ['zod', 'ws', 'json-rpc-2.0'],
  // The bundled CommonJS packages `require` Node built-ins: an ES module needs a real `require` for that.
  banner: {
    js: "import { createRequire as __hermesCreateRequire } from 'node:module';\nconst require = __hermesCreateRequire(import.meta.url);",
  },
});
