import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The built packages as a consumer installs them (issue 19.4): each public workspace package is
 * copied into a fresh `node_modules` with its `files` only, and every dependency it declares (and
 * its peers) is linked there from the workspace's install. Nothing undeclared — a devDependency of
 * the package, a hoisted module of the workspace — is reachable, so a public type that needs an
 * undeclared package fails the type check below, as it would for a user.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);

interface Manifest {
  name: string;
  private?: boolean;
  files?: string[];
  exports: Record<string, unknown>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const workspace = new Map<string, { dir: string; manifest: Manifest }>();
for (const name of ['core', 'protocol-acp', 'protocol-openai', 'protocol-tui', 'client-sdk']) {
  const dir = join(root, 'packages', name);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
  workspace.set(manifest.name, { dir, manifest });
}

/** Every public entry point (`@hermes/core`, `@hermes/core/testing`, …). */
const entries = [...workspace.values()].flatMap(({ manifest }) =>
  Object.keys(manifest.exports)
    .filter((subpath) => subpath !== './package.json')
    .map((subpath) => (subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`)),
);

let consumer: string;

function install(modules: string, name: string, fromDir: string): void {
  const target = join(modules, name);
  if (existsSync(target)) return;
  const own = workspace.get(name);
  if (own === undefined) {
    // A third-party package: its real folder in the pnpm store sees its own dependencies.
    mkdirSync(dirname(target), { recursive: true });
    symlinkSync(realpathSync(join(fromDir, 'node_modules', name)), target, 'dir');
    return;
  }
  mkdirSync(target, { recursive: true });
  cpSync(join(own.dir, 'package.json'), join(target, 'package.json'));
  for (const entry of own.manifest.files ?? []) {
    cpSync(join(own.dir, entry), join(target, entry), { recursive: true });
  }
  for (const dependency of Object.keys({ ...own.manifest.dependencies, ...own.manifest.peerDependencies })) {
    // An optional third-party peer (`pg`) is what a consumer leaves out unless it needs it.
    const optional = own.manifest.peerDependenciesMeta?.[dependency]?.optional === true;
    if (optional && !workspace.has(dependency)) continue;
    install(modules, dependency, own.dir);
  }
}

beforeAll(() => {
  consumer = mkdtempSync(join(tmpdir(), 'hermes-consumer-'));
  const modules = join(consumer, 'node_modules');
  for (const name of workspace.keys()) install(modules, name, root);
  // A TypeScript consumer on Node has the Node types; nothing else from the workspace.
  install(modules, '@types/node', root);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
});

afterAll(() => {
  rmSync(consumer, { recursive: true, force: true });
});

describe('packages as installed by a consumer', () => {
  it('require() of every public entry works from CommonJS on Node >= 20.19 (no top-level await)', async () => {
    writeFileSync(
      join(consumer, 'main.cjs'),
      [
        `const entries = ${JSON.stringify(entries)};`,
        'const loaded = {};',
        'for (const entry of entries) loaded[entry] = Object.keys(require(entry)).length;',
        "const core = require('@hermes/core');",
        '(async () => {',
        "  const store = await core.openSqliteStore({ path: ':memory:' });",
        '  const page = await store.listSessions();',
        '  await store.close();',
        '  process.stdout.write(JSON.stringify({ loaded, sessions: page.items.length }));',
        '})();',
      ].join('\n'),
    );
    const { stdout } = await run(process.execPath, ['main.cjs'], { cwd: consumer });
    const answer = JSON.parse(stdout) as { loaded: Record<string, number>; sessions: unknown };
    expect(Object.keys(answer.loaded).sort()).toEqual([...entries].sort());
    for (const count of Object.values(answer.loaded)) expect(count).toBeGreaterThan(0);
    // The native better-sqlite3 binding loads and the shipped migrations apply.
    expect(answer.sessions).toBe(0);
  }, 30_000);

  it('without the optional peer `pg`, SQLite works and a PostgreSQL URL fails at once naming the package', async () => {
    expect(existsSync(join(consumer, 'node_modules', 'pg'))).toBe(false);
    writeFileSync(
      join(consumer, 'no-pg.mjs'),
      [
        "import { openSessionStore } from '@hermes/core';",
        "const sqlite = await openSessionStore({ location: ':memory:' });",
        'await sqlite.close();',
        'try {',
        "  await openSessionStore({ location: 'postgres://hermes:secret@127.0.0.1:9/hermes', source: 'HERMES_DATABASE_URL', urlOnly: true });",
        "  process.stdout.write('opened');",
        '} catch (error) {',
        '  process.stdout.write(JSON.stringify({ code: error.code, message: error.message }));',
        '}',
      ].join('\n'),
    );
    const { stdout } = await run(process.execPath, ['no-pg.mjs'], { cwd: consumer });
    const failure = JSON.parse(stdout) as { code: string; message: string };
    expect(failure.code).toBe('missing_dependency');
    expect(failure.message).toContain('HERMES_DATABASE_URL');
    expect(failure.message).toContain('npm install pg');
    expect(failure.message).not.toContain('secret');
  }, 60_000);

  it('a model’s first use loads the OpenAI-compatible provider bundle from the installed files alone (ADR 0092)', async () => {
    // The bundle needs only `@ai-sdk/provider` from node_modules; everything else it uses is inside it.
    writeFileSync(
      join(consumer, 'provider-bundle.mjs'),
      [
        "import { startScriptedOpenAIServer, step, text } from '@hermes/core/testing';",
        "const sdk = await import(new URL('./node_modules/@hermes/core/dist/compatible-sdk.js', import.meta.url));",
        "const server = await startScriptedOpenAIServer({ script: [step(text('streamed from the bundle', 4))] });",
        'const model = sdk.createLeanCompatibleChatModel((fetch, transformRequestBody) =>',
        "  sdk.createOpenAICompatible({ name: 'custom', baseURL: server.baseURL, includeUsage: true, fetch, transformRequestBody }).chatModel('m'),",
        ');',
        "const { stream } = await model.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });",
        'const reader = stream.getReader();',
        "let streamed = '';",
        'for (let next = await reader.read(); !next.done; next = await reader.read())',
        "  if (next.value.type === 'text-delta') streamed += next.value.delta;",
        'await server.close();',
        'process.stdout.write(streamed);',
      ].join('\n'),
    );
    const { stdout } = await run(process.execPath, ['provider-bundle.mjs'], { cwd: consumer });
    expect(stdout).toBe('streamed from the bundle');
  }, 60_000);

  it('the public types check with only the declared dependencies, from ES modules and CommonJS', async () => {
    const imports = entries.map((entry, index) => ({ entry, alias: `entry${index}` }));
    writeFileSync(
      join(consumer, 'esm.mts'),
      [
        ...imports.map(({ entry, alias }) => `import * as ${alias} from '${entry}';`),
        `export const all = [${imports.map(({ alias }) => alias).join(', ')}];`,
        "import { openSqliteStore, type SqliteSessionStore } from '@hermes/core';",
        "export const store: Promise<SqliteSessionStore> = openSqliteStore({ path: ':memory:' });",
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(consumer, 'cjs.cts'),
      [
        "import core = require('@hermes/core');",
        "import tui = require('@hermes/protocol-tui');",
        "export const store: ReturnType<typeof core.openSqliteStore> = core.openSqliteStore({ path: ':memory:' });",
        'export const gateway = tui;',
        '',
      ].join('\n'),
    );
    // Every file of the consumer and of our packages is checked in full; third-party declarations
    // are loaded as the checker needs them but are theirs to check (that is what keeps this fast).
    const program = ts.createProgram({
      rootNames: [join(consumer, 'esm.mts'), join(consumer, 'cjs.cts')],
      options: {
        target: ts.ScriptTarget.ES2022,
        lib: ['lib.es2023.d.ts'],
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        strict: true,
        noEmit: true,
        types: ['node'],
        typeRoots: [join(consumer, 'node_modules', '@types')],
      },
    });
    const ours = program
      .getSourceFiles()
      .filter((file) => !file.fileName.includes('/node_modules/') || file.fileName.includes('/node_modules/@hermes/'))
      .filter((file) => realpathSync(file.fileName).startsWith(realpathSync(consumer)));
    expect(
      ours.map((file) => file.fileName).filter((name) => name.endsWith('/@hermes/core/dist/index.d.ts')),
    ).toHaveLength(1);
    const problems = [
      ...program.getGlobalDiagnostics(),
      ...ours.flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]),
    ].map((diagnostic) => {
      const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      const where = diagnostic.file === undefined ? '' : `${diagnostic.file.fileName.slice(consumer.length + 1)}: `;
      return `${where}TS${diagnostic.code} ${text}`;
    });
    expect(problems).toEqual([]);
  }, 180_000);

  /** Every diagnostic of a program over the consumer's entry files, third-party declarations included. */
  function diagnosticsWithLibraries(
    rootNames: string[],
    resolution: { module: ts.ModuleKind; moduleResolution: ts.ModuleResolutionKind },
  ): string[] {
    const program = ts.createProgram({
      rootNames,
      options: {
        target: ts.ScriptTarget.ES2022,
        lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
        ...resolution,
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: ['node'],
        typeRoots: [join(consumer, 'node_modules', '@types')],
      },
    });
    return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
      const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      const where = diagnostic.file === undefined ? '' : `${diagnostic.file.fileName.replace(consumer, '')}: `;
      return `${where}TS${diagnostic.code} ${text}`;
    });
  }

  it.each([
    ['node16', ts.ModuleKind.Node16, ts.ModuleResolutionKind.Node16, 'mts'],
    ['nodenext', ts.ModuleKind.NodeNext, ts.ModuleResolutionKind.NodeNext, 'mts'],
    ['bundler', ts.ModuleKind.ESNext, ts.ModuleResolutionKind.Bundler, 'ts'],
  ] as const)(
    "@hermes/core's public types check with skipLibCheck off under %s resolution, third-party declarations included",
    (label, module, moduleResolution, extension) => {
      const file = join(consumer, `strict-${label}.${extension}`);
      writeFileSync(
        file,
        [
          "import * as core from '@hermes/core';",
          "import * as testing from '@hermes/core/testing';",
          "import { openSqliteStore, type SessionStore } from '@hermes/core';",
          "export const store: Promise<SessionStore> = openSqliteStore({ path: ':memory:' });",
          'export const all = [core, testing];',
          '',
        ].join('\n'),
      );
      expect(diagnosticsWithLibraries([file], { module, moduleResolution })).toEqual([]);
    },
    180_000,
  );
});
