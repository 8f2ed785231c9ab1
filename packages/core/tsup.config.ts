import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', logger: 'src/logger.ts', 'testing/index': 'src/testing/index.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  // `@internal` members (store constructors taking a driver connection, the pg pool) stay out of the public
  // declarations, so a consumer's type check never loads drizzle-orm, pg or better-sqlite3 (issue 36.4).
  dts: { compilerOptions: { stripInternal: true } },
  sourcemap: true,
  clean: true,
  splitting: true,
  // drizzle-orm is bundled into the core's chunks, tree-shaken: a cold start resolves, reads and compiles a
  // few chunks instead of ~110 of drizzle's modules (ADR 0057). Only the core imports drizzle-orm; `pg` and
  // `better-sqlite3`, which drizzle's drivers import, stay external. zod likewise: `import * as z` lets the bundler
  // leave its 64 locales out; the declarations still import it from the package. yaml, dotenv and ipaddr.js, CommonJS
  // packages a start loads (the config, the web tools' address guard), are bundled too: Node's CommonJS loader
  // resolved, read and lexed ~75 of their files for their named exports at every start (ADR 0073).
  noExternal: ['drizzle-orm', 'zod', 'yaml', 'dotenv', 'ipaddr.js'],
  // The bundled CommonJS packages `require` Node built-ins: an ES module needs a real `require` for that.
  banner: {
    js: "import { createRequire as __hermesCreateRequire } from 'node:module';\nconst require = __hermesCreateRequire(import.meta.url);",
  },
});
