import { defineConfig } from 'tsup';

/** The OpenAI-compatible provider's bundle (ADR 0092), written beside the core's chunks and left alone by their clean. */
const COMPATIBLE_SDK = 'compatible-sdk';

/**
 * esbuild plugin for the provider's bundle: zod's `locales` export (about 370 KB of messages in 40-odd languages) is
 * only English. The AI SDK imports `{ z } from 'zod/v4'`, the whole namespace, so the bundler cannot leave the
 * locales out by itself; zod sets its English messages at import, and nothing in the provider selects another locale.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build: {
    onResolve(
      options: { filter: RegExp },
      callback: (args: { path: string; importer: string }) => { path: string; namespace: string } | undefined,
    ): void;
    onLoad(
      options: { filter: RegExp; namespace: string },
      callback: (args: { path: string }) => { contents: string; resolveDir: string },
    ): void;
  }) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, ({ importer }) =>
      // zod/v4/classic, zod/v4/mini and zod/v4/core each re-export the locales as `locales`.
      /[\\/]zod[\\/]v4[\\/](classic|mini|core)[\\/][^\\/]+\.js$/.test(importer)
        ? { path: importer.replace(/[\\/](classic|mini|core)[\\/][^\\/]+\.js$/, '/locales/en.js'), namespace: 'zod-en' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'zod-en' }, ({ path }) => ({
      contents: `export { default as en } from ${JSON.stringify(path)};`,
      resolveDir: '/',
    }));
  },
};

export default defineConfig([
  {
    entry: { index: 'src/index.ts', logger: 'src/logger.ts', 'testing/index': 'src/testing/index.ts' },
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    // `@internal` members (store constructors taking a driver connection, the pg pool) stay out of the public
    // declarations, so a consumer's type check never loads drizzle-orm, pg or better-sqlite3 (issue 36.4).
    dts: { compilerOptions: { stripInternal: true } },
    sourcemap: true,
    clean: [`!${COMPATIBLE_SDK}.*`],
    splitting: true,
    // drizzle-orm is bundled into the core's chunks, tree-shaken: a cold start resolves, reads and compiles a
    // few chunks instead of ~110 of drizzle's modules (ADR 0057). Only the core imports drizzle-orm; `pg` and
    // `better-sqlite3`, which drizzle's drivers import, stay external. zod likewise: `import * as z` lets the bundler
    // leave its 64 locales out; the declarations still import it from the package. yaml, dotenv and ipaddr.js, CommonJS
    // packages a start loads (the config, the web tools' address guard), are bundled too: Node's CommonJS loader
    // resolved, read and lexed ~75 of their files for their named exports at every start (ADR 0073).
    noExternal: ['drizzle-orm', 'zod', 'yaml', 'dotenv', 'ipaddr.js'],
    // The provider's bundle is built by the next entry; its import stays a file import (ADR 0092).
    external: [`./${COMPATIBLE_SDK}.js`],
    // The bundled CommonJS packages `require` Node built-ins: an ES module needs a real `require` for that.
    banner: {
      js: "import { createRequire as __hermesCreateRequire } from 'node:module';\nconst require = __hermesCreateRequire(import.meta.url);",
    },
  },
  {
    // The OpenAI-compatible provider, its dependencies and the lean stream, one file loaded on a model's first use
    // (ADR 0092). `@ai-sdk/provider` stays external: the core's start already loads it (its error classes).
    entry: { [COMPATIBLE_SDK]: 'src/providers/compatible-sdk.ts' },
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    dts: false,
    sourcemap: true,
    clean: false,
    splitting: false,
    noExternal: ['@ai-sdk/openai-compatible', '@ai-sdk/provider-utils', 'eventsource-parser', 'zod'],
    esbuildPlugins: [zodEnglishOnly],
  },
]);
