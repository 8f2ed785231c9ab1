import { asc } from 'drizzle-orm';
import type { JsonObject } from '../types.js';
import type { StoreDatabase } from './connection.js';
import { messages, type sessions } from './schema.js';
import type { NewMessage, SessionRow, StoredMessage } from './types.js';

/** A `messages` row as drizzle reads it. */
export type MessageRecord = typeof messages.$inferSelect;
/** A `messages` row as drizzle inserts it. */
export type MessageInsert = typeof messages.$inferInsert;
/** A `sessions` row as drizzle reads it. */
export type SessionRecord = typeof sessions.$inferSelect;

/** Rows read per batch when copying a transcript (branch, spec/core.md §9.4.5). */
export const COPY_BATCH_SIZE = 500;

/** A stored message in the API's shape. */
export function toStoredMessage(row: MessageRecord): StoredMessage {
  return {
    rowId: row.id,
    sessionId: row.sessionId,
    turnId: row.turnId,
    role: row.role,
    content: row.content,
    contentParts: row.contentParts,
    toolCalls: row.toolCalls,
    toolCallId: row.toolCallId,
    toolName: row.toolName,
    reasoning: row.reasoning,
    providerMetadata: row.providerMetadata,
    timestamp: row.timestamp,
    tokenCount: row.tokenCount,
    finishReason: row.finishReason,
    active: row.active,
    compacted: row.compacted,
    supersededBy: row.supersededBy,
    displayKind: row.displayKind,
    displayMetadata: row.displayMetadata,
  };
}

/** Columns of {@link storedMessageFromColumns}, in order. */
export const LOAD_MESSAGES_SQL =
  'SELECT id, session_id, turn_id, role, content, content_parts, tool_calls, tool_call_id, tool_name, reasoning, provider_metadata, timestamp, token_count, finish_reason, active, compacted, superseded_by, display_kind, display_metadata FROM messages WHERE session_id = ?';

/** How a store's driver hands over the JSON and boolean columns of a message row. */
interface ColumnDecoding {
  json(value: unknown): unknown;
  flag(value: unknown): boolean;
}

/** better-sqlite3: JSON as text, booleans as 0 or 1. */
const SQLITE_COLUMNS: ColumnDecoding = {
  json: (value) => (typeof value === 'string' ? JSON.parse(value) : null),
  flag: (value) => value === 1,
};

/** PostgreSQL through `pg` (or `json_build_array`): jsonb already parsed, booleans as booleans. */
const PG_COLUMNS: ColumnDecoding = {
  json: (value) => value,
  flag: (value) => value as boolean,
};

function messageFromColumns(columns: unknown[], decoding: ColumnDecoding): StoredMessage {
  return {
    rowId: columns[0] as number,
    sessionId: columns[1] as string,
    turnId: columns[2] as string | null,
    role: columns[3] as StoredMessage['role'],
    content: columns[4] as string,
    contentParts: decoding.json(columns[5]) as StoredMessage['contentParts'],
    toolCalls: decoding.json(columns[6]) as StoredMessage['toolCalls'],
    toolCallId: columns[7] as string | null,
    toolName: columns[8] as string | null,
    reasoning: columns[9] as string | null,
    providerMetadata: decoding.json(columns[10]) as StoredMessage['providerMetadata'],
    timestamp: columns[11] as number,
    tokenCount: columns[12] as number | null,
    finishReason: columns[13] as string | null,
    active: decoding.flag(columns[14]),
    compacted: decoding.flag(columns[15]),
    supersededBy: columns[16] as number | null,
    displayKind: columns[17] as string | null,
    displayMetadata: decoding.json(columns[18]) as StoredMessage['displayMetadata'],
  };
}

/** A stored message from a raw row of {@link LOAD_MESSAGES_SQL}. */
export function storedMessageFromColumns(columns: unknown[]): StoredMessage {
  return messageFromColumns(columns, SQLITE_COLUMNS);
}

/** A stored message from a PostgreSQL row of the same columns in the same order (pg-reads.ts). */
export function storedMessageFromPgColumns(columns: unknown[]): StoredMessage {
  return messageFromColumns(columns, PG_COLUMNS);
}

/** A session row in the API's shape (a fresh object, so callers cannot alias stored state). */
export function toSessionRow(row: SessionRecord): SessionRow {
  return { ...row, modelConfig: { ...row.modelConfig } };
}

/** The insert values of a new message; `now` fills a missing timestamp. */
export function newMessageValues(sessionId: string, message: NewMessage, now: number): MessageInsert {
  return {
    sessionId,
    turnId: message.turnId ?? null,
    role: message.role,
    content: message.content,
    contentParts: message.contentParts ?? null,
    toolCalls: message.toolCalls ?? null,
    toolCallId: message.toolCallId ?? null,
    toolName: message.toolName ?? null,
    reasoning: message.reasoning ?? null,
    providerMetadata: message.providerMetadata ?? null,
    timestamp: message.timestamp ?? now,
    tokenCount: message.tokenCount ?? null,
    finishReason: message.finishReason ?? null,
    displayKind: message.displayKind ?? null,
    displayMetadata: message.displayMetadata ?? null,
  };
}

/**
 * The insert values of a copy of `row` (rewind, compaction tail, branch): same content, tool,
 * reasoning, timestamp and display fields, a new id, active and not superseded.
 */
export function copyValues(
  row: MessageRecord,
  sessionId: string,
  displayMetadata: JsonObject | null = row.displayMetadata,
): MessageInsert {
  return {
    sessionId,
    turnId: row.turnId,
    role: row.role,
    content: row.content,
    contentParts: row.contentParts,
    toolCalls: row.toolCalls,
    toolCallId: row.toolCallId,
    toolName: row.toolName,
    reasoning: row.reasoning,
    providerMetadata: row.providerMetadata,
    timestamp: row.timestamp,
    tokenCount: row.tokenCount,
    finishReason: row.finishReason,
    displayKind: row.displayKind,
    displayMetadata,
  };
}

function jsonText(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

/** Inserts one message row and returns its id. */
export type MessageInserter = (values: MessageInsert) => number;

/**
 * A prepared single-row INSERT, read back by its rowid. Every transcript write goes through it: drizzle would
 * otherwise build and compile the SQL on each call, which costs more than the insert itself. Raw SQL, not a drizzle
 * prepared query: a turn inserts several rows, and drizzle's placeholder filling and `RETURNING` row mapping cost a
 * share of each insert (the columns and values are the ones drizzle's insert wrote: `active` 1, `compacted` 0,
 * `superseded_by` NULL, ADR 0098). JSON is serialized here and a null stays SQL NULL; drizzle's column encoder would
 * store a JSON `null` text for it.
 */
export function prepareMessageInserter(db: StoreDatabase): MessageInserter {
  const statement = db.$client.prepare(
    `INSERT INTO messages (session_id, turn_id, role, content, content_parts, tool_calls, tool_call_id, tool_name,
      reasoning, provider_metadata, timestamp, token_count, finish_reason, active, compacted, superseded_by,
      display_kind, display_metadata)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, NULL, ?, ?)`,
  );
  return (values) =>
    Number(
      statement.run(
        values.sessionId,
        values.turnId ?? null,
        values.role,
        values.content ?? '',
        jsonText(values.contentParts),
        jsonText(values.toolCalls),
        values.toolCallId ?? null,
        values.toolName ?? null,
        values.reasoning ?? null,
        jsonText(values.providerMetadata),
        values.timestamp,
        values.tokenCount ?? null,
        values.finishReason ?? null,
        values.displayKind ?? null,
        jsonText(values.displayMetadata),
      ).lastInsertRowid,
    );
}

/** Number of tool calls carried by the given rows. */
export function countToolCalls(rows: readonly { toolCalls?: readonly unknown[] | null }[]): number {
  let count = 0;
  for (const row of rows) count += row.toolCalls?.length ?? 0;
  return count;
}

/** Ascending id order, used by every transcript read. */
export const byId = asc(messages.id);
