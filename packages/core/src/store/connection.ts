import type Database from 'better-sqlite3';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { HermesError } from '../errors.js';
import type { Clock, Logger } from '../types.js';
import { retryWithinBudget } from './budget-retry.js';
import type { WalCheckpointer } from './checkpointer.js';
import type * as schema from './schema.js';

/** Which retry budget a write uses (spec/core.md §9.5). */
export type WriteKind = 'transcript' | 'other';

/** Retry budgets in milliseconds for writes that meet a locked database. */
export interface RetryBudgets {
  /** appendMessages, rewind, undo, compactInPlace. Default 60,000. */
  transcript: number;
  /** Every other write. Default 20,000. */
  other: number;
}

/** The spec's budgets: 60 s for transcript writes, 20 s for the rest. */
export const DEFAULT_RETRY_BUDGETS: RetryBudgets = { transcript: 60_000, other: 20_000 };

/**
 * True for SQLITE_BUSY and SQLITE_LOCKED, including their extended codes (SQLITE_BUSY_SNAPSHOT,
 * SQLITE_LOCKED_SHAREDCACHE, …). Recognized by result code, never by message text.
 */
export function isLockError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return (
    code === 'SQLITE_BUSY' ||
    code === 'SQLITE_LOCKED' ||
    code.startsWith('SQLITE_BUSY_') ||
    code.startsWith('SQLITE_LOCKED_')
  );
}

export { retryDelay } from './budget-retry.js';

/** Drizzle database typed with the store's schema. */
export type StoreDatabase = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

/**
 * The single connection of one store: the raw better-sqlite3 handle, drizzle on top of it, and the
 * transaction-with-retry discipline every operation goes through.
 */
export class StoreConnection {
  private closed = false;
  /** Write transactions committed since the store opened: how tests and benchmarks count the writes of a turn. */
  committedWrites = 0;
  /** Checkpoints the WAL off this thread when set (a file in WAL mode; ADR 0060). */
  checkpointer: WalCheckpointer | undefined;
  /**
   * One transaction function for every body: `sqlite.transaction(body)` per call built a new wrapper
   * each time, a visible share of a short turn's CPU (issue 18).
   */
  private readonly inTransaction: Database.Transaction<(body: () => unknown) => unknown>;

  constructor(
    readonly sqlite: Database.Database,
    readonly db: StoreDatabase,
    readonly clock: Clock,
    readonly logger: Logger,
    readonly path: string,
    private readonly budgets: RetryBudgets,
  ) {
    this.inTransaction = sqlite.transaction((body: () => unknown) => body());
  }

  /** Fails once the store is closed, instead of surfacing the driver's TypeError. */
  assertOpen(): void {
    if (this.closed) throw new HermesError('store_closed', `The session store ${this.path} is closed`);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Closes the database handle; later calls fail with `store_closed`. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.checkpointer?.close();
    this.sqlite.close();
  }

  /**
   * Runs `body` in a `BEGIN IMMEDIATE` transaction, retrying on lock errors with jittered delays
   * until the budget of `kind` is spent (then `store_locked`). The body is synchronous, so it sees
   * one consistent snapshot and nothing else in this process interleaves with it.
   */
  write<T>(kind: WriteKind, body: () => T): Promise<T> {
    return this.withRetry(kind, () => {
      const result = this.inTransaction.immediate(body) as T;
      this.committedWrites += 1;
      this.checkpointer?.committed();
      return result;
    });
  }

  /** Runs a read in a deferred transaction, so multi-query reads see one snapshot; retried like writes. */
  read<T>(body: () => T): Promise<T> {
    return this.withRetry('other', () => this.inTransaction.deferred(body) as T);
  }

  /** Retries `attempt` on lock errors within the budget of `kind`, sleeping on the injected clock. */
  withRetry<T>(kind: WriteKind, attempt: () => T): Promise<T> {
    return retryWithinBudget(attempt, {
      budgetMs: this.budgets[kind],
      clock: this.clock,
      logger: this.logger,
      isRetryable: isLockError,
      exhausted: (error, attempts, elapsedMs) =>
        new HermesError(
          'store_locked',
          `The session store ${this.path} stayed locked for ${elapsedMs} ms; gave up after ${attempts} attempts`,
          { cause: error, details: { path: this.path, attempts, elapsedMs } },
        ),
      logMessage: 'session store locked, retrying',
      logFields: () => ({ path: this.path }),
      assertOpen: () => this.assertOpen(),
    });
  }
}
