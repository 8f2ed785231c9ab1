/**
 * The durable session store (spec/core.md §9): the {@link SessionStore} contract and its SQLite
 * implementation.
 */
export { DEFAULT_RETRY_BUDGETS, isLockError, type RetryBudgets } from './connection.js';
export { checkFenceSqlite, isLeaseLost, leaseLost } from './fence.js';
export { resolveMigrationsFolder } from './migrations.js';
export {
  isPostgresUrl,
  type OpenSessionStoreOptions,
  openPostgresStore,
  openSessionStore,
  resolveStoreLocation,
} from './open.js';
export { MAX_CONTROL_PAYLOAD_BYTES } from './pg-bus.js';
export type { PostgresSessionStore, PostgresStoreOptions } from './pg-store.js';
export { SqliteResponseStore } from './response-store.js';
export {
  type AppendOptions,
  createRunBus,
  type ListeningInstances,
  LocalRunBus,
  type RunBus,
  type RunBusOptions,
  type RunControlReply,
  type RunControlRequest,
  type RunEventRecord,
  type RunSettlement,
} from './run-bus.js';
export { DEFAULT_RUN_EVENT_OUTBOX, RunEventOutbox, type RunEventOutboxOptions } from './run-outbox.js';
export { IDEMPOTENCY_WINDOW_MS, SqliteRunStore } from './run-store.js';
export { sanitizeFtsQuery } from './search-query.js';
export { openSqliteStore, SqliteSessionStore, type SqliteStoreOptions } from './sqlite-store.js';
export { MAX_TITLE_LENGTH, normalizeTitle } from './titles.js';
export type * from './types.js';
