import { and, asc, desc, eq, gt, gte, inArray, lte, sql } from 'drizzle-orm';
import pg from 'pg';
import { systemClock } from '../clock.js';
import { newSessionId } from '../ids.js';
import { silentLogger } from '../logger.js';
import { weakestCostStatus as weakerCostStatus } from '../providers/pricing.js';
import type { Clock, CostStatus, JsonObject, Logger, StoredToolCall, TitleSource } from '../types.js';
import { DEFAULT_RETRY_BUDGETS, type RetryBudgets } from './connection.js';
import {
  applyPgMigrations,
  connectWithRetry,
  PgConnection,
  type PgTransaction,
  parsePostgresUrl,
  redactDatabaseUrl,
  resolvePgMigrationsFolder,
} from './pg-connection.js';
import { checkFencePg } from './pg-fence.js';
import { PgSessionReads } from './pg-reads.js';
import { PgLeaseStatements, PgResponseStore, PgRunStore } from './pg-records.js';
import { messages, sessions, usageByModel } from './pg-schema.js';
import { type OpenableSession, type OpenOrCreateRow, openedRecord, openOrCreateQuery } from './pg-session-open.js';
import { commitTurnQuery, commitTurnResult, messageColumnArrays } from './pg-turn-commit.js';
import {
  COPY_BATCH_SIZE,
  copyValues,
  countToolCalls,
  type MessageInsert,
  newMessageValues,
  toStoredMessage,
} from './rows.js';
import { searchDocumentText, searchSnippet, searchTerms, toTsqueryLiteral } from './search-document.js';
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
  sessionUsageIncrements,
  summaryPage,
  titleCandidates,
  titleToApply,
  turnStartCondition,
  usageAmounts,
  usageInsertValues,
  usageUpsert,
} from './store-common.js';
import { normalizeTitle } from './titles.js';
import { acquireTurnLease, bornTurnLease } from './turn-lease.js';
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

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database`. */
  url: string;
  /** Where the URL came from, named in errors: `HERMES_DATABASE_URL`, `database.url`, …. */
  source?: string;
  clock?: Clock;
  logger?: Logger;
  /** Retry budgets in ms for transactions that conflict with another instance's (§9.5). */
  retryBudgetsMs?: Partial<RetryBudgets>;
  /** How long to keep trying to reach the server at open; default 10,000 ms. */
  connectBudgetMs?: number;
  /** Connections in the pool; default 10. */
  poolSize?: number;
  /** Where the PostgreSQL migrations are; default `drizzle/pg` shipped with the package. */
  migrationsFolder?: string;
}

/** How long the server lets a connection sit idle inside a transaction before ending it. */
const IDLE_IN_TRANSACTION_MS = 10_000;

/** Every `messages` column but the search vector, in the shape `rows.ts` maps. */
const messageColumns = {
  id: messages.id,
  sessionId: messages.sessionId,
  turnId: messages.turnId,
  role: messages.role,
  content: messages.content,
  contentParts: messages.contentParts,
  toolCalls: messages.toolCalls,
  toolCallId: messages.toolCallId,
  toolName: messages.toolName,
  reasoning: messages.reasoning,
  providerMetadata: messages.providerMetadata,
  timestamp: messages.timestamp,
  tokenCount: messages.tokenCount,
  finishReason: messages.finishReason,
  active: messages.active,
  compacted: messages.compacted,
  supersededBy: messages.supersededBy,
  displayKind: messages.displayKind,
  displayMetadata: messages.displayMetadata,
};

type MessageRecord = Parameters<typeof toStoredMessage>[0];
type SessionRecord = typeof sessions.$inferSelect;

function toSessionRow(row: SessionRecord): SessionRow {
  return { ...row, modelConfig: { ...row.modelConfig } };
}

/**
 * Opens the session store on PostgreSQL (15 or newer): checks the URL, waits for the server within
 * a bounded budget, and applies the shipped migrations under an advisory lock.
 *
 * @throws HermesError `config_invalid` for a malformed URL and `store_unavailable` for a server that
 * never answers (both naming `source`); `schema_too_new` when the database was migrated by a newer
 * version of the package (it is left untouched).
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresSessionStore> {
  const source = options.source ?? 'database URL';
  parsePostgresUrl(options.url, source);
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const location = redactDatabaseUrl(options.url);
  const migrationsFolder = options.migrationsFolder ?? resolvePgMigrationsFolder();
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5_000,
    // A process frozen (SIGSTOP, a long pause) inside a transaction would hold its row locks and block the instance
    // taking its session over; the server ends such a transaction instead (ADR 0049). No store transaction waits on
    // anything but its own statements.
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
  });
  // An idle connection the server drops (restart, failover) must not crash the process.
  pool.on('error', (error) => logger.warn('database connection lost', { location, reason: error.message }));
  // One the server drops while it is checked out (a restart mid-query) reports on its client, which
  // has no listener then: without one the process would crash. The operation itself fails with
  // `store_unavailable`, so the client's report is only logged.
  pool.on('connect', (client) =>
    client.on('error', (error) => logger.debug('database connection lost in use', { location, reason: error.message })),
  );
  try {
    await connectWithRetry(pool, { source, location, budgetMs: options.connectBudgetMs ?? 10_000, clock, logger });
    await applyPgMigrations(pool, { migrationsFolder, location });
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
  const connection = new PgConnection(pool, clock, logger, location, {
    ...DEFAULT_RETRY_BUDGETS,
    ...options.retryBudgetsMs,
  });
  return new PostgresSessionStore(connection);
}

/**
 * The PostgreSQL implementation of {@link SessionStore} (drizzle-orm over `pg`). The same contract
 * as the SQLite store; each multi-row change is one transaction, and writes to one session are
 * serialized by its row lock so row ids keep conversation order.
 */
export class PostgresSessionStore implements SessionStore {
  readonly responses: PgResponseStore;
  readonly runs: PgRunStore;
  private readonly leases: PgLeaseStatements;
  private readonly reads: PgSessionReads;

  /** @internal Use {@link openPostgresStore}. */
  constructor(private readonly connection: PgConnection) {
    this.responses = new PgResponseStore(connection);
    this.runs = new PgRunStore(connection, pg.types);
    this.leases = new PgLeaseStatements(connection);
    this.reads = new PgSessionReads(connection, pg.types);
  }

  /** The database URL without its password. */
  get location(): string {
    return this.connection.location;
  }

  /** @internal The connection pool, borrowed by the cross-instance run bus (`pg-bus.ts`, ADR 0018). */
  get pool(): pg.Pool {
    return this.connection.pool;
  }

  private get now(): number {
    return this.connection.clock.now();
  }

  // ---------------------------------------------------------------- sessions

  async createSession(init: NewSession, seed: NewMessage[] = []): Promise<SessionRow> {
    assertSeedRoles(seed);
    // Untitled and without rows (a gateway or ACP session's first turn): the one statement of getOrCreateSession
    // instead of a transaction of five round trips.
    if (seed.length === 0 && normalizeTitle(init.title) === null) {
      const { title: _title, titleSource: _titleSource, ...untitled } = init;
      const opened = await this.getOrCreateSession(untitled);
      if (!opened.created) throw sessionExists(init.id);
      return opened.row;
    }
    return this.connection.write('other', async (tx) => {
      const now = this.now;
      if (await this.findSession(tx, init.id)) throw sessionExists(init.id);
      if (!(await this.insertSession(tx, init, seed, now))) throw sessionExists(init.id);
      return toSessionRow(await this.requireSession(tx, init.id));
    });
  }

  /** One prepared statement (pg-session-open.ts), the born lease included; no drizzle query is built. */
  async getOrCreateSession(
    init: OpenableSession,
    options: { lease?: { holder: string; turnId: string; ttlMs: number }; run?: BornRun } = {},
  ): Promise<{ row: SessionRow; created: boolean; lease: TurnLease | null }> {
    const lease = options.lease;
    const owner = lease ? { sessionId: init.id, holder: lease.holder, turnId: lease.turnId } : null;
    for (let attempt = 0; ; attempt += 1) {
      const result = await this.connection.withRetry('other', async () => {
        this.connection.assertOpen();
        return this.connection.pool.query<OpenOrCreateRow>(openOrCreateQuery(init, this.now, lease, options.run));
      });
      const opened = result.rows[0];
      if (opened) {
        const born = opened.created && owner && lease ? bornTurnLease(this.leases, owner, lease.ttlMs) : null;
        return { row: toSessionRow(openedRecord(opened)), created: opened.created, lease: born };
      }
      // Created by a transaction that committed after the statement's snapshot: a new snapshot sees it (or, deleted
      // again meanwhile, the next attempt creates it).
      const existing = await this.getSession(init.id);
      if (existing) return { row: existing, created: false, lease: null };
      if (attempt >= 2) throw sessionNotFound(init.id);
    }
  }

  /** Inserts a new session's row and its seed rows; false (nothing written) when the id is taken. */
  private async insertSession(tx: PgTransaction, init: NewSession, seed: NewMessage[], now: number): Promise<boolean> {
    let title = normalizeTitle(init.title);
    if (title !== null && (await this.titleTakenBy(tx, title)) !== null) title = await this.nextTitle(tx, title);
    const inserted = await tx
      .insert(sessions)
      .values(newSessionValues(init, seed, title, now))
      .onConflictDoNothing({ target: sessions.id })
      .returning({ id: sessions.id });
    if (inserted.length === 0) return false;
    await this.insertMessages(
      tx,
      seed.map((message) => newMessageValues(init.id, message, now)),
    );
    return true;
  }

  async recordTurn(sessionId: string, turn: RecordedTurn, options: WriteOptions = {}): Promise<number[]> {
    return this.connection.write('transcript', async (tx) => {
      await checkFencePg(tx, options.fence);
      const now = this.now;
      // Created by another instance meanwhile: the insert does nothing and the rows go to that session.
      if (turn.create && !(await this.findSession(tx, sessionId)))
        await this.insertSession(tx, { ...turn.create, id: sessionId }, [], now);
      const ids = await this.appendRows(tx, sessionId, turn.rows, now);
      // The append's UPDATE found the session and holds its row lock: no second lookup.
      if (turn.usage) await this.addUsage(tx, sessionId, turn.usage, now, true);
      return ids;
    });
  }

  /** One statement, so one round trip and one implicit transaction (ADR 0056). */
  async commitTurn(sessionId: string, commit: TurnCommit, options: WriteOptions = {}): Promise<number[]> {
    const result = await this.connection.withRetry('transcript', async () => {
      this.connection.assertOpen();
      return this.connection.pool.query(commitTurnQuery(sessionId, commit, this.now, options));
    });
    return commitTurnResult(sessionId, result.rows[0], options);
  }

  async getSession(id: string): Promise<SessionRow | null> {
    return this.reads.session(id);
  }

  async resolveSession(idOrTitle: string): Promise<SessionRow | null> {
    return this.reads.sessionByIdOrTitle(idOrTitle, normalizeTitle(idOrTitle));
  }

  async readSession(idOrTitle: string, options: ReadSessionOptions = {}): Promise<StoredSession | null> {
    return this.reads.storedSession(idOrTitle, normalizeTitle(idOrTitle), this.now, options.listeningBesides);
  }

  async listSessions(query: ListQuery = {}): Promise<Page<SessionSummary>> {
    const limit = listLimit(query);
    const conditions = listConditions(sessions, query, {
      // LIKE as in SQLite: ASCII letters compare case-insensitively there, so ILIKE here.
      titleLike: (pattern) => sql`${sessions.title} ILIKE ${pattern} ESCAPE '\\'`,
      idBefore: (id) => sql`${sessions.id} COLLATE "C" < ${id}`,
    });
    if (conditions === null) return { items: [], nextCursor: null };
    const rows = await this.connection.query((db) =>
      db
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
          firstUserText: sql<string | null>`(
          SELECT first_user.content FROM messages AS first_user
          WHERE first_user.session_id = "sessions"."id" AND first_user.active AND first_user.role = 'user'
          ORDER BY first_user.id LIMIT 1
        )`,
        })
        .from(sessions)
        .where(and(...conditions))
        // COLLATE "C" orders ids bytewise, as SQLite does, whatever the database's collation.
        .orderBy(desc(sessions.lastActivityAt), sql`${sessions.id} COLLATE "C" DESC`)
        .limit(limit + 1),
    );
    return summaryPage(rows, limit);
  }

  async updateSession(id: string, patch: SessionPatch, options: WriteOptions = {}): Promise<void> {
    await this.connection.write('other', async (tx) => {
      await checkFencePg(tx, options.fence);
      const session = await this.requireSession(tx, id, true);
      const fields = patchFields(toSessionRow(session), patch);
      if (patch.title !== undefined) await this.applyTitle(tx, session, patch.title, patch.titleSource ?? 'user');
      await tx
        .update(sessions)
        .set({ ...fields, lastActivityAt: this.now })
        .where(eq(sessions.id, id));
    });
  }

  async endSession(id: string, endReason: string): Promise<void> {
    await this.updateExisting(id, () => ({ endedAt: this.now, endReason }));
  }

  async reopenSession(id: string): Promise<void> {
    await this.updateExisting(id, () => ({ endedAt: null, endReason: null }));
  }

  async deleteSession(id: string): Promise<void> {
    await this.connection.write('other', async (tx) => {
      const deleted = await tx.delete(sessions).where(eq(sessions.id, id)).returning({ id: sessions.id });
      if (deleted.length === 0) throw sessionNotFound(id);
    });
  }

  async setHidden(id: string, hidden: boolean): Promise<void> {
    await this.updateExisting(id, () => ({ hidden }));
  }

  async touchSession(id: string, options: WriteOptions = {}): Promise<void> {
    await this.connection.write('other', async (tx) => {
      await checkFencePg(tx, options.fence);
      await this.requireSession(tx, id, true);
      await this.refreshCounters(tx, id);
    });
  }

  // -------------------------------------------------------------- transcript

  async appendMessages(sessionId: string, rows: NewMessage[], options: WriteOptions = {}): Promise<number[]> {
    return this.connection.write('transcript', async (tx) => {
      await checkFencePg(tx, options.fence);
      return this.appendRows(tx, sessionId, rows, this.now);
    });
  }

  /** `appendMessages` inside a write transaction. */
  private async appendRows(tx: PgTransaction, sessionId: string, rows: NewMessage[], now: number): Promise<number[]> {
    // The UPDATE takes the session's row lock first, so appends to one session get ids in commit order.
    const updated = await tx
      .update(sessions)
      .set({
        messageCount: sql`${sessions.messageCount} + ${rows.length}`,
        toolCallCount: sql`${sessions.toolCallCount} + ${countToolCalls(rows)}`,
        lastActivityAt: now,
      })
      .where(eq(sessions.id, sessionId))
      .returning({ id: sessions.id });
    if (updated.length === 0) throw sessionNotFound(sessionId);
    return this.insertMessages(
      tx,
      rows.map((row) => newMessageValues(sessionId, row, now)),
    );
  }

  async updateMessageDisplay(
    rowId: number,
    displayMetadata: JsonObject | null,
    options: WriteOptions = {},
  ): Promise<void> {
    await this.connection.write('other', async (tx) => {
      await checkFencePg(tx, options.fence);
      const [row] = await tx
        .update(messages)
        .set({ displayMetadata })
        .where(eq(messages.id, rowId))
        .returning({ sessionId: messages.sessionId });
      if (!row) throw messageRowNotFound(rowId);
      await tx.update(sessions).set({ lastActivityAt: this.now }).where(eq(sessions.id, row.sessionId));
    });
  }

  async loadConversation(sessionId: string, options: LoadConversationOptions = {}): Promise<StoredMessage[]> {
    const rows = await this.reads.transcript(sessionId, options.includeInactive === true, options.fromRowId);
    if (!rows) throw sessionNotFound(sessionId);
    return rows;
  }

  async generation(sessionId: string): Promise<{ lastRowId: number; rewindCount: number } | null> {
    // One statement (one round trip, one snapshot): every turn of a stored session asks before it starts.
    const result = await this.connection.withRetry('other', async () => {
      this.connection.assertOpen();
      return this.connection.pool.query<{ rewind_count: number; last_row_id: string | number | null }>({
        name: 'hermes_generation_v1',
        text: `SELECT s.rewind_count, (SELECT m.id FROM messages m WHERE m.session_id = s.id AND m.active
          ORDER BY m.id DESC LIMIT 1) AS last_row_id FROM sessions s WHERE s.id = $1`,
        values: [sessionId],
      });
    });
    const row = result.rows[0];
    if (!row) return null;
    return { lastRowId: Number(row.last_row_id ?? 0), rewindCount: row.rewind_count };
  }

  async rewind(sessionId: string, options: { beforeRowId: number }): Promise<RewindResult> {
    return this.connection.write('transcript', async (tx) => {
      await this.requireSession(tx, sessionId, true);
      return this.rewindInTransaction(tx, sessionId, options.beforeRowId);
    });
  }

  async undo(sessionId: string): Promise<RewindResult> {
    return this.connection.write('transcript', async (tx) => {
      const session = await this.requireSession(tx, sessionId, true);
      const [lastTurnStart] = await tx
        .select({ id: messages.id })
        .from(messages)
        .where(turnStartCondition(messages, sessionId))
        .orderBy(desc(messages.id))
        .limit(1);
      if (!lastTurnStart) return { removed: [], removedUserText: null, idMap: {}, rewindCount: session.rewindCount };
      return this.rewindInTransaction(tx, sessionId, lastTurnStart.id);
    });
  }

  async branch(
    sessionId: string,
    options: { id?: string; title?: string; upToRowId?: number; source?: string } = {},
  ): Promise<SessionRow> {
    return this.connection.write('other', async (tx) => {
      const now = this.now;
      const parent = await this.requireSession(tx, sessionId, true);
      const branchId = options.id ?? newSessionId(now);
      if (await this.findSession(tx, branchId)) throw sessionExists(branchId);
      if (options.upToRowId !== undefined) await this.requireActiveRow(tx, sessionId, options.upToRowId);
      const givenTitle = normalizeTitle(options.title);
      if (givenTitle !== null && (await this.titleTakenBy(tx, givenTitle)) !== null) throw branchTitleTaken(givenTitle);
      const title = givenTitle ?? (await this.nextTitle(tx, parent.title ?? 'Untitled'));
      await tx
        .insert(sessions)
        .values(branchSessionValues(toSessionRow(parent), branchId, title, givenTitle, options.source, now));
      let copied = 0;
      let toolCalls = 0;
      let afterId = 0;
      for (;;) {
        const conditions = [eq(messages.sessionId, sessionId), eq(messages.active, true), gt(messages.id, afterId)];
        if (options.upToRowId !== undefined) conditions.push(lte(messages.id, options.upToRowId));
        const batch = await tx
          .select(messageColumns)
          .from(messages)
          .where(and(...conditions))
          .orderBy(asc(messages.id))
          .limit(COPY_BATCH_SIZE);
        if (batch.length === 0) break;
        await this.insertMessages(
          tx,
          batch.map((row) => copyValues(row, branchId)),
        );
        copied += batch.length;
        toolCalls += countToolCalls(batch);
        afterId = batch[batch.length - 1]?.id ?? afterId;
        if (batch.length < COPY_BATCH_SIZE) break;
      }
      await tx
        .update(sessions)
        .set({ messageCount: copied, toolCallCount: toolCalls })
        .where(eq(sessions.id, branchId));
      return toSessionRow(await this.requireSession(tx, branchId));
    });
  }

  async compactInPlace(sessionId: string, plan: CompactionPlan, options: WriteOptions = {}): Promise<CompactionCommit> {
    return this.connection.write('transcript', async (tx) => {
      await checkFencePg(tx, options.fence);
      const now = this.now;
      await this.requireSession(tx, sessionId, true);
      const planRows = compactionRows(plan);
      const { middleIds, tailIds, firstMiddle } = planRows;
      const affected = await tx
        .select(messageColumns)
        .from(messages)
        .where(and(eq(messages.sessionId, sessionId), eq(messages.active, true), gte(messages.id, firstMiddle)))
        .orderBy(asc(messages.id));
      checkCompactionCoverage(sessionId, affected, planRows);
      for (let start = 0; start < middleIds.length; start += COPY_BATCH_SIZE) {
        await tx
          .update(messages)
          .set({ active: false, compacted: true })
          .where(inArray(messages.id, middleIds.slice(start, start + COPY_BATCH_SIZE)));
      }
      const [summaryRowId] = await this.insertMessages(tx, [newMessageValues(sessionId, compactionSummary(plan), now)]);
      const tailSet = new Set(tailIds);
      const tailRows = affected.filter((row) => tailSet.has(row.id));
      const idMap = await this.supersedeWithCopies(tx, sessionId, tailRows, (row) => row.displayMetadata);
      await this.refreshCounters(tx, sessionId);
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
    return this.connection.write('other', async (tx) => {
      const session = await this.requireSession(tx, id, true);
      const stored = await this.applyTitle(tx, session, title, source);
      for (const entry of mergeUsageEntries(options.usage ?? [])) await this.addUsage(tx, id, entry, this.now, true);
      await tx.update(sessions).set({ lastActivityAt: this.now }).where(eq(sessions.id, id));
      return stored;
    });
  }

  async nextAvailableTitle(base: string): Promise<string> {
    return this.connection.read((tx) => this.nextTitle(tx, base));
  }

  async isTitleTaken(title: string, exceptSessionId?: string): Promise<boolean> {
    const normalized = normalizeTitle(title);
    if (normalized === null) return false;
    return this.connection.read(async (tx) => (await this.titleTakenBy(tx, normalized, exceptSessionId)) !== null);
  }

  // ------------------------------------------------------------------ search

  async search(query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
    const terms = searchTerms(query);
    if (terms.length === 0) return [];
    const limit = searchLimit(options.limit);
    const tsquery = toTsqueryLiteral(terms);
    const conditions = searchConditions(options, {
      inList: (column, values) => sql`${column} = ANY(${sql.param(values)}::text[])`,
      isTrue: (column) => column,
    });
    if (conditions === null) return [];
    conditions.unshift(sql`m.search_vector @@ ${tsquery}::tsquery`);
    return this.connection.read(async (tx) => {
      const result = await tx.execute<{
        row_id: string | number;
        session_id: string;
        role: string;
        content: string;
        tool_calls: StoredToolCall[] | null;
        tool_name: string | null;
        timestamp: string | number;
        active: boolean;
        compacted: boolean;
        title: string | null;
        source: string;
        started_at: string | number;
      }>(sql`
        SELECT m.id AS row_id, m.session_id, m.role, m.content, m.tool_calls, m.tool_name,
          m.timestamp, m.active, m.compacted, s.title, s.source, s.started_at
        FROM messages m
        JOIN sessions s ON s.id = m.session_id
        WHERE ${sql.join(conditions, sql` AND `)}
        ORDER BY ts_rank(m.search_vector, ${tsquery}::tsquery) DESC, m.timestamp DESC, m.id DESC
        LIMIT ${limit}
      `);
      const hits: SearchHit[] = [];
      for (const hit of result.rows) {
        const rowId = Number(hit.row_id);
        const context: SearchHit['context'] = {};
        const before = await this.neighbour(tx, hit.session_id, rowId, hit.active, 'before');
        const after = await this.neighbour(tx, hit.session_id, rowId, hit.active, 'after');
        if (before) context.before = before;
        if (after) context.after = after;
        hits.push({
          sessionId: hit.session_id,
          rowId,
          role: hit.role,
          snippet: searchSnippet(
            searchDocumentText({
              role: hit.role,
              content: hit.content,
              toolCalls: hit.tool_calls,
              toolName: hit.tool_name,
            }),
            terms,
          ),
          timestamp: Number(hit.timestamp),
          active: hit.active,
          compacted: hit.compacted,
          session: { title: hit.title, source: hit.source, startedAt: Number(hit.started_at) },
          context,
        });
      }
      return hits;
    });
  }

  // ------------------------------------------------------------------- usage

  async recordUsage(sessionId: string, entry: UsageEntry, options: WriteOptions = {}): Promise<void> {
    await this.connection.write('other', async (tx) => {
      await checkFencePg(tx, options.fence);
      await this.addUsage(tx, sessionId, entry, this.now);
    });
  }

  /** `recordUsage` inside a write transaction; `locked` when the session's row is already locked in it. */
  private async addUsage(
    tx: PgTransaction,
    sessionId: string,
    entry: UsageEntry,
    now: number,
    locked = false,
  ): Promise<void> {
    if (!locked) await this.requireSession(tx, sessionId, true);
    const [current] = await tx
      .select({ costStatus: usageByModel.costStatus })
      .from(usageByModel)
      .where(
        and(
          eq(usageByModel.sessionId, sessionId),
          eq(usageByModel.provider, entry.provider),
          eq(usageByModel.model, entry.model),
          eq(usageByModel.task, entry.task),
        ),
      );
    await tx
      .insert(usageByModel)
      .values(usageInsertValues(sessionId, entry, now))
      .onConflictDoUpdate(usageUpsert(usageByModel, nextCostStatus(current, entry)));
    if (entry.task === 'subagent') {
      await tx.update(sessions).set({ lastActivityAt: now }).where(eq(sessions.id, sessionId));
      return;
    }
    const statuses = await tx
      .select({ costStatus: usageByModel.costStatus })
      .from(usageByModel)
      .where(and(eq(usageByModel.sessionId, sessionId), sql`${usageByModel.task} <> 'subagent'`));
    let costStatus: CostStatus = entry.costStatus;
    for (const row of statuses) costStatus = weakerCostStatus(costStatus, row.costStatus);
    await tx
      .update(sessions)
      .set(sessionUsageIncrements(sessions, usageAmounts(entry), costStatus, now))
      .where(eq(sessions.id, sessionId));
  }

  async usageByModel(sessionId: string): Promise<UsageByModelRow[]> {
    return this.reads.usageByModel(sessionId);
  }

  // ------------------------------------------------------------------- lease

  async acquireTurnLease(sessionId: string, options: LeaseOptions): Promise<TurnLease> {
    return acquireTurnLease(this.leases, sessionId, options);
  }

  /** Closes the pool. Later calls fail with `store_closed`; closing twice is harmless. */
  async close(): Promise<void> {
    await this.connection.close();
  }

  // --------------------------------------------------------- inside transactions

  /** Inserts rows in order with their search documents and returns their ids in that order. */
  private async insertMessages(tx: PgTransaction, values: MessageInsert[]): Promise<number[]> {
    if (values.length === 0) return [];
    // One statement over column arrays: its cost does not grow with the row count the way a
    // many-row VALUES list built by drizzle does (1,200 rows took seconds that way).
    const columns = messageColumnArrays(values).map((column) => sql.param(column));
    const [turnId, role, content, contentParts, toolCalls, toolCallId, toolName, reasoning, providerMetadata] = columns;
    const [timestamp, tokenCount, finishReason, displayKind, displayMetadata, searchVector] = columns.slice(9);
    const result = await tx.execute<{ id: string | number }>(sql`
      INSERT INTO messages (session_id, turn_id, role, content, content_parts, tool_calls, tool_call_id, tool_name,
        reasoning, provider_metadata, timestamp, token_count, finish_reason, display_kind, display_metadata, search_vector)
      SELECT session_id, turn_id, role, content, content_parts::jsonb, tool_calls::jsonb, tool_call_id, tool_name,
        reasoning, provider_metadata::jsonb, timestamp, token_count, finish_reason, display_kind, display_metadata::jsonb,
        search_vector::tsvector
      FROM unnest(
        ${sql.param(values.map((value) => value.sessionId))}::text[], ${turnId}::text[],
        ${role}::text[], ${content}::text[], ${contentParts}::text[], ${toolCalls}::text[],
        ${toolCallId}::text[], ${toolName}::text[], ${reasoning}::text[], ${providerMetadata}::text[],
        ${timestamp}::bigint[], ${tokenCount}::integer[], ${finishReason}::text[], ${displayKind}::text[],
        ${displayMetadata}::text[], ${searchVector}::text[]
      ) WITH ORDINALITY AS input(session_id, turn_id, role, content, content_parts, tool_calls, tool_call_id, tool_name,
        reasoning, provider_metadata, timestamp, token_count, finish_reason, display_kind, display_metadata,
        search_vector, position)
      ORDER BY position
      RETURNING id
    `);
    // Identity values are drawn in the SELECT's order, so ascending ids follow the input order.
    return result.rows.map((row) => Number(row.id)).sort((a, b) => a - b);
  }

  private async findSession(tx: PgTransaction | PgConnection['db'], id: string): Promise<SessionRecord | undefined> {
    const [row] = await tx.select().from(sessions).where(eq(sessions.id, id));
    return row;
  }

  /** The session row; with `lock`, held FOR UPDATE so writes to one session run one at a time. */
  private async requireSession(tx: PgTransaction, id: string, lock = false): Promise<SessionRecord> {
    const query = tx.select().from(sessions).where(eq(sessions.id, id));
    const [session] = lock ? await query.for('update') : await query;
    if (!session) throw sessionNotFound(id);
    return session;
  }

  private async requireActiveRow(tx: PgTransaction, sessionId: string, rowId: number): Promise<MessageRecord> {
    const [row] = await tx
      .select(messageColumns)
      .from(messages)
      .where(and(eq(messages.id, rowId), eq(messages.sessionId, sessionId), eq(messages.active, true)));
    if (!row) throw rowNotActive(sessionId, rowId);
    return row;
  }

  private async updateExisting(id: string, fields: () => Partial<SessionRecord>): Promise<void> {
    // One statement is a transaction of its own: no BEGIN and COMMIT around it (two round trips of three; issue 34,
    // every session.close ends its session this way).
    const updated = await this.connection.withRetry('other', async () => {
      this.connection.assertOpen();
      return this.connection.db
        .update(sessions)
        .set({ ...fields(), lastActivityAt: this.now })
        .where(eq(sessions.id, id))
        .returning({ id: sessions.id });
    });
    if (updated.length === 0) throw sessionNotFound(id);
  }

  private async refreshCounters(tx: PgTransaction, sessionId: string): Promise<void> {
    await tx
      .update(sessions)
      .set({
        messageCount: sql`(SELECT count(*) FROM messages AS counted WHERE counted.session_id = ${sessionId} AND counted.active)`,
        toolCallCount: sql`(SELECT coalesce(sum(jsonb_array_length(counted.tool_calls)), 0) FROM messages AS counted
          WHERE counted.session_id = ${sessionId} AND counted.active AND jsonb_typeof(counted.tool_calls) = 'array')`,
        lastActivityAt: this.now,
      })
      .where(eq(sessions.id, sessionId));
  }

  private async supersedeWithCopies(
    tx: PgTransaction,
    sessionId: string,
    rows: MessageRecord[],
    displayMetadata: (row: MessageRecord) => JsonObject | null,
  ): Promise<Record<number, number>> {
    const copyIds = await this.insertMessages(
      tx,
      rows.map((row) => copyValues(row, sessionId, displayMetadata(row))),
    );
    const idMap: Record<number, number> = {};
    rows.forEach((row, index) => {
      idMap[row.id] = copyIds[index] as number;
    });
    for (let start = 0; start < rows.length; start += COPY_BATCH_SIZE) {
      const pairs = rows.slice(start, start + COPY_BATCH_SIZE).map((row) => [row.id, idMap[row.id] as number]);
      await tx.execute(sql`
        UPDATE messages SET active = false, superseded_by = pairs.copy_id
        FROM unnest(${sql.param(pairs.map((pair) => pair[0]))}::bigint[], ${sql.param(pairs.map((pair) => pair[1]))}::bigint[])
          AS pairs(original_id, copy_id)
        WHERE messages.id = pairs.original_id
      `);
    }
    return idMap;
  }

  private async rewindInTransaction(tx: PgTransaction, sessionId: string, beforeRowId: number): Promise<RewindResult> {
    const target = await this.requireActiveRow(tx, sessionId, beforeRowId);
    const activeOfSession = and(eq(messages.sessionId, sessionId), eq(messages.active, true));
    const removedRows = await tx
      .select(messageColumns)
      .from(messages)
      .where(and(activeOfSession, gte(messages.id, beforeRowId)))
      .orderBy(asc(messages.id));
    await tx
      .update(messages)
      .set({ active: false })
      .where(and(activeOfSession, gte(messages.id, beforeRowId)));
    const survivors = await tx.select(messageColumns).from(messages).where(activeOfSession).orderBy(asc(messages.id));
    const idMap = await this.supersedeWithCopies(tx, sessionId, survivors, rewoundMetadata);
    await tx
      .update(sessions)
      .set({ rewindCount: sql`${sessions.rewindCount} + 1` })
      .where(eq(sessions.id, sessionId));
    await this.refreshCounters(tx, sessionId);
    const { rewindCount } = await this.requireSession(tx, sessionId);
    return rewindResult(target, removedRows.map(toStoredMessage), idMap, rewindCount);
  }

  private async titleTakenBy(tx: PgTransaction, title: string, exceptSessionId?: string): Promise<string | null> {
    const conditions = [sql`lower(${sessions.title}) = lower(${title})`];
    if (exceptSessionId !== undefined) conditions.push(sql`${sessions.id} <> ${exceptSessionId}`);
    const [row] = await tx
      .select({ id: sessions.id })
      .from(sessions)
      .where(and(...conditions))
      .limit(1);
    return row?.id ?? null;
  }

  private async nextTitle(tx: PgTransaction, base: string, exceptSessionId?: string): Promise<string> {
    for (const candidate of titleCandidates(base)) {
      if ((await this.titleTakenBy(tx, candidate, exceptSessionId)) === null) return candidate;
    }
    throw new Error('unreachable: the title candidates never end');
  }

  private async applyTitle(
    tx: PgTransaction,
    session: SessionRecord,
    title: string | null,
    source: TitleSource,
  ): Promise<string | null> {
    const decision = titleToApply(session, title, source);
    if ('keep' in decision) return decision.keep;
    const { normalized } = decision;
    let stored = normalized;
    if (normalized !== null && (await this.titleTakenBy(tx, normalized, session.id)) !== null) {
      stored = await resolveTakenTitle(normalized, source, session.id, () =>
        this.nextTitle(tx, normalized, session.id),
      );
    }
    await tx
      .update(sessions)
      .set({ title: stored, titleSource: stored === null ? null : source })
      .where(eq(sessions.id, session.id));
    return stored;
  }

  private async neighbour(
    tx: PgTransaction,
    sessionId: string,
    rowId: number,
    active: boolean,
    side: 'before' | 'after',
  ): Promise<{ role: string; text: string } | undefined> {
    const [row] = await tx
      .select({ role: messages.role, content: messages.content, toolCalls: messages.toolCalls })
      .from(messages)
      .where(neighbourCondition(messages, sessionId, rowId, active, side))
      .orderBy(side === 'before' ? desc(messages.id) : asc(messages.id))
      .limit(1);
    return row ? neighbourText(row) : undefined;
  }
}
