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
  // The bundled CommonJS packages `require` Node built-ins (and try optional add-ons such as `bufferutil`): an ES
  // module needs a `require` for that. It is made from `process.getBuiltinModule` (Node ≥ 20.16), not by importing
  // `node:module`, because the `wire/*` entries are bundled for browsers by client-sdk's hosts: a module that only
  // declares this function loads anywhere; a non-built-in id throws MODULE_NOT_FOUND as Node's `require` would.
  banner: {
    js: "const require = (id) => { const loaded = globalThis.process?.getBuiltinModule?.(id); if (loaded === undefined) throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' }); return loaded; };",
  },
});
