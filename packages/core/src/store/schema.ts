/**
 * Drizzle schema of the session store (spec/core.md §9.2). drizzle-kit generates the SQL under
 * `packages/core/drizzle` from this file; the FTS5 table and its triggers, which drizzle does not
 * model, live in a hand-written migration beside the generated ones.
 *
 * This file is loaded by drizzle-kit's own loader, so it imports nothing at runtime but drizzle.
 */
import { sql } from 'drizzle-orm';
import {
  type AnySQLiteColumn,
  index,
  integer,
  primaryKey,
  real,
  sqliteTable,
  text,
  uniqueIndex,
} from 'drizzle-orm/sqlite-core';
import type { ContentPart, CostStatus, JsonObject, JsonValue, StoredToolCall, TitleSource } from '../types.js';
import type { SessionKind, SessionModelConfig } from './types.js';

/** `sessions` (spec/core.md §9.2.1). */
export const sessions = sqliteTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    source: text('source').notNull().default('library'),
    kind: text('kind').$type<SessionKind>().notNull().default('root'),
    title: text('title'),
    titleSource: text('title_source').$type<TitleSource>(),
    parentSessionId: text('parent_session_id').references((): AnySQLiteColumn => sessions.id, {
      onDelete: 'set null',
    }),
    model: text('model'),
    modelConfig: text('model_config', { mode: 'json' }).$type<SessionModelConfig>().notNull().default({}),
    systemPrompt: text('system_prompt'),
    cwd: text('cwd'),
    startedAt: integer('started_at').notNull(),
    lastActivityAt: integer('last_activity_at').notNull(),
    endedAt: integer('ended_at'),
    endReason: text('end_reason'),
    messageCount: integer('message_count').notNull().default(0),
    toolCallCount: integer('tool_call_count').notNull().default(0),
    apiCallCount: integer('api_call_count').notNull().default(0),
    inputTokens: integer('input_tokens').notNull().default(0),
    outputTokens: integer('output_tokens').notNull().default(0),
    cacheReadTokens: integer('cache_read_tokens').notNull().default(0),
    cacheWriteTokens: integer('cache_write_tokens').notNull().default(0),
    reasoningTokens: integer('reasoning_tokens').notNull().default(0),
    estimatedCostUsd: real('estimated_cost_usd').notNull().default(0),
    costStatus: text('cost_status').$type<CostStatus>().notNull().default('unknown'),
    rewindCount: integer('rewind_count').notNull().default(0),
    /** The fencing epoch of the session's turn lease: +1 at every acquire (issue 33.3, ADR 0049). */
    turnEpoch: integer('turn_epoch').notNull().default(0),
    hidden: integer('hidden', { mode: 'boolean' }).notNull().default(false),
  },
  (table) => [
    // Case-insensitive uniqueness needs an expression index: drizzle has no column collation for SQLite.
    uniqueIndex('sessions_title_nocase_unique').on(sql`${table.title} COLLATE NOCASE`),
    index('sessions_last_activity_at_idx').on(table.lastActivityAt),
    index('sessions_parent_session_id_idx').on(table.parentSessionId),
    index('sessions_source_idx').on(table.source),
  ],
);

/** `messages` (spec/core.md §9.2.2). */
export const messages = sqliteTable(
  'messages',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    turnId: text('turn_id'),
    role: text('role').$type<'user' | 'assistant' | 'tool'>().notNull(),
    content: text('content').notNull().default(''),
    contentParts: text('content_parts', { mode: 'json' }).$type<ContentPart[]>(),
    toolCalls: text('tool_calls', { mode: 'json' }).$type<StoredToolCall[]>(),
    toolCallId: text('tool_call_id'),
    toolName: text('tool_name'),
    reasoning: text('reasoning'),
    providerMetadata: text('provider_metadata', { mode: 'json' }).$type<JsonObject>(),
    timestamp: integer('timestamp').notNull(),
    tokenCount: integer('token_count'),
    finishReason: text('finish_reason'),
    active: integer('active', { mode: 'boolean' }).notNull().default(true),
    compacted: integer('compacted', { mode: 'boolean' }).notNull().default(false),
    supersededBy: integer('superseded_by'),
    displayKind: text('display_kind'),
    displayMetadata: text('display_metadata', { mode: 'json' }).$type<JsonObject>(),
  },
  (table) => [
    index('messages_session_active_id_idx').on(table.sessionId, table.active, table.id),
    index('messages_tool_call_id_idx').on(table.toolCallId),
  ],
);

/** `responses` (spec/core.md §9.2.4). */
export const responses = sqliteTable(
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
    request: text('request', { mode: 'json' }).$type<JsonValue>().notNull(),
    output: text('output', { mode: 'json' }).$type<JsonValue>(),
    usage: text('usage', { mode: 'json' }).$type<JsonValue>(),
    error: text('error', { mode: 'json' }).$type<JsonValue>(),
    firstRowId: integer('first_row_id'),
    lastRowId: integer('last_row_id'),
    createdAt: integer('created_at').notNull(),
    completedAt: integer('completed_at'),
  },
  (table) => [
    index('responses_conversation_created_at_idx').on(table.conversation, table.createdAt),
    index('responses_session_id_idx').on(table.sessionId),
  ],
);

/** `runs` (spec/core.md §9.2.5). */
export const runs = sqliteTable(
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
    input: text('input', { mode: 'json' }).$type<JsonValue>().notNull(),
    result: text('result', { mode: 'json' }).$type<JsonValue>(),
    exitReason: text('exit_reason'),
    error: text('error', { mode: 'json' }).$type<JsonValue>(),
    createdAt: integer('created_at').notNull(),
    startedAt: integer('started_at'),
    endedAt: integer('ended_at'),
    updatedAt: integer('updated_at').notNull(),
  },
  (table) => [
    // SQLite treats NULLs as distinct in a unique index, so only non-null keys must be unique.
    uniqueIndex('runs_idempotency_key_unique').on(table.idempotencyKey),
    index('runs_session_created_at_idx').on(table.sessionId, table.createdAt),
  ],
);

/** `turn_leases` (spec/core.md §9.2.6). */
export const turnLeases = sqliteTable('turn_leases', {
  sessionId: text('session_id')
    .primaryKey()
    .references(() => sessions.id, { onDelete: 'cascade' }),
  holder: text('holder').notNull(),
  turnId: text('turn_id').notNull(),
  acquiredAt: integer('acquired_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
});

/** `usage_by_model` (spec/core.md §9.2.7). */
export const usageByModel = sqliteTable(
  'usage_by_model',
  {
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    provider: text('provider').notNull(),
    model: text('model').notNull(),
    task: text('task').notNull(),
    apiCalls: integer('api_calls').notNull().default(0),
    inputTokens: integer('input_tokens').notNull().default(0),
    outputTokens: integer('output_tokens').notNull().default(0),
    cacheReadTokens: integer('cache_read_tokens').notNull().default(0),
    cacheWriteTokens: integer('cache_write_tokens').notNull().default(0),
    reasoningTokens: integer('reasoning_tokens').notNull().default(0),
    costUsd: real('cost_usd').notNull().default(0),
    costStatus: text('cost_status').$type<CostStatus>().notNull().default('unknown'),
    updatedAt: integer('updated_at').notNull(),
  },
  (table) => [primaryKey({ columns: [table.sessionId, table.provider, table.model, table.task] })],
);
