import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', bin: 'src/bin.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: { entry: { index: 'src/index.ts' } },
  sourcemap: true,
  clean: true,
  splitting: true,
  // What `hermes acp` loads before it answers `initialize` is bundled into the CLI's chunks: a few
  // files instead of ~120 modules to resolve, read and link (ADR 0019). The core and the other
  // protocols stay external packages.
  noExternal: ['@hermes/protocol-acp', '@agentclientprotocol/sdk', 'zod', 'commander'],
  // commander is CommonJS: its `require` of Node built-ins needs a real `require` in an ES module.
  banner: {
    js: "import { createRequire as __hermesCreateRequire } from 'node:module';\nconst require = __hermesCreateRequire(import.meta.url);",
  },
});
