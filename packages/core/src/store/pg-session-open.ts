/**
 * Opening a session by id on PostgreSQL, creating it when it is missing, as one statement (issue 34.2): the chat API
 * names a new session with `X-Hermes-Session-Id` on every turn that starts one. A drizzle lookup followed by
 * `createSession`'s transaction (BEGIN, lookup, insert, read back, COMMIT) took six round trips, each query built
 * anew; this is one prepared statement.
 */
import type { sessions } from './pg-schema.js';
import type { BornRun, NewSession } from './types.js';

/** A `sessions` row as drizzle reads it on PostgreSQL. */
type SessionRecord = typeof sessions.$inferSelect;

/** The `sessions` columns under the names of the drizzle record (`rows.ts`'s `SessionRecord`). */
const SESSION_COLUMNS = `id, source, kind, title, title_source AS "titleSource", parent_session_id AS "parentSessionId",
  model, model_config AS "modelConfig", system_prompt AS "systemPrompt", cwd, started_at AS "startedAt",
  last_activity_at AS "lastActivityAt", ended_at AS "endedAt", end_reason AS "endReason",
  message_count AS "messageCount", tool_call_count AS "toolCallCount", api_call_count AS "apiCallCount",
  input_tokens AS "inputTokens", output_tokens AS "outputTokens", cache_read_tokens AS "cacheReadTokens",
  cache_write_tokens AS "cacheWriteTokens", reasoning_tokens AS "reasoningTokens",
  estimated_cost_usd AS "estimatedCostUsd", cost_status AS "costStatus", rewind_count AS "rewindCount",
  turn_epoch AS "turnEpoch", hidden`;

/**
 * The insert does nothing when the id is taken (and so do the lease's and the run's, which read from it), and the second
 * branch then reads the existing row. A row inserted by a
 * transaction that committed after this statement's snapshot was taken is in neither branch (the insert waited for it
 * and skipped; the read does not see it): the statement returns no row and the caller reads the session again.
 */
const OPEN_OR_CREATE_SQL = `
WITH created AS (
  INSERT INTO sessions (id, source, kind, parent_session_id, model, model_config, system_prompt, cwd, started_at,
    last_activity_at, hidden, turn_epoch)
  VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::jsonb, $7::text, $8::text, $9::bigint, $10::bigint,
    $11::boolean, CASE WHEN $12::text IS NULL THEN 0 ELSE 1 END)
  ON CONFLICT (id) DO NOTHING
  RETURNING *
),
leased AS (
  INSERT INTO turn_leases (session_id, holder, turn_id, acquired_at, expires_at)
  SELECT id, $12::text, $13::text, $10::bigint, $14::bigint FROM created WHERE $12::text IS NOT NULL
),
run AS (
  INSERT INTO runs (id, session_id, status, holder, input, created_at, updated_at)
  SELECT $15::text, id, 'queued', $16::text, $17::jsonb, $10::bigint, $10::bigint FROM created WHERE $15::text IS NOT NULL
)
SELECT true AS created, ${SESSION_COLUMNS} FROM created
UNION ALL
SELECT false AS created, ${SESSION_COLUMNS} FROM sessions WHERE id = $1::text AND NOT EXISTS (SELECT 1 FROM created)`;

/** A session opened or created by {@link openOrCreateQuery}: untitled, with no seed rows. */
export type OpenableSession = Omit<NewSession, 'title' | 'titleSource'>;

/**
 * The query config (a prepared statement, once per pooled connection). With `lease`, a session the statement creates
 * is born with that turn lease held and its epoch at 1, as its first acquire would leave it (ADR 0049); with `run`, it
 * also gets that run's queued row, as `runs.create` writes it (ADR 0088).
 */
export function openOrCreateQuery(
  init: OpenableSession,
  now: number,
  lease?: { holder: string; turnId: string; ttlMs: number },
  run?: BornRun,
) {
  return {
    name: 'hermes_open_or_create_session_v3',
    text: OPEN_OR_CREATE_SQL,
    values: [
      init.id,
      init.source ?? 'library',
      init.kind ?? 'root',
      init.parentSessionId ?? null,
      init.model ?? null,
      JSON.stringify(init.modelConfig ?? {}),
      init.systemPrompt ?? null,
      init.cwd ?? null,
      init.startedAt ?? now,
      now,
      init.hidden ?? false,
      lease?.holder ?? null,
      lease?.turnId ?? null,
      lease ? now + lease.ttlMs : null,
      run?.id ?? null,
      run?.holder ?? null,
      // As `runs.create` encodes it: a JSON null input is stored as the JSON text `null`.
      run ? JSON.stringify(run.input) : null,
    ],
  };
}

/** The statement's row: the record's columns (bigints as node-postgres reads them, strings) and whether it was made. */
export type OpenOrCreateRow = Record<keyof SessionRecord, unknown> & { created: boolean };

/** The drizzle-shaped record of the statement's row; bigint columns come back from node-postgres as strings. */
export function openedRecord(row: OpenOrCreateRow): SessionRecord {
  const { created: _created, ...record } = row;
  const number = (value: unknown) => Number(value);
  return {
    ...(record as unknown as SessionRecord),
    startedAt: number(row.startedAt),
    lastActivityAt: number(row.lastActivityAt),
    endedAt: row.endedAt === null ? null : number(row.endedAt),
    inputTokens: number(row.inputTokens),
    outputTokens: number(row.outputTokens),
    cacheReadTokens: number(row.cacheReadTokens),
    cacheWriteTokens: number(row.cacheWriteTokens),
    reasoningTokens: number(row.reasoningTokens),
  };
}
