import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import type pg from 'pg';
import { HermesError } from '../errors.js';
import type { Clock, Logger } from '../types.js';
import { retryWithinBudget } from './budget-retry.js';
import type { RetryBudgets, WriteKind } from './connection.js';
import { resolveMigrationsFolder } from './migrations.js';
import * as schema from './pg-schema.js';

/** Drizzle database (or transaction) typed with the PostgreSQL schema. */
export type PgDatabase = NodePgDatabase<typeof schema>;
/** What a transaction body receives. */
export type PgTransaction = Parameters<Parameters<PgDatabase['transaction']>[0]>[0];

const MIGRATIONS_SCHEMA = 'drizzle';
const MIGRATIONS_TABLE = '__drizzle_migrations';
/** Key of the advisory lock that serializes migrations of instances starting together. */
const MIGRATION_LOCK_KEY = 0x4865726d; // "Herm"
const MINIMUM_SERVER_VERSION = 150_000;

/**
 * SQLSTATEs worth running the transaction again for: serialization failure, deadlock, lock not
 * available; connections dropped by a restarting server are not retried inside a transaction.
 */
const RETRYABLE_STATES = new Set(['40001', '40P01', '55P03']);
/** Unique indexes whose violation means another instance won a race the retry re-decides. */
const RACE_CONSTRAINTS = new Set(['sessions_title_lower_unique', 'runs_idempotency_key_unique', 'turn_leases_pkey']);

/** True for errors a retried transaction can get past (see {@link RETRYABLE_STATES}). */
export function isRetryablePgError(error: unknown): boolean {
  // drizzle wraps the driver's error (`Failed query: …`) and keeps it as the cause.
  for (let current = error, depth = 0; depth < 5; current = (current as { cause?: unknown }).cause, depth += 1) {
    if (typeof current !== 'object' || current === null) return false;
    const { code, constraint } = current as { code?: unknown; constraint?: unknown };
    if (typeof code !== 'string') continue;
    if (RETRYABLE_STATES.has(code)) return true;
    return code === '23505' && typeof constraint === 'string' && RACE_CONSTRAINTS.has(constraint);
  }
  return false;
}

/** Socket errors of a server that is down, restarting or unreachable. */
const CONNECTION_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * True for errors that say the server cannot be reached or dropped the connection: connection
 * exceptions (SQLSTATE class 08), a server shutting down or starting (57P01-57P03), socket errors,
 * and the `pg` driver's own errors for a connection that ended or timed out.
 */
export function isConnectionError(error: unknown): boolean {
  for (let current = error, depth = 0; depth < 5; current = (current as { cause?: unknown }).cause, depth += 1) {
    if (typeof current !== 'object' || current === null) return false;
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === 'string') {
      if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return true;
      if (CONNECTION_ERRNOS.has(code)) return true;
    }
    if (
      typeof message === 'string' &&
      /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect)/u.test(
        message,
      )
    ) {
      return true;
    }
  }
  return false;
}

/** The migrations folder of the PostgreSQL dialect (`drizzle/pg` in the package). */
export function resolvePgMigrationsFolder(): string {
  const folder = join(resolveMigrationsFolder(), 'pg');
  if (!existsSync(join(folder, 'meta', '_journal.json'))) {
    throw new HermesError('store_migrations_missing', 'Cannot find the PostgreSQL migrations of @hermes/core');
  }
  return folder;
}

/** The URL without its password, for messages and logs. */
export function redactDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '<unparsable URL>';
  }
}

/**
 * Checks that `url` is a PostgreSQL URL (`postgres://` or `postgresql://`).
 *
 * @throws HermesError `config_invalid` naming `source` (the variable or key it came from).
 */
export function parsePostgresUrl(url: string, source: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new HermesError(
      'config_invalid',
      `${source}: not a valid URL (expected postgres://user:password@host:port/database)`,
      {
        details: { variable: source },
      },
    );
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new HermesError(
      'config_invalid',
      `${source}: expected a postgres:// or postgresql:// URL, got ${parsed.protocol}//`,
      {
        details: { variable: source, protocol: parsed.protocol },
      },
    );
  }
  if (parsed.hostname === '' && !parsed.searchParams.has('host')) {
    throw new HermesError('config_invalid', `${source}: the URL names no host`, { details: { variable: source } });
  }
  return parsed;
}

/**
 * The pool of one PostgreSQL store: drizzle on a `pg.Pool`, and the transaction-with-retry
 * discipline every operation goes through (the counterpart of `StoreConnection`).
 */
export class PgConnection {
  private closed = false;
  readonly db: PgDatabase;

  constructor(
    readonly pool: pg.Pool,
    readonly clock: Clock,
    readonly logger: Logger,
    /** The URL without its password. */
    readonly location: string,
    private readonly budgets: RetryBudgets,
  ) {
    this.db = drizzle({ client: pool, schema });
  }

  assertOpen(): void {
    if (this.closed) throw new HermesError('store_closed', `The session store ${this.location} is closed`);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  /**
   * The error to surface for `error`: a lost or refused connection becomes `store_unavailable` (the
   * operation is not retried: its transaction may have been cut short, and the caller decides);
   * anything else is returned as is.
   */
  private surfaced(error: unknown): unknown {
    if (HermesError.isInstance(error) || !isConnectionError(error)) return error;
    const reason = error instanceof Error ? error.message : String(error);
    return new HermesError(
      'store_unavailable',
      `The session store ${this.location} is unavailable (${reason}); the operation did not complete`,
      { cause: error, details: { location: this.location } },
    );
  }

  /** Runs a single statement outside a transaction; a lost connection fails with `store_unavailable`. */
  async query<T>(operation: (db: PgDatabase) => PromiseLike<T>): Promise<T> {
    this.assertOpen();
    try {
      return await operation(this.db);
    } catch (error) {
      throw this.surfaced(error);
    }
  }

  /** Runs `body` in a READ COMMITTED transaction, run again on serialization failures and lost races. */
  write<T>(kind: WriteKind, body: (tx: PgTransaction) => Promise<T>): Promise<T> {
    return this.withRetry(kind, () => this.db.transaction(body));
  }

  /** Runs a multi-query read in one REPEATABLE READ, READ ONLY snapshot. */
  read<T>(body: (tx: PgTransaction) => Promise<T>): Promise<T> {
    return this.withRetry('other', () =>
      this.db.transaction(body, { isolationLevel: 'repeatable read', accessMode: 'read only' }),
    );
  }

  async withRetry<T>(kind: WriteKind, attempt: () => Promise<T>): Promise<T> {
    try {
      return await this.retryConflicts(kind, attempt);
    } catch (error) {
      throw this.surfaced(error);
    }
  }

  private retryConflicts<T>(kind: WriteKind, attempt: () => Promise<T>): Promise<T> {
    return retryWithinBudget(attempt, {
      budgetMs: this.budgets[kind],
      clock: this.clock,
      logger: this.logger,
      isRetryable: isRetryablePgError,
      exhausted: (error, attempts, elapsedMs) =>
        new HermesError(
          'store_locked',
          `The session store ${this.location} kept conflicting for ${elapsedMs} ms; gave up after ${attempts} attempts`,
          { cause: error, details: { location: this.location, attempts, elapsedMs } },
        ),
      logMessage: 'session store conflict, retrying',
      assertOpen: () => this.assertOpen(),
    });
  }
}

/**
 * Waits for the server to answer, retrying with growing delays until `budgetMs` is spent, then
 * checks its version.
 *
 * @throws HermesError `store_unavailable` naming `source` when it never answers; `not_supported`
 * for a server older than PostgreSQL 15.
 */
export async function connectWithRetry(
  pool: pg.Pool,
  options: { source: string; location: string; budgetMs: number; clock: Clock; logger: Logger },
): Promise<void> {
  const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
  await retryWithinBudget(
    async () => {
      const result = await pool.query<{ version: string }>("SELECT current_setting('server_version_num') AS version");
      const version = Number(result.rows[0]?.version ?? 0);
      if (version < MINIMUM_SERVER_VERSION) {
        throw new HermesError(
          'not_supported',
          `${options.source}: PostgreSQL 15 or newer is required (server ${version})`,
          {
            details: { variable: options.source, serverVersion: version },
          },
        );
      }
    },
    {
      budgetMs: options.budgetMs,
      clock: options.clock,
      logger: options.logger,
      isRetryable: (error) => !HermesError.isInstance(error),
      isPermanent: (error) => {
        // A refused password or a missing database will not fix itself: say so at once.
        const state = (error as { code?: unknown }).code;
        return typeof state === 'string' && (state.startsWith('28') || state === '3D000');
      },
      exhausted: (error, attempts) =>
        new HermesError(
          'store_unavailable',
          `${options.source}: cannot connect to the database at ${options.location} (${reasonOf(error)}); gave up after ${attempts} attempts`,
          { cause: error, details: { variable: options.source, location: options.location, attempts } },
        ),
      logMessage: 'database not reachable yet, retrying',
      logLevel: 'warn',
      logFields: (error) => ({ location: options.location, reason: reasonOf(error) }),
      delayScale: 4,
    },
  );
}

/**
 * Brings the database to this build's schema under an advisory lock, so instances starting together
 * migrate once. A database migrated by a newer build fails with `schema_too_new` and is left as is.
 */
export async function applyPgMigrations(
  pool: pg.Pool,
  options: { migrationsFolder: string; location: string },
): Promise<void> {
  const known = readMigrationFiles({ migrationsFolder: options.migrationsFolder });
  const newestKnown = Math.max(0, ...known.map((migration) => migration.folderMillis));
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      const table = await client.query<{ name: string | null }>('SELECT to_regclass($1) AS name', [
        `${MIGRATIONS_SCHEMA}.${MIGRATIONS_TABLE}`,
      ]);
      if (table.rows[0]?.name) {
        const applied = await client.query<{ newest: string | null }>(
          `SELECT max(created_at) AS newest FROM "${MIGRATIONS_SCHEMA}"."${MIGRATIONS_TABLE}"`,
        );
        const newestApplied = Number(applied.rows[0]?.newest ?? 0);
        if (newestApplied > newestKnown) {
          throw new HermesError(
            'schema_too_new',
            `The database ${options.location} was migrated by a newer version of @hermes/core; upgrade to open it`,
            { details: { location: options.location, newestApplied, newestKnown } },
          );
        }
      }
      await migrate(drizzle({ client }), {
        migrationsFolder: options.migrationsFolder,
        migrationsSchema: MIGRATIONS_SCHEMA,
        migrationsTable: MIGRATIONS_TABLE,
      });
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    }
  } finally {
    client.release();
  }
}
