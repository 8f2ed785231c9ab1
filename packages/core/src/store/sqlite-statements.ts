import type Database from 'better-sqlite3';
import { and, eq, type Placeholder, sql } from 'drizzle-orm';
import type { StoreDatabase } from './connection.js';
import { messages, sessions, usageByModel } from './schema.js';
import { sessionUsageIncrements, type UsageAmounts, usageUpsert } from './store-common.js';

/** The fields of {@link UsageAmounts}: what one model call adds to the usage counters. */
const USAGE_AMOUNTS = [
  'apiCalls',
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'reasoningTokens',
  'costUsd',
] as const satisfies ReadonlyArray<keyof UsageAmounts>;

/** A placeholder per name, for the values of a prepared insert. */
function placeholders<K extends string>(...names: K[]): Record<K, Placeholder> {
  return Object.fromEntries(names.map((name) => [name, sql.placeholder(name)])) as unknown as Record<K, Placeholder>;
}

/**
 * The SQLite store's per-turn statements, compiled once per store (issue 18): building a drizzle
 * query and preparing it cost more than running it, and a short turn ran a dozen of them.
 */
export function prepareStoreStatements(db: StoreDatabase) {
  const id = sql.placeholder('sessionId');
  // Wrapped in SQL: drizzle's update types take no bare placeholder (the value is bound as is).
  const now = sql`${sql.placeholder('now')}`;
  return {
    insertSession: db
      .insert(sessions)
      .values(
        placeholders(
          'id',
          'source',
          'kind',
          'title',
          'titleSource',
          'parentSessionId',
          'model',
          'modelConfig',
          'systemPrompt',
          'cwd',
          'startedAt',
          'lastActivityAt',
          'hidden',
          'messageCount',
          'toolCallCount',
        ),
      )
      .prepare(),
    /** The session using a title, compared case-insensitively. */
    titleOwner: db
      .select({ id: sessions.id })
      .from(sessions)
      .where(sql`${sessions.title} = ${sql.placeholder('title')} COLLATE NOCASE`)
      .prepare(),
    titleOwnerExcept: db
      .select({ id: sessions.id })
      .from(sessions)
      .where(sql`${sessions.title} = ${sql.placeholder('title')} COLLATE NOCASE AND ${sessions.id} <> ${id}`)
      .prepare(),
    touchSession: db.update(sessions).set({ lastActivityAt: now }).where(eq(sessions.id, id)).prepare(),
    /** Recomputes the counters that describe the active transcript, and touches `last_activity_at`. */
    refreshCounters: db
      .update(sessions)
      .set({
        messageCount: sql`(SELECT count(*) FROM messages AS counted WHERE counted.session_id = ${id} AND counted.active = 1)`,
        toolCallCount: sql`(SELECT coalesce(sum(json_array_length(counted.tool_calls)), 0) FROM messages AS counted
          WHERE counted.session_id = ${id} AND counted.active = 1 AND json_valid(counted.tool_calls))`,
        lastActivityAt: now,
      })
      .where(eq(sessions.id, id))
      .prepare(),
    lastActiveRow: db
      .select({ id: messages.id })
      .from(messages)
      .where(and(eq(messages.sessionId, id), eq(messages.active, true)))
      .orderBy(sql`${messages.id} DESC`)
      .limit(1)
      .prepare(),
    usageCostStatus: db
      .select({ costStatus: usageByModel.costStatus })
      .from(usageByModel)
      .where(
        and(
          eq(usageByModel.sessionId, id),
          eq(usageByModel.provider, sql.placeholder('provider')),
          eq(usageByModel.model, sql.placeholder('model')),
          eq(usageByModel.task, sql.placeholder('task')),
        ),
      )
      .prepare(),
    upsertUsage: db
      .insert(usageByModel)
      .values(placeholders('sessionId', 'provider', 'model', 'task', ...USAGE_AMOUNTS, 'costStatus', 'updatedAt'))
      .onConflictDoUpdate(usageUpsert(usageByModel, sql`${sql.placeholder('rowCostStatus')}`))
      .prepare(),
    /** Cost statuses of the session's own calls (a subagent's are counted on its session). */
    sessionCostStatuses: db
      .select({ costStatus: usageByModel.costStatus })
      .from(usageByModel)
      .where(and(eq(usageByModel.sessionId, id), sql`${usageByModel.task} <> 'subagent'`))
      .prepare(),
    addSessionUsage: db
      .update(sessions)
      .set(sessionUsageIncrements(sessions, placeholders(...USAGE_AMOUNTS), sql`${sql.placeholder('costStatus')}`, now))
      .where(eq(sessions.id, id))
      .prepare(),
  };
}

/** The statements of {@link prepareStoreStatements}. */
export type StoreStatements = ReturnType<typeof prepareStoreStatements>;

/**
 * Rows appended before an append indexes them for full-text search (ADR 0060). FTS5 writes a
 * segment at each commit that touched it; one per 4-row turn cost about twice the rest of the
 * append. A batch of 256 rows is a few milliseconds of tokenizing in the append that completes it.
 */
export const FTS_INDEX_BATCH_ROWS = 256;

/** The statements that index the rows above `messages_fts_indexed.last_row_id` (migration 0003). */
export interface FtsIndexStatements {
  /** Indexes every row above the mark from its current columns, in id order. */
  indexRows: Database.Statement;
  /** Moves the mark to the highest row id. */
  markIndexed: Database.Statement;
  /** A row when some row is above the mark. */
  anyUnindexed: Database.Statement;
}

/**
 * Prepares the statements of {@link FtsIndexStatements}. The indexed text is what spec/core.md
 * §9.2.3 names (and what the insert trigger computed before migration 0003; the update trigger
 * still does for indexed rows): the content, tool output cut to 8,000 characters, tool call names
 * and arguments, and the tool name.
 */
export function prepareFtsIndexStatements(sqlite: Database.Database): FtsIndexStatements {
  const above = 'm.id > (SELECT last_row_id FROM messages_fts_indexed)';
  return {
    indexRows: sqlite.prepare(`
      INSERT INTO messages_fts (rowid, text, tool_name)
      SELECT m.id,
        CASE WHEN m.role = 'tool' THEN substr(m.content, 1, 8000) ELSE m.content END
          || CASE WHEN json_valid(m.tool_calls) THEN coalesce((
            SELECT ' ' || group_concat(coalesce(json_extract(value, '$.name'), '') || ' ' || coalesce(json_extract(value, '$.arguments'), ''), ' ')
            FROM json_each(m.tool_calls)
          ), '') ELSE '' END,
        coalesce(m.tool_name, CASE WHEN json_valid(m.tool_calls) THEN (
          SELECT group_concat(json_extract(value, '$.name'), ' ') FROM json_each(m.tool_calls)
        ) END)
      FROM messages AS m
      WHERE ${above}
      ORDER BY m.id`),
    markIndexed: sqlite.prepare(
      'UPDATE messages_fts_indexed SET last_row_id = max(last_row_id, coalesce((SELECT max(id) FROM messages), 0))',
    ),
    anyUnindexed: sqlite.prepare(`SELECT 1 FROM messages AS m WHERE ${above} LIMIT 1`),
  };
}
