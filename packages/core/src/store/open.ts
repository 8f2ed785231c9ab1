import { HermesError } from '../errors.js';
import type { Clock, Logger } from '../types.js';
import type { PostgresSessionStore, PostgresStoreOptions } from './pg-store.js';
import { openSqliteStore } from './sqlite-store.js';
import type { SessionStore } from './types.js';

/** True when `location` names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//iu.test(location.trim());
}

/** True when `error` is Node's failure to find the package `name` (an optional peer not installed). */
function isMissingPackage(error: unknown, name: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    typeof message === 'string' &&
    (message.includes(`'${name}'`) || message.includes(`"${name}"`))
  );
}

/**
 * Opens the session store on PostgreSQL (see `PostgresStoreOptions`). The driver and its schema are
 * loaded on first use, so a process on SQLite never pays for importing them, and `pg` is an optional peer
 * dependency that only a PostgreSQL user installs.
 *
 * @throws HermesError `missing_dependency` naming the package when `pg` is not installed.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresSessionStore> {
  let module: typeof import('./pg-store.js');
  try {
    module = await import('./pg-store.js');
  } catch (error) {
    if (!isMissingPackage(error, 'pg')) throw error;
    throw new HermesError(
      'missing_dependency',
      `${options.source ?? 'The database URL'} names a PostgreSQL database, but the package "pg" is not installed: run \`npm install pg\` next to @hermes/core.`,
      { cause: error },
    );
  }
  return module.openPostgresStore(options);
}

/** Options of {@link openSessionStore}. */
export interface OpenSessionStoreOptions {
  /** A SQLite file path (or `:memory:`), or a `postgres://` URL. */
  location: string;
  /**
   * Where `location` came from, named in errors (`HERMES_DATABASE_URL`, `database.url`). A location
   * from a URL setting must be a PostgreSQL URL.
   */
  source?: string;
  /** True when `location` came from a setting that only takes URLs. */
  urlOnly?: boolean;
  clock?: Clock;
  logger?: Logger;
  journalMode?: 'wal' | 'delete';
  /** How long a PostgreSQL store keeps trying to reach its server at open; default 10,000 ms. */
  connectBudgetMs?: number;
}

/**
 * Opens the session store every entry point uses: PostgreSQL for a `postgres://` URL, otherwise
 * the SQLite file (spec/core.md §9).
 *
 * @throws HermesError `config_invalid` naming the setting for a malformed URL, `store_unavailable`
 * when the database cannot be reached within the budget, `schema_too_new` for a newer schema.
 */
export async function openSessionStore(options: OpenSessionStoreOptions): Promise<SessionStore> {
  const source = options.source ?? 'database';
  if (options.urlOnly === true || isPostgresUrl(options.location)) {
    return openPostgresStore({
      url: options.location.trim(),
      source,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.connectBudgetMs !== undefined ? { connectBudgetMs: options.connectBudgetMs } : {}),
    });
  }
  return openSqliteStore({
    path: options.location,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.journalMode ? { journalMode: options.journalMode } : {}),
  });
}

/**
 * Where a host's store lives: the `database` option, else `HERMES_DATABASE_URL`, else the config's
 * `database.url`, else `<home>/state.db`.
 */
export function resolveStoreLocation(input: {
  database?: string | undefined;
  env: Record<string, string | undefined>;
  configUrl?: string | undefined;
  defaultPath: string;
}): { location: string; source: string; urlOnly: boolean } {
  if (input.database !== undefined) return { location: input.database, source: 'database', urlOnly: false };
  const fromEnvironment = input.env.HERMES_DATABASE_URL;
  if (fromEnvironment !== undefined && fromEnvironment.trim() !== '') {
    return { location: fromEnvironment, source: 'HERMES_DATABASE_URL', urlOnly: true };
  }
  if (input.configUrl !== undefined && input.configUrl.trim() !== '') {
    return { location: input.configUrl, source: 'database.url', urlOnly: true };
  }
  return { location: input.defaultPath, source: 'database', urlOnly: false };
}
