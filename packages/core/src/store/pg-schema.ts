/**
 * Drizzle schema of the session store on PostgreSQL: the same tables and columns as `schema.ts`
 * (spec/core.md §9.2) in PostgreSQL types. drizzle-kit generates `drizzle/pg/` from this file
 * (`pnpm db:generate:pg`).
 *
 * Millisecond timestamps and row ids are `bigint` read as JS numbers (they stay far below 2^53).
 * Full-text search is a `tsvector` column with a GIN index, filled by the store on insert from the
 * same text the SQLite FTS5 table indexes (see `search-document.ts`).
 *
 * This file is loaded by drizzle-kit's own loader, so it imports nothing at runtime but drizzle.
 */
import { sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  bigint,
  boolean,
  customType,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import type { ContentPart, CostStatus, JsonObject, JsonValue, StoredToolCall, TitleSource } from '../types.js';
import type { SessionKind, SessionModelConfig } from './types.js';

const tsvector = customType<{ data: string }>({
  dataType() {
    return 'tsvector';
  },
});

const millis = (name: string) => bigint(name, { mode: 'number' });

/** `sessions` (spec/core.md §9.2.1). */
export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    source: text('source').notNull().default('library'),
    kind: text('kind').$type<SessionKind>().notNull().default('root'),
    title: text('title'),
    titleSource: text('title_source').$type<TitleSource>(),
    parentSessionId: text('parent_session_id').references((): AnyPgColumn => sessions.id, {
      onDelete: 'set null',
    }),
    model: text('model'),
    modelConfig: jsonb('model_config').$type<SessionModelConfig>().notNull().default({}),
    systemPrompt: text('system_prompt'),
    cwd: text('cwd'),
    startedAt: millis('started_at').notNull(),
    lastActivityAt: millis('last_activity_at').notNull(),
    endedAt: millis('ended_at'),
    endReason: text('end_reason'),
    messageCount: integer('message_count').notNull().default(0),
    toolCallCount: integer('tool_call_count').notNull().default(0),
    apiCallCount: integer('api_call_count').notNull().default(0),
    inputTokens: bigint('input_tokens', { mode: 'number' }).notNull().default(0),
    outputTokens: bigint('output_tokens', { mode: 'number' }).notNull().default(0),
    cacheReadTokens: bigint('cache_read_tokens', { mode: 'number' }).notNull().default(0),
    cacheWriteTokens: bigint('cache_write_tokens', { mode: 'number' }).notNull().default(0),
    reasoningTokens: bigint('reasoning_tokens', { mode: 'number' }).notNull().default(0),
    estimatedCostUsd: doublePrecision('estimated_cost_usd').notNull().default(0),
    costStatus: text('cost_status').$type<CostStatus>().notNull().default('unknown'),
    rewindCount: integer('rewind_count').notNull().default(0),
    /** The fencing epoch of the session's turn lease: +1 at every acquire (issue 33.3, ADR 0049). */
    turnEpoch: integer('turn_epoch').notNull().default(0),
    hidden: boolean('hidden').notNull().default(false),
  },
  (table) => [
    // Titles are unique case-insensitively, like SQLite's COLLATE NOCASE index.
    uniqueIndex('sessions_title_lower_unique').on(sql`lower(${table.title})`),
    index('sessions_last_activity_at_idx').on(table.lastActivityAt),
    index('sessions_parent_session_id_idx').on(table.parentSessionId),
    index('sessions_source_idx').on(table.source),
  ],
);

/** `messages` (spec/core.md §9.2.2). */
export const messages = pgTable(
  'messages',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    turnId: text('turn_id'),
    role: text('role').$type<'user' | 'assistant' | 'tool'>().notNull(),
    content: text('content').notNull().default(''),
    contentParts: jsonb('content_parts').$type<ContentPart[]>(),
    toolCalls: jsonb('tool_calls').$type<StoredToolCall[]>(),
    toolCallId: text('tool_call_id'),
    toolName: text('tool_name'),
    reasoning: text('reasoning'),
    providerMetadata: jsonb('provider_metadata').$type<JsonObject>(),
    timestamp: millis('timestamp').notNull(),
    tokenCount: integer('token_count'),
    finishReason: text('finish_reason'),
    active: boolean('active').notNull().default(true),
    compacted: boolean('compacted').notNull().default(false),
    supersededBy: bigint('superseded_by', { mode: 'number' }),
    displayKind: text('display_kind'),
    displayMetadata: jsonb('display_metadata').$type<JsonObject>(),
    /** The search document (spec/core.md §9.2.3), written with the row. */
    searchVector: tsvector('search_vector'),
  },
  (table) => [
    index('messages_session_active_id_idx').on(table.sessionId, table.active, table.id),
    index('messages_tool_call_id_idx').on(table.toolCallId),
    index('messages_search_vector_idx').using('gin', table.searchVector),
  ],
);

/** `responses` (spec/core.md §9.2.4). */
export const responses = pgTable(
  'responses',
  {
    id: text('id').primaryKey(),
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    previousResponseId: text('previous_response_id'),
    conversation: text('conversation'),
    model: text('model').notNull(),
    status: text('status').$type<'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled'>().notNull(),
    request: jsonb('request').$type<JsonValue>().notNull(),
    output: jsonb('output').$type<JsonValue>(),
    usage: jsonb('usage').$type<JsonValue>(),
    error: jsonb('error').$type<JsonValue>(),
    firstRowId: bigint('first_row_id', { mode: 'number' }),
    lastRowId: bigint('last_row_id', { mode: 'number' }),
    createdAt: millis('created_at').notNull(),
    completedAt: millis('completed_at'),
  },
  (table) => [
    index('responses_conversation_created_at_idx').on(table.conversation, table.createdAt),
    index('responses_session_id_idx').on(table.sessionId),
  ],
);

/** `runs` (spec/core.md §9.2.5). */
export const runs = pgTable(
  'runs',
  {
    id: text('id').primaryKey(),
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    turnId: text('turn_id'),
    status: text('status').$type<'queued' | 'running' | 'stopping' | 'completed' | 'cancelled' | 'failed'>().notNull(),
    idempotencyKey: text('idempotency_key'),
    holder: text('holder').notNull(),
    input: jsonb('input').$type<JsonValue>().notNull(),
    result: jsonb('result').$type<JsonValue>(),
    exitReason: text('exit_reason'),
    error: jsonb('error').$type<JsonValue>(),
    createdAt: millis('created_at').notNull(),
    startedAt: millis('started_at'),
    endedAt: millis('ended_at'),
    updatedAt: millis('updated_at').notNull(),
  },
  (table) => [
    uniqueIndex('runs_idempotency_key_unique').on(table.idempotencyKey),
    index('runs_session_created_at_idx').on(table.sessionId, table.createdAt),
  ],
);

/** `turn_leases` (spec/core.md §9.2.6). */
export const turnLeases = pgTable('turn_leases', {
  sessionId: text('session_id')
    .primaryKey()
    .references(() => sessions.id, { onDelete: 'cascade' }),
  holder: text('holder').notNull(),
  turnId: text('turn_id').notNull(),
  acquiredAt: millis('acquired_at').notNull(),
  expiresAt: millis('expires_at').notNull(),
});

/** `usage_by_model` (spec/core.md §9.2.7). */
export const usageByModel = pgTable(
  'usage_by_model',
  {
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    provider: text('provider').notNull(),
    model: text('model').notNull(),
    task: text('task').notNull(),
    apiCalls: integer('api_calls').notNull().default(0),
    inputTokens: bigint('input_tokens', { mode: 'number' }).notNull().default(0),
    outputTokens: bigint('output_tokens', { mode: 'number' }).notNull().default(0),
    cacheReadTokens: bigint('cache_read_tokens', { mode: 'number' }).notNull().default(0),
    cacheWriteTokens: bigint('cache_write_tokens', { mode: 'number' }).notNull().default(0),
    reasoningTokens: bigint('reasoning_tokens', { mode: 'number' }).notNull().default(0),
    costUsd: doublePrecision('cost_usd').notNull().default(0),
    costStatus: text('cost_status').$type<CostStatus>().notNull().default('unknown'),
    updatedAt: millis('updated_at').notNull(),
  },
  (table) => [primaryKey({ columns: [table.sessionId, table.provider, table.model, table.task] })],
);

/**
 * `run_events`: the wire events of runs, so any instance can stream a run that executes on another
 * (issue 17.2, ADR 0018). PostgreSQL only: on SQLite one process holds a run's events in memory.
 * Rows go with their run (cascade); `event` repeats the payload's name for the approval lookups.
 */
export const runEvents = pgTable(
  'run_events',
  {
    runId: text('run_id')
      .notNull()
      .references(() => runs.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    event: text('event').notNull(),
    payload: jsonb('payload').$type<JsonObject>().notNull(),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [primaryKey({ columns: [table.runId, table.seq] })],
);
