import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database, { type Statement } from 'better-sqlite3';
import { and, asc, desc, eq, gt, gte, inArray, lt, lte, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { systemClock } from '../clock.js';
import { HermesError } from '../errors.js';
import { newSessionId } from '../ids.js';
import { silentLogger } from '../logger.js';
import { weakestCostStatus as weakerCostStatus } from '../providers/pricing.js';
import type { Clock, CostStatus, JsonObject, Logger, TitleSource } from '../types.js';
import { WalCheckpointer } from './checkpointer.js';
import {
  DEFAULT_RETRY_BUDGETS,
  isLockError,
  type RetryBudgets,
  StoreConnection,
  type StoreDatabase,
} from './connection.js';
import { checkFenceSqlite } from './fence.js';
import { applyMigrations, hasFts5, resolveMigrationsFolder } from './migrations.js';
import { SqliteResponseStore } from './response-store.js';
import {
  byId,
  COPY_BATCH_SIZE,
  copyValues,
  countToolCalls,
  LOAD_MESSAGES_SQL,
  type MessageInsert,
  type MessageInserter,
  type MessageRecord,
  newMessageValues,
  prepareMessageInserter,
  type SessionRecord,
  storedMessageFromColumns,
  toSessionRow,
  toStoredMessage,
} from './rows.js';
import { SqliteRunStore } from './run-store.js';
import * as schema from './schema.js';
import { messages, sessions, usageByModel } from './schema.js';
import { sanitizeFtsQuery } from './search-query.js';
import {
  FTS_INDEX_BATCH_ROWS,
  type FtsIndexStatements,
  prepareFtsIndexStatements,
  prepareStoreStatements,
  type StoreStatements,
} from './sqlite-statements.js';
import {
  assertSeedRoles,
  branchSessionValues,
  branchTitleTaken,
  checkCompactionCoverage,
  compactionRows,
  compactionSummary,
  listConditions,
  listLimit,
  mergeUsageEntries,
  messageRowNotFound,
  neighbourCondition,
  neighbourText,
  newSessionValues,
  nextCostStatus,
  patchFields,
  resolveTakenTitle,
  rewindResult,
  rewoundMetadata,
  rowNotActive,
  searchConditions,
  searchLimit,
  sessionExists,
  sessionNotFound,
  summaryPage,
  titleCandidates,
  titleToApply,
  toUsageByModelRow,
  turnSessionFields,
  turnStartCondition,
  usageAmounts,
  usageInsertValues,
} from './store-common.js';
import { asciiFolded, normalizeTitle, numberedTitle, numberedTitleHead, titleBase } from './titles.js';
import { acquireTurnLease, bornTurnLease, SqliteLeaseStatements } from './turn-lease.js';
import type {
  BornRun,
  CompactionCommit,
  CompactionPlan,
  LeaseOptions,
  ListQuery,
  LoadConversationOptions,
  NewMessage,
  NewSession,
  Page,
  ReadSessionOptions,
  RecordedTurn,
  RewindResult,
  SearchHit,
  SearchOptions,
  SessionPatch,
  SessionRow,
  SessionStore,
  SessionSummary,
  StoredMessage,
  StoredSession,
  TurnCommit,
  TurnLease,
  UsageByModelRow,
  UsageEntry,
  WriteOptions,
} from './types.js';

/** Options of {@link openSqliteStore}. */
export interface SqliteStoreOptions {
  /** Database file, or `':memory:'`. */
  path: string;
  /** Timestamps, retry waits and lease polling; default real time. */
  clock?: Clock;
  /** `database.journal_mode`; default `'wal'`. */
  journalMode?: 'wal' | 'delete';
  logger?: Logger;
  /** Lock-retry budgets in ms; default 60,000 for transcript writes and 20,000 for the rest (§9.5). */
  retryBudgetsMs?: Partial<RetryBudgets>;
  /** SQLite `busy_timeout` in ms; default 1,000 (§9.1). */
  busyTimeoutMs?: number;
  /** Where the drizzle migrations are; default the `drizzle/` folder shipped with the package. */
  migrationsFolder?: string;
}

/** SQLite's default automatic checkpoint, restored when the checkpointer thread fails. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1_000;

/** A `recordTurn` call waiting for the next write of queued turns. */
interface QueuedTurn {
  sessionId: string;
  turn: RecordedTurn;
  options: WriteOptions;
  resolve(ids: number[]): void;
  reject(error: unknown): void;
}

/** The session fields a turn's commit may write, with their columns, in a fixed order (`commitTurn`). */
const TURN_FIELD_COLUMNS = [
  ['model', 'model'],
  ['modelConfig', 'model_config'],
  ['systemPrompt', 'system_prompt'],
] as const;

/** How many title stems' floors a store keeps (`nextTitle`). */
const TITLE_FLOORS_KEPT = 1_000;

/** Words around a match in a search snippet (FTS5 `snippet`). */
const SNIPPET_TOKENS = 24;

/** Creates the database file with mode 0600 before SQLite does (SQLite would honour the umask). */
function prepareDatabaseFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (existsSync(path)) return;
  try {
    closeSync(openSync(path, 'wx', 0o600));
    chmodSync(path, 0o600);
  } catch (error) {
    // Another process created it in between: it owns the mode.
    if ((error as { code?: unknown }).code !== 'EEXIST') throw error;
  }
}

/** The -wal and -shm sidecars hold the same data as the database, so they get its strict mode. */
function restrictSidecarModes(path: string): void {
  for (const sidecar of [`${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    try {
      if (existsSync(sidecar)) chmodSync(sidecar, 0o600);
    } catch {
      // Owned by another user or gone already: nothing to tighten.
    }
  }
}

/**
 * Opens (creating when needed) the SQLite session store (spec/core.md §9.1): sets the pragmas,
 * checks FTS5, and applies the shipped migrations in a transaction.
 *
 * @throws HermesError `fts_unavailable` when the SQLite build lacks FTS5; `schema_too_new` when the
 * file was migrated by a newer version of the package; `store_locked` when another process keeps
 * the file locked through the retry budget.
 */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<SqliteSessionStore> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const path = options.path;
  const inMemory = path === ':memory:' || path === '';
  const busyTimeoutMs = options.busyTimeoutMs ?? 1_000;
  const migrationsFolder = options.migrationsFolder ?? resolveMigrationsFolder();
  if (!inMemory) prepareDatabaseFile(path);
  const sqlite = new Database(path, { timeout: busyTimeoutMs });
  try {
    if (!hasFts5(sqlite)) {
      throw new HermesError('fts_unavailable', 'This SQLite build lacks FTS5, which session search needs', {
        details: { path },
      });
    }
    sqlite.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
    const db = drizzle({ client: sqlite, schema });
    const connection = new StoreConnection(sqlite, db, clock, logger, path, {
      ...DEFAULT_RETRY_BUDGETS,
      ...options.retryBudgetsMs,
    });
    // Switching to WAL needs a moment without other writers, so it retries like a write.
    await connection.withRetry('other', () => {
      sqlite.pragma(`journal_mode = ${options.journalMode === 'delete' ? 'DELETE' : 'WAL'}`);
    });
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    if (!inMemory && options.journalMode !== 'delete') {
      // The WAL is checkpointed on a thread of its own, not inside the commit that fills it (ADR 0060).
      sqlite.pragma('wal_autocheckpoint = 0');
      connection.checkpointer = new WalCheckpointer(path, busyTimeoutMs, logger, () => {
        if (!connection.isClosed) sqlite.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
      });
    }
    await connection.withRetry('other', () => applyMigrations(sqlite, db, { migrationsFolder, path }));
    if (!inMemory) restrictSidecarModes(path);
    return new SqliteSessionStore(connection);
  } catch (error) {
    sqlite.close();
    throw error;
  }
}

/**
 * The SQLite implementation of {@link SessionStore} (drizzle-orm over better-sqlite3). Every write
 * is one `BEGIN IMMEDIATE` transaction retried on lock errors (§9.5); multi-row changes (rewind,
 * branch, compaction) either happen whole or not at all.
 */
export class SqliteSessionStore implements SessionStore {
  /** Stored Responses API objects. */
  readonly responses: SqliteResponseStore;
  /** Durable runs of the runs API. */
  readonly runs: SqliteRunStore;
  private readonly leases: SqliteLeaseStatements;

  /** @internal Use {@link openSqliteStore}. */
  constructor(private readonly connection: StoreConnection) {
    this.responses = new SqliteResponseStore(connection);
    this.runs = new SqliteRunStore(connection);
    this.leases = new SqliteLeaseStatements(connection);
  }

  /** The database file this store was opened on. */
  get path(): string {
    return this.connection.path;
  }

  /** Write transactions committed through this store since it opened (ADR 0056: how a turn's writes are counted). */
  get committedWrites(): number {
    return this.connection.committedWrites;
  }

  private get db(): StoreDatabase {
    return this.connection.db;
  }

  private get now(): number {
    return this.connection.clock.now();
  }

  private prepared: StoreStatements | undefined;
  private inserter: MessageInserter | undefined;

  /**
   * The statements of a turn's session row, usage, transcript appends and commit, compiled now instead of at their
   * first use (ADR 0102): about 6–12 ms of CPU in a fresh process, most of it drizzle building their SQL.
   */
  prepareStatements(): void {
    void this.statements;
    void this.turnStatements;
    this.inserter ??= prepareMessageInserter(this.db);
  }

  /** The per-turn statements, compiled on first use. */
  private get statements(): StoreStatements {
    this.prepared ??= prepareStoreStatements(this.db);
    return this.prepared;
  }
  private countAppend: { run(values: Record<string, unknown>): { changes: number } } | undefined;
  /** The transcript queries by variant: all rows or active ones, whole or from a row id on. */
  private readonly loadStatements = new Map<string, Statement>();
  private turnPrepared: { markDisplay: Statement; releaseLease: Statement } | undefined;
  private readonly turnFieldUpdates = new Map<string, Statement>();
  private sessionById: { get(values: { id: string }): SessionRecord | undefined } | undefined;
  private titleRange: Statement | undefined;
  private titleUpdate: Statement | undefined;
  /**
   * Per numbered-title stem (ASCII-folded): a number below which every "`<stem> #n`" from 2 on was found taken, so
   * that the suffix rule of a stem many sessions share (an auto-title model that answers alike) starts there instead
   * of reading every alike title again (issue 34). Valid at {@link titleFloorsVersion}; at most
   * {@link TITLE_FLOORS_KEPT} stems.
   */
  private readonly titleFloors = new Map<string, number>();
  private titleFloorsVersion = -1;
  private dataVersion: Statement | undefined;
  private usageOfSession: { all(values: { sessionId: string }): (typeof usageByModel.$inferSelect)[] } | undefined;
  private leaseHolderOf: Statement | undefined;

  /** Rows this connection appended since it last indexed for full-text search (ADR 0060). */
  private unindexedRows = 0;
  private indexStatements: FtsIndexStatements | undefined;

  /** Inserts rows in order and returns their ids in that order; the caller holds the write transaction. */
  private insertMessages(values: MessageInsert[]): number[] {
    if (values.length === 0) return [];
    this.inserter ??= prepareMessageInserter(this.db);
    const ids = values.map(this.inserter);
    // The rows wait above the index's mark; a full batch is indexed in this transaction, one FTS5
    // segment for many turns instead of one per commit.
    this.unindexedRows += values.length;
    if (this.unindexedRows >= FTS_INDEX_BATCH_ROWS) this.indexNewRows();
    return ids;
  }

  private get ftsIndex(): FtsIndexStatements {
    this.indexStatements ??= prepareFtsIndexStatements(this.connection.sqlite);
    return this.indexStatements;
  }

  /** Indexes every row above the mark, whichever process appended it; the caller holds the write transaction. */
  private indexNewRows(): void {
    const statements = this.ftsIndex;
    statements.indexRows.run();
    statements.markIndexed.run();
    this.unindexedRows = 0;
  }

  // ---------------------------------------------------------------- sessions

  async createSession(init: NewSession, seed: NewMessage[] = []): Promise<SessionRow> {
    assertSeedRoles(seed);
    return this.connection.write('other', () => {
      const now = this.now;
      if (this.findSession(init.id)) throw sessionExists(init.id);
      this.insertSession(init, seed, now);
      return toSessionRow(this.requireSession(init.id));
    });
  }

  async getOrCreateSession(
    init: Omit<NewSession, 'title' | 'titleSource'>,
    options: { lease?: { holder: string; turnId: string; ttlMs: number }; run?: BornRun } = {},
  ): Promise<{ row: SessionRow; created: boolean; lease: TurnLease | null }> {
    // A read first: an existing session needs no write lock.
    const existing = await this.getSession(init.id);
    if (existing) return { row: existing, created: false, lease: null };
    const lease = options.lease;
    const owner = lease ? { sessionId: init.id, holder: lease.holder, turnId: lease.turnId } : null;
    return this.connection.write('other', () => {
      const found = this.findSession(init.id);
      if (found) return { row: toSessionRow(found), created: false, lease: null };
      this.insertSession(init, [], this.now);
      if (owner && lease) this.leases.takeForNewSession(owner, lease.ttlMs);
      if (options.run) this.runs.insertBorn({ ...options.run, sessionId: init.id });
      return {
        row: toSessionRow(this.requireSession(init.id)),
        created: true,
        lease: owner && lease ? bornTurnLease(this.leases, owner, lease.ttlMs) : null,
      };
    });
  }

  /** Inserts a new session's row and its seed rows (their ids returned); the caller checked that the id is free. */
  private insertSession(init: NewSession, seed: NewMessage[], now: number): number[] {
    let title = normalizeTitle(init.title);
    // A pending title taken by another session in the meantime gets the suffix rule (§9.4.6).
    if (title !== null && this.titleTakenBy(title) !== null) title = this.nextTitle(title);
    this.statements.insertSession.run(newSessionValues(init, seed, title, now));
    return this.insertMessages(seed.map((message) => newMessageValues(init.id, message, now)));
  }

  /**
   * Turns recorded after the first one in this turn of the event loop, written together at its end (ADR 0106): many
   * header-less turns end at once under load, and a commit each cost more than their statements.
   */
  private queuedTurns: QueuedTurn[] = [];
  /** True from the first `recordTurn` of a turn of the event loop until the queued ones are written. */
  private turnWindowOpen = false;
  private turnSavepoint: { begin: Statement; release: Statement; rollback: Statement } | undefined;

  async recordTurn(sessionId: string, turn: RecordedTurn, options: WriteOptions = {}): Promise<number[]> {
    if (!this.turnWindowOpen) {
      // The first is written at once, as alone it always was: a lone turn's answer does not wait for the loop.
      this.turnWindowOpen = true;
      setImmediate(this.writeQueuedTurns);
      return this.connection.write('transcript', () => this.writeTurn(sessionId, turn, options));
    }
    this.connection.assertOpen();
    return new Promise<number[]>((resolve, reject) => {
      this.queuedTurns.push({ sessionId, turn, options, resolve, reject });
    });
  }

  /**
   * Writes the queued turns in one transaction, each in a savepoint of its own: a turn that fails (its session
   * missing, its lease lost) is rolled back alone and only its caller sees the error, as with a transaction each. A
   * lock error fails the transaction, which is retried whole. Resolves once every queued caller is settled.
   */
  private readonly writeQueuedTurns = async (): Promise<void> => {
    const batch = this.queuedTurns;
    this.queuedTurns = [];
    this.turnWindowOpen = false;
    if (batch.length === 0) return;
    if (batch.length === 1) {
      const [only] = batch as [QueuedTurn];
      await this.connection
        .write('transcript', () => this.writeTurn(only.sessionId, only.turn, only.options))
        .then(only.resolve, only.reject);
      return;
    }
    this.turnSavepoint ??= {
      begin: this.connection.sqlite.prepare('SAVEPOINT recorded_turn'),
      release: this.connection.sqlite.prepare('RELEASE recorded_turn'),
      rollback: this.connection.sqlite.prepare('ROLLBACK TO recorded_turn'),
    };
    const savepoint = this.turnSavepoint;
    await this.connection
      .write('transcript', () =>
        batch.map((entry): { ids: number[] } | { error: unknown } => {
          savepoint.begin.run();
          try {
            const ids = this.writeTurn(entry.sessionId, entry.turn, entry.options);
            savepoint.release.run();
            return { ids };
          } catch (error) {
            savepoint.rollback.run();
            savepoint.release.run();
            if (isLockError(error)) throw error;
            return { error };
          }
        }),
      )
      .then(
        (outcomes) =>
          outcomes.forEach((outcome, index) => {
            const entry = batch[index] as QueuedTurn;
            if ('ids' in outcome) entry.resolve(outcome.ids);
            else entry.reject(outcome.error);
          }),
        (error: unknown) => {
          for (const entry of batch) entry.reject(error);
        },
      );
  };

  /** One recorded turn's statements; the caller holds the write transaction. */
  private writeTurn(sessionId: string, turn: RecordedTurn, options: WriteOptions): number[] {
    checkFenceSqlite(this.db, options.fence);
    const now = this.now;
    // A session this turn creates is born with its rows counted (as the append's UPDATE would count them, the
    // activity time the same): one statement less for every header-less turn of a new conversation (ADR 0093).
    const ids =
      turn.create && !this.findSession(sessionId)
        ? this.insertSession({ ...turn.create, id: sessionId }, turn.rows, now)
        : this.appendRows(sessionId, turn.rows, now);
    // The append's UPDATE found the session: no second lookup.
    if (turn.usage) this.addUsage(sessionId, turn.usage, now, true);
    return ids;
  }

  async commitTurn(sessionId: string, commit: TurnCommit, options: WriteOptions = {}): Promise<number[]> {
    const rows = commit.rows ?? [];
    const usage = mergeUsageEntries(commit.usage ?? []);
    return this.connection.write('transcript', () => {
      checkFenceSqlite(this.db, options.fence);
      const now = this.now;
      // The append's UPDATE finds the session and touches it, with rows or without: no lookup of its own.
      const ids = this.appendRows(sessionId, rows, now);
      for (const entry of usage) this.addUsage(sessionId, entry, now, true);
      const fields = turnSessionFields(commit.session);
      if (fields !== null) this.updateTurnFields(sessionId, fields);
      const turnStatements = this.turnStatements;
      for (const mark of commit.display ?? []) {
        const json = mark.displayMetadata === null ? null : JSON.stringify(mark.displayMetadata);
        turnStatements.markDisplay.run(json, mark.rowId, sessionId);
      }
      if (commit.lease?.release) turnStatements.releaseLease.run(sessionId, commit.lease.holder, commit.lease.turnId);
      return ids;
    });
  }

  /**
   * Writes a turn's session fields with a statement prepared once per set of fields: the prompt commit of every new
   * session stores its system prompt and model config, and building that UPDATE through the ORM on each commit cost
   * more than running it (issue 34).
   */
  private updateTurnFields(sessionId: string, fields: NonNullable<ReturnType<typeof turnSessionFields>>): void {
    const columns = TURN_FIELD_COLUMNS.filter(([field]) => fields[field] !== undefined);
    const key = columns.map(([field]) => field).join(',');
    let statement = this.turnFieldUpdates.get(key);
    if (!statement) {
      statement = this.connection.sqlite.prepare(
        `UPDATE sessions SET ${columns.map(([, column]) => `${column} = ?`).join(', ')} WHERE id = ?`,
      );
      this.turnFieldUpdates.set(key, statement);
    }
    statement.run(
      ...columns.map(([field]) => {
        const value = fields[field];
        // The ORM stores the model config as JSON text (`mode: 'json'`); the raw statement does the same.
        return field === 'modelConfig' ? JSON.stringify(value) : (value ?? null);
      }),
      sessionId,
    );
  }

  /** The raw statements of `commitTurn`, prepared on first use. */
  private get turnStatements(): { markDisplay: Statement; releaseLease: Statement } {
    const sqlite = this.connection.sqlite;
    this.turnPrepared ??= {
      markDisplay: sqlite.prepare('UPDATE messages SET display_metadata = ? WHERE id = ? AND session_id = ?'),
      releaseLease: sqlite.prepare('DELETE FROM turn_leases WHERE session_id = ? AND holder = ? AND turn_id = ?'),
    };
    return this.turnPrepared;
  }

  async getSession(id: string): Promise<SessionRow | null> {
    return this.connection.read(() => {
      const row = this.findSession(id);
      return row ? toSessionRow(row) : null;
    });
  }

  /** By id, else by title (case-insensitive, as titles are unique that way). */
  async resolveSession(idOrTitle: string): Promise<SessionRow | null> {
    return this.connection.read(() => {
      const found = this.findByIdOrTitle(idOrTitle);
      return found ? toSessionRow(found) : null;
    });
  }

  async readSession(idOrTitle: string, options: ReadSessionOptions = {}): Promise<StoredSession | null> {
    const usage = this.usageStatement();
    this.leaseHolderOf ??= this.connection.sqlite
      .prepare('SELECT holder FROM turn_leases WHERE session_id = ? AND expires_at > ?')
      .pluck();
    const lease = this.leaseHolderOf;
    return this.connection.read(() => {
      const found = this.findByIdOrTitle(idOrTitle);
      if (!found) return null;
      const holder = lease.get(found.id, this.now) as string | undefined;
      return {
        session: toSessionRow(found),
        rows: (this.loadStatement(true, false).all(found.id) as unknown[][]).map(storedMessageFromColumns),
        usage: usage.all({ sessionId: found.id }).map(toUsageByModelRow),
        leaseHolder: holder ?? null,
        // One process on one file: no other instance listens (the in-process run bus has none either).
        ...(options.listeningBesides !== undefined ? { listening: { size: 0, covers: () => true } } : {}),
      };
    });
  }

  /** The session with this id, else the one with this title; inside a read. */
  private findByIdOrTitle(idOrTitle: string): SessionRecord | undefined {
    const byIdRow = this.findSession(idOrTitle);
    if (byIdRow) return byIdRow;
    const title = normalizeTitle(idOrTitle);
    if (title === null) return undefined;
    return this.db.select().from(sessions).where(sql`${sessions.title} = ${title} COLLATE NOCASE`).get();
  }

  async listSessions(query: ListQuery = {}): Promise<Page<SessionSummary>> {
    const limit = listLimit(query);
    const conditions = listConditions(sessions, query, {
      titleLike: (pattern) => sql`${sessions.title} LIKE ${pattern} ESCAPE '\\'`,
      idBefore: (id) => lt(sessions.id, id),
    });
    if (conditions === null) return { items: [], nextCursor: null };
    const rows = await this.connection.read(() =>
      this.db
        .select({
          id: sessions.id,
          title: sessions.title,
          source: sessions.source,
          kind: sessions.kind,
          parentSessionId: sessions.parentSessionId,
          model: sessions.model,
          cwd: sessions.cwd,
          startedAt: sessions.startedAt,
          lastActivityAt: sessions.lastActivityAt,
          endedAt: sessions.endedAt,
          endReason: sessions.endReason,
          messageCount: sessions.messageCount,
          costUsd: sessions.estimatedCostUsd,
          hidden: sessions.hidden,
          // Written out with aliases: drizzle leaves columns unqualified in a single-table select, which would
          // make the correlated reference resolve to the subquery's own table.
          firstUserText: sql<string | null>`(
            SELECT first_user.content FROM messages AS first_user
            WHERE first_user.session_id = sessions.id AND first_user.active = 1 AND first_user.role = 'user'
            ORDER BY first_user.id LIMIT 1
          )`,
        })
        .from(sessions)
        .where(and(...conditions))
        .orderBy(desc(sessions.lastActivityAt), desc(sessions.id))
        .limit(limit + 1)
        .all(),
    );
    return summaryPage(rows, limit);
  }

  /** Changes model, model config, system prompt, cwd, hidden and title fields; titles follow {@link setTitle}'s rules. */
  async updateSession(id: string, patch: SessionPatch, options: WriteOptions = {}): Promise<void> {
    await this.connection.write('other', () => {
      checkFenceSqlite(this.db, options.fence);
      const session = this.requireSession(id);
      const fields = patchFields(toSessionRow(session), patch);
      if (patch.title !== undefined) this.applyTitle(session, patch.title, patch.titleSource ?? 'user');
      this.db
        .update(sessions)
        .set({ ...fields, lastActivityAt: this.now })
        .where(eq(sessions.id, id))
        .run();
    });
  }

  async endSession(id: string, endReason: string): Promise<void> {
    await this.updateExisting(id, () => ({ endedAt: this.now, endReason }));
  }

  async reopenSession(id: string): Promise<void> {
    await this.updateExisting(id, () => ({ endedAt: null, endReason: null }));
  }

  /** Deletes the session; messages, leases, responses, runs and usage go with it (foreign-key cascade). */
  async deleteSession(id: string): Promise<void> {
    await this.connection.write('other', () => {
      const deleted = this.db.delete(sessions).where(eq(sessions.id, id)).run();
      if (deleted.changes === 0) throw sessionNotFound(id);
      // Its title, if it had one, is free again.
      this.titleFreed();
    });
  }

  async setHidden(id: string, hidden: boolean): Promise<void> {
    await this.updateExisting(id, () => ({ hidden }));
  }

  async touchSession(id: string, options: WriteOptions = {}): Promise<void> {
    await this.connection.write('other', () => {
      checkFenceSqlite(this.db, options.fence);
      this.requireSession(id);
      this.refreshCounters(id);
    });
  }

  // -------------------------------------------------------------- transcript

  async appendMessages(sessionId: string, rows: NewMessage[], options: WriteOptions = {}): Promise<number[]> {
    return this.connection.write('transcript', () => {
      checkFenceSqlite(this.db, options.fence);
      return this.appendRows(sessionId, rows, this.now);
    });
  }

  /** `appendMessages` inside a write transaction. */
  private appendRows(sessionId: string, rows: NewMessage[], now: number): number[] {
    // Prepared once: appends are the hottest write, and compiling the UPDATE costs more than running it.
    this.countAppend ??= this.db
      .update(sessions)
      .set({
        messageCount: sql`${sessions.messageCount} + ${sql.placeholder('rows')}`,
        toolCallCount: sql`${sessions.toolCallCount} + ${sql.placeholder('toolCalls')}`,
        lastActivityAt: sql`${sql.placeholder('now')}`,
      })
      .where(eq(sessions.id, sql.placeholder('sessionId')))
      .prepare();
    const updated = this.countAppend.run({ rows: rows.length, toolCalls: countToolCalls(rows), now, sessionId });
    if (updated.changes === 0) throw sessionNotFound(sessionId);
    return this.insertMessages(rows.map((row) => newMessageValues(sessionId, row, now)));
  }

  async updateMessageDisplay(
    rowId: number,
    displayMetadata: JsonObject | null,
    options: WriteOptions = {},
  ): Promise<void> {
    await this.connection.write('other', () => {
      checkFenceSqlite(this.db, options.fence);
      const row = this.db
        .update(messages)
        .set({ displayMetadata })
        .where(eq(messages.id, rowId))
        .returning({ sessionId: messages.sessionId })
        .get();
      if (!row) throw messageRowNotFound(rowId);
      this.statements.touchSession.run({ sessionId: row.sessionId, now: this.now });
    });
  }

  /**
   * The transcript query, prepared once per variant; `from` reads from a row id on (a turn's rows, by the id range the
   * turn knows, ADR 0093).
   */
  private loadStatement(includeInactive: boolean, from: boolean): Statement {
    const key = `${includeInactive ? 'all' : 'active'}${from ? '-from' : ''}`;
    let statement = this.loadStatements.get(key);
    if (!statement) {
      statement = this.connection.sqlite
        .prepare(
          `${LOAD_MESSAGES_SQL}${includeInactive ? '' : ' AND active = 1'}${from ? ' AND id >= ?' : ''} ORDER BY id`,
        )
        .raw(true);
      this.loadStatements.set(key, statement);
    }
    return statement;
  }

  async loadConversation(sessionId: string, options: LoadConversationOptions = {}): Promise<StoredMessage[]> {
    return this.connection.read(() => {
      this.requireSession(sessionId);
      // Loading a long session is on every resume's path: a statement prepared once per variant,
      // rows read as arrays and mapped by hand cost a third of drizzle's generic row mapping.
      const from = options.fromRowId;
      const statement = this.loadStatement(options.includeInactive === true, from !== undefined);
      const rows = (from === undefined ? statement.all(sessionId) : statement.all(sessionId, from)) as unknown[][];
      return rows.map(storedMessageFromColumns);
    });
  }

  async generation(sessionId: string): Promise<{ lastRowId: number; rewindCount: number } | null> {
    return this.connection.read(() => {
      const session = this.findSession(sessionId);
      if (!session) return null;
      const last = this.statements.lastActiveRow.get({ sessionId });
      return { lastRowId: last?.id ?? 0, rewindCount: session.rewindCount };
    });
  }

  async rewind(sessionId: string, options: { beforeRowId: number }): Promise<RewindResult> {
    return this.connection.write('transcript', () => {
      this.requireSession(sessionId);
      return this.rewindInTransaction(sessionId, options.beforeRowId);
    });
  }

  async undo(sessionId: string): Promise<RewindResult> {
    return this.connection.write('transcript', () => {
      const session = this.requireSession(sessionId);
      const lastTurnStart = this.db
        .select({ id: messages.id })
        .from(messages)
        .where(turnStartCondition(messages, sessionId))
        .orderBy(desc(messages.id))
        .limit(1)
        .get();
      if (!lastTurnStart) return { removed: [], removedUserText: null, idMap: {}, rewindCount: session.rewindCount };
      return this.rewindInTransaction(sessionId, lastTurnStart.id);
    });
  }

  async branch(
    sessionId: string,
    options: { id?: string; title?: string; upToRowId?: number; source?: string } = {},
  ): Promise<SessionRow> {
    return this.connection.write('other', () => {
      const now = this.now;
      const parent = this.requireSession(sessionId);
      const branchId = options.id ?? newSessionId(now);
      if (this.findSession(branchId)) throw sessionExists(branchId);
      if (options.upToRowId !== undefined) this.requireActiveRow(sessionId, options.upToRowId);
      const givenTitle = normalizeTitle(options.title);
      if (givenTitle !== null && this.titleTakenBy(givenTitle) !== null) throw branchTitleTaken(givenTitle);
      const title = givenTitle ?? this.nextTitle(parent.title ?? 'Untitled');
      this.db
        .insert(sessions)
        .values(branchSessionValues(toSessionRow(parent), branchId, title, givenTitle, options.source, now))
        .run();
      // Copy in batches of 500 so a long transcript never sits in memory whole.
      let copied = 0;
      let toolCalls = 0;
      let afterId = 0;
      for (;;) {
        const conditions = [eq(messages.sessionId, sessionId), eq(messages.active, true), gt(messages.id, afterId)];
        if (options.upToRowId !== undefined) conditions.push(lte(messages.id, options.upToRowId));
        const batch = this.db
          .select()
          .from(messages)
          .where(and(...conditions))
          .orderBy(byId)
          .limit(COPY_BATCH_SIZE)
          .all();
        if (batch.length === 0) break;
        this.insertMessages(batch.map((row) => copyValues(row, branchId)));
        copied += batch.length;
        toolCalls += countToolCalls(batch);
        afterId = batch[batch.length - 1]?.id ?? afterId;
        if (batch.length < COPY_BATCH_SIZE) break;
      }
      this.db
        .update(sessions)
        .set({ messageCount: copied, toolCallCount: toolCalls })
        .where(eq(sessions.id, branchId))
        .run();
      return toSessionRow(this.requireSession(branchId));
    });
  }

  async compactInPlace(sessionId: string, plan: CompactionPlan, options: WriteOptions = {}): Promise<CompactionCommit> {
    return this.connection.write('transcript', () => {
      checkFenceSqlite(this.db, options.fence);
      const now = this.now;
      this.requireSession(sessionId);
      const planRows = compactionRows(plan);
      const { middleIds, tailIds, firstMiddle } = planRows;
      // Every active row from the first middle row on must be summarized or carried over, or id order would stop
      // matching conversation order.
      const affected = this.db
        .select()
        .from(messages)
        .where(and(eq(messages.sessionId, sessionId), eq(messages.active, true), gte(messages.id, firstMiddle)))
        .orderBy(byId)
        .all();
      checkCompactionCoverage(sessionId, affected, planRows);
      // Chunked to stay well within SQLite's bound-parameter limit.
      for (let start = 0; start < middleIds.length; start += COPY_BATCH_SIZE) {
        this.db
          .update(messages)
          .set({ active: false, compacted: true })
          .where(inArray(messages.id, middleIds.slice(start, start + COPY_BATCH_SIZE)))
          .run();
      }
      const [summaryRowId] = this.insertMessages([newMessageValues(sessionId, compactionSummary(plan), now)]);
      const tailSet = new Set(tailIds);
      const tailRows = affected.filter((row) => tailSet.has(row.id));
      const idMap = this.supersedeWithCopies(sessionId, tailRows, (row) => row.displayMetadata);
      this.refreshCounters(sessionId);
      return { summaryRowId: summaryRowId as number, archivedRows: middleIds.length, idMap };
    });
  }

  // ------------------------------------------------------------------ titles

  async setTitle(
    id: string,
    title: string | null,
    source: TitleSource,
    options: { usage?: UsageEntry[] } = {},
  ): Promise<string | null> {
    return this.connection.write('other', () => {
      const session = this.requireSession(id);
      const stored = this.applyTitle(session, title, source);
      for (const entry of mergeUsageEntries(options.usage ?? [])) this.addUsage(id, entry, this.now, true);
      this.statements.touchSession.run({ sessionId: id, now: this.now });
      return stored;
    });
  }

  async nextAvailableTitle(base: string): Promise<string> {
    return this.connection.read(() => this.nextTitle(base));
  }

  async isTitleTaken(title: string, exceptSessionId?: string): Promise<boolean> {
    const normalized = normalizeTitle(title);
    if (normalized === null) return false;
    return this.connection.read(() => this.titleTakenBy(normalized, exceptSessionId) !== null);
  }

  // ------------------------------------------------------------------ search

  async search(query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
    const match = sanitizeFtsQuery(query);
    if (match === null) return [];
    const limit = searchLimit(options.limit);
    const conditions = searchConditions(options, {
      inList: (column, values) =>
        sql`${column} IN (${sql.join(
          values.map((value) => sql`${value}`),
          sql`, `,
        )})`,
      isTrue: (column) => sql`${column} = 1`,
    });
    if (conditions === null) return [];
    conditions.unshift(sql`messages_fts MATCH ${match}`);
    const find = (): SearchHit[] => {
      const hits = this.db.all<{
        rowId: number;
        sessionId: string;
        role: string;
        snippet: string;
        timestamp: number;
        active: number;
        compacted: number;
        title: string | null;
        source: string;
        startedAt: number;
      }>(sql`
        SELECT m.id AS rowId, m.session_id AS sessionId, m.role AS role,
          snippet(messages_fts, -1, '>>>', '<<<', '…', ${SNIPPET_TOKENS}) AS snippet,
          m.timestamp AS timestamp, m.active AS active, m.compacted AS compacted,
          s.title AS title, s.source AS source, s.started_at AS startedAt
        FROM messages_fts
        JOIN messages m ON m.id = messages_fts.rowid
        JOIN sessions s ON s.id = m.session_id
        WHERE ${sql.join(conditions, sql` AND `)}
        ORDER BY bm25(messages_fts), m.timestamp DESC, m.id DESC
        LIMIT ${limit}
      `);
      return hits.map((hit) => {
        const active = hit.active === 1;
        const context: SearchHit['context'] = {};
        const before = this.neighbour(hit.sessionId, hit.rowId, active, 'before');
        const after = this.neighbour(hit.sessionId, hit.rowId, active, 'after');
        if (before) context.before = before;
        if (after) context.after = after;
        return {
          sessionId: hit.sessionId,
          rowId: hit.rowId,
          role: hit.role,
          snippet: hit.snippet,
          timestamp: hit.timestamp,
          active,
          compacted: hit.compacted === 1,
          session: { title: hit.title, source: hit.source, startedAt: hit.startedAt },
          context,
        };
      });
    };
    // Rows not indexed yet (ADR 0060) are indexed first, so a search finds every row committed
    // before it. The read sees one snapshot: no row above the mark there means nothing is missing.
    const found = await this.connection.read(() => (this.ftsIndex.anyUnindexed.get() === undefined ? find() : null));
    if (found !== null) return found;
    return this.connection.write('other', () => {
      this.indexNewRows();
      return find();
    });
  }

  // ------------------------------------------------------------------- usage

  /**
   * Adds one model call's usage to its `usage_by_model` row and, except for task `subagent` (already
   * counted on the child sessions), to the session counters. A cost status is the weakest of its calls.
   */
  async recordUsage(sessionId: string, entry: UsageEntry, options: WriteOptions = {}): Promise<void> {
    await this.connection.write('other', () => {
      checkFenceSqlite(this.db, options.fence);
      this.addUsage(sessionId, entry, this.now);
    });
  }

  /** `recordUsage` inside a write transaction; `found` when the session is known to exist in it. */
  private addUsage(sessionId: string, entry: UsageEntry, now: number, found = false): void {
    if (!found) this.requireSession(sessionId);
    const statements = this.statements;
    const { provider, model, task } = entry;
    const current = statements.usageCostStatus.get({ sessionId, provider, model, task });
    statements.upsertUsage.run({
      ...usageInsertValues(sessionId, entry, now),
      rowCostStatus: nextCostStatus(current, entry),
    });
    if (task === 'subagent') {
      statements.touchSession.run({ sessionId, now });
      return;
    }
    let costStatus: CostStatus = entry.costStatus;
    for (const row of statements.sessionCostStatuses.all({ sessionId })) {
      costStatus = weakerCostStatus(costStatus, row.costStatus);
    }
    statements.addSessionUsage.run({ ...usageAmounts(entry), costStatus, now, sessionId });
  }

  async usageByModel(sessionId: string): Promise<UsageByModelRow[]> {
    const statement = this.usageStatement();
    return this.connection.read(() => statement.all({ sessionId }).map(toUsageByModelRow));
  }

  private usageStatement(): NonNullable<SqliteSessionStore['usageOfSession']> {
    // Prepared once: every resume reads it (a header-named chat turn resumes its session), and building the drizzle
    // query cost more than running it (issue 34.3).
    this.usageOfSession ??= this.db
      .select()
      .from(usageByModel)
      .where(eq(usageByModel.sessionId, sql.placeholder('sessionId')))
      .orderBy(asc(usageByModel.task), asc(usageByModel.provider), asc(usageByModel.model))
      .prepare();
    return this.usageOfSession;
  }

  // ------------------------------------------------------------------- lease

  async acquireTurnLease(sessionId: string, options: LeaseOptions): Promise<TurnLease> {
    return acquireTurnLease(this.leases, sessionId, options);
  }

  /** Closes the database. Later calls fail with `store_closed`; closing twice is harmless. */
  async close(): Promise<void> {
    // Turns recorded before the close are written first, as they were when each wrote at once.
    if (this.queuedTurns.length > 0) await this.writeQueuedTurns();
    this.connection.close();
  }

  // --------------------------------------------------------- inside transactions

  private findSession(id: string): SessionRecord | undefined {
    // Prepared once: every turn looks its session up several times, and building the query and
    // compiling the statement cost more than running it (the concurrency benchmark's profile).
    this.sessionById ??= this.db
      .select()
      .from(sessions)
      .where(eq(sessions.id, sql.placeholder('id')))
      .prepare();
    return this.sessionById.get({ id });
  }

  private requireSession(id: string): SessionRecord {
    const session = this.findSession(id);
    if (!session) throw sessionNotFound(id);
    return session;
  }

  private requireActiveRow(sessionId: string, rowId: number): MessageRecord {
    const row = this.db
      .select()
      .from(messages)
      .where(and(eq(messages.id, rowId), eq(messages.sessionId, sessionId), eq(messages.active, true)))
      .get();
    if (!row) throw rowNotActive(sessionId, rowId);
    return row;
  }

  private updateExisting(id: string, fields: () => Partial<SessionRecord>): Promise<void> {
    return this.connection.write('other', () => {
      const updated = this.db
        .update(sessions)
        .set({ ...fields(), lastActivityAt: this.now })
        .where(eq(sessions.id, id))
        .run();
      if (updated.changes === 0) throw sessionNotFound(id);
    });
  }

  /** Recomputes the counters that describe the active transcript, and touches `last_activity_at`. */
  private refreshCounters(sessionId: string): void {
    this.statements.refreshCounters.run({ sessionId, now: this.now });
  }

  /**
   * Re-inserts `rows` as copies after every existing row, in their order, and marks each original
   * inactive and superseded by its copy. Returns original id → copy id.
   */
  private supersedeWithCopies(
    sessionId: string,
    rows: MessageRecord[],
    displayMetadata: (row: MessageRecord) => JsonObject | null,
  ): Record<number, number> {
    const copyIds = this.insertMessages(rows.map((row) => copyValues(row, sessionId, displayMetadata(row))));
    const supersede = this.db
      .update(messages)
      .set({ active: false, supersededBy: sql`${sql.placeholder('copyId')}` })
      .where(eq(messages.id, sql.placeholder('originalId')))
      .prepare();
    const idMap: Record<number, number> = {};
    rows.forEach((row, index) => {
      const copyId = copyIds[index] as number;
      supersede.run({ copyId, originalId: row.id });
      idMap[row.id] = copyId;
    });
    return idMap;
  }

  /** The rewind of §9.4.4; the caller holds the write transaction. */
  private rewindInTransaction(sessionId: string, beforeRowId: number): RewindResult {
    const target = this.requireActiveRow(sessionId, beforeRowId);
    const activeOfSession = and(eq(messages.sessionId, sessionId), eq(messages.active, true));
    const removedRows = this.db
      .select()
      .from(messages)
      .where(and(activeOfSession, gte(messages.id, beforeRowId)))
      .orderBy(byId)
      .all();
    this.db
      .update(messages)
      .set({ active: false })
      .where(and(activeOfSession, gte(messages.id, beforeRowId)))
      .run();
    const survivors = this.db.select().from(messages).where(activeOfSession).orderBy(byId).all();
    const idMap = this.supersedeWithCopies(sessionId, survivors, rewoundMetadata);
    this.db
      .update(sessions)
      .set({ rewindCount: sql`${sessions.rewindCount} + 1` })
      .where(eq(sessions.id, sessionId))
      .run();
    this.refreshCounters(sessionId);
    const { rewindCount } = this.requireSession(sessionId);
    return rewindResult(target, removedRows.map(toStoredMessage), idMap, rewindCount);
  }

  /** The session (other than `exceptSessionId`) using `title`, compared case-insensitively. */
  private titleTakenBy(title: string, exceptSessionId?: string): string | null {
    const row =
      exceptSessionId === undefined
        ? this.statements.titleOwner.get({ title })
        : this.statements.titleOwnerExcept.get({ title, sessionId: exceptSessionId });
    return row?.id ?? null;
  }

  /**
   * `base` when free, else the first free "`<base> #n`" from 2 on (an existing "#n" suffix is replaced).
   * `exceptUntitled` says the excepted session has no title, so the titles taken besides it are all the titles taken,
   * and the floor below which every number was found taken (see {@link titleFloors}) applies.
   */
  private nextTitle(base: string, exceptSessionId?: string, exceptUntitled = exceptSessionId === undefined): string {
    const candidates = titleCandidates(base);
    const first = candidates.next().value;
    if (this.titleTakenBy(first, exceptSessionId) === null) return first;
    const stem = titleBase(first);
    const floorKey = asciiFolded(stem);
    const floor = exceptUntitled ? this.titleFloor(floorKey) : undefined;
    if (floor !== undefined) {
      // Every number below the floor was taken when it was found and no title has been freed since: the first free
      // number is at or above it. Each candidate is checked with the indexed lookup, as below.
      for (let number = floor; ; number += 1) {
        const candidate = numberedTitle(stem, number);
        if (this.titleTakenBy(candidate, exceptSessionId) !== null) continue;
        this.titleFloors.set(floorKey, number);
        return candidate;
      }
    }
    // The numbered candidates share a head (the stem, cut shorter as the number grows), so the titles that may take
    // them come from one range read of the case-insensitive title index instead of one lookup per number: with many
    // sessions titled alike (an auto-title model that answers the same), the lookups grew with every new session
    // (issue 34.3). Each answer from the set is still checked with the lookup, which has the last word.
    const taken = this.titlesStartingWith(numberedTitleHead(first), exceptSessionId);
    let number = 1;
    for (const candidate of candidates) {
      number += 1;
      if (taken.has(asciiFolded(candidate))) continue;
      if (this.titleTakenBy(candidate, exceptSessionId) !== null) continue;
      if (exceptUntitled) {
        if (this.titleFloors.size === 0 || this.titleFloors.size >= TITLE_FLOORS_KEPT) {
          this.titleFloors.clear();
          this.dataVersion ??= this.connection.sqlite.prepare('PRAGMA data_version').pluck();
          this.titleFloorsVersion = this.dataVersion.get() as number;
        }
        this.titleFloors.set(floorKey, number);
      }
      return candidate;
    }
    throw new Error('unreachable: the title candidates never end');
  }

  /**
   * The floor of a stem's numbered titles when it still holds: only while this connection has seen no other
   * connection commit (SQLite's `data_version`) since the floors were found. This store's own writes that free a
   * title (a session deleted, a title replaced) clear the floors themselves.
   */
  private titleFloor(key: string): number | undefined {
    if (this.titleFloors.size === 0) return undefined;
    this.dataVersion ??= this.connection.sqlite.prepare('PRAGMA data_version').pluck();
    const version = this.dataVersion.get() as number;
    if (version !== this.titleFloorsVersion) {
      this.titleFloors.clear();
      this.titleFloorsVersion = version;
      return undefined;
    }
    return this.titleFloors.get(key);
  }

  /** Forgets every title floor: a title may have been freed. */
  private titleFreed(): void {
    this.titleFloors.clear();
  }

  /** The titles (ASCII-folded, as `COLLATE NOCASE` compares them) that start with `head`, another session's. */
  private titlesStartingWith(head: string, exceptSessionId?: string): Set<string> {
    this.titleRange ??= this.connection.sqlite
      .prepare(
        'SELECT title FROM sessions WHERE title COLLATE NOCASE >= ? AND title COLLATE NOCASE < ? AND id IS NOT ?',
      )
      .pluck();
    // The highest code point after the head bounds every longer title that starts with it.
    const rows = this.titleRange.all(head, `${head}\u{10FFFF}`, exceptSessionId ?? null) as string[];
    return new Set(rows.map(asciiFolded));
  }

  /** The title rules of §9.4.6 on one session; returns the stored title. */
  private applyTitle(session: SessionRecord, title: string | null, source: TitleSource): string | null {
    // A title the user chose is never replaced by a generated one.
    const decision = titleToApply(session, title, source);
    if ('keep' in decision) return decision.keep;
    const { normalized } = decision;
    let stored = normalized;
    if (normalized !== null && this.titleTakenBy(normalized, session.id) !== null) {
      stored = resolveTakenTitle(normalized, source, session.id, () =>
        this.nextTitle(normalized, session.id, session.title === null),
      );
    }
    // The title it replaces is free again.
    if (session.title !== null && session.title !== stored) this.titleFreed();
    // Prepared once: an auto-titled session runs it after its first turn, and building the query cost more than
    // running it (issue 34.3).
    this.titleUpdate ??= this.connection.sqlite.prepare('UPDATE sessions SET title = ?, title_source = ? WHERE id = ?');
    this.titleUpdate.run(stored, stored === null ? null : source, session.id);
    return stored;
  }

  /**
   * The row next to a search hit. A live hit's neighbours are the live rows around it; an archived
   * hit's are the rows stored next to it, which is the conversation it was part of.
   */
  private neighbour(
    sessionId: string,
    rowId: number,
    active: boolean,
    side: 'before' | 'after',
  ): { role: string; text: string } | undefined {
    const row = this.db
      .select({ role: messages.role, content: messages.content, toolCalls: messages.toolCalls })
      .from(messages)
      .where(neighbourCondition(messages, sessionId, rowId, active, side))
      .orderBy(side === 'before' ? desc(messages.id) : asc(messages.id))
      .limit(1)
      .get();
    return row ? neighbourText(row) : undefined;
  }
}
