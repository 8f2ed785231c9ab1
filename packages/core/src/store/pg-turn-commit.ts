/**
 * A turn's commit on PostgreSQL as one statement (ADR 0056): the session's counters and fields, the new rows with
 * their search documents, the usage rows, display marks and the lease release, as data-modifying CTEs of a single
 * parameterised query. One statement is one round trip and one implicit transaction; a drizzle transaction of the
 * same writes took BEGIN, a dozen statements and COMMIT, each a round trip with its query built anew.
 */

import { leaseLost } from './fence.js';
import { countToolCalls, type MessageInsert, newMessageValues } from './rows.js';
import { searchDocumentText, toTsvectorLiteral } from './search-document.js';
import { mergeUsageEntries, sessionNotFound, sessionUsageOf, turnSessionFields } from './store-common.js';
import type { TurnCommit, WriteOptions } from './types.js';

/** The weakest of a set of cost statuses `status` (`unknown` < `estimated` < `actual` = `included`, tie `actual`). */
const WEAKEST_STATUS = `CASE WHEN bool_or(status = 'unknown') THEN 'unknown'
  WHEN bool_or(status = 'estimated') THEN 'estimated'
  WHEN bool_and(status = 'included') THEN 'included'
  ELSE 'actual' END`;

/**
 * The statement. `touched` takes the session's row lock first and every other part reads from it, so the inserts
 * wait for the lock (row ids follow commit order per session) and write nothing when the session is missing. With a
 * fence ($48), it is also the fence check (ADR 0049): an acquire that moved `turn_epoch` on holds the row's lock until
 * it commits, and the UPDATE then re-reads the row and finds the new epoch, so nothing of the commit is written.
 */
const COMMIT_TURN_SQL = `
WITH touched AS (
  UPDATE sessions SET
    message_count = message_count + $3::integer,
    tool_call_count = tool_call_count + $4::integer,
    last_activity_at = $2::bigint,
    api_call_count = api_call_count + $30::integer,
    input_tokens = input_tokens + $31::bigint,
    output_tokens = output_tokens + $32::bigint,
    cache_read_tokens = cache_read_tokens + $33::bigint,
    cache_write_tokens = cache_write_tokens + $34::bigint,
    reasoning_tokens = reasoning_tokens + $35::bigint,
    estimated_cost_usd = estimated_cost_usd + $36::double precision,
    cost_status = CASE WHEN $37::text IS NULL THEN sessions.cost_status ELSE (
      SELECT ${WEAKEST_STATUS} FROM (
        SELECT $37::text AS status
        UNION ALL SELECT cost_status FROM usage_by_model WHERE session_id = $1::text AND task <> 'subagent'
      ) AS statuses
    ) END,
    model = CASE WHEN $38::boolean THEN $39::text ELSE sessions.model END,
    model_config = coalesce($40::jsonb, sessions.model_config),
    system_prompt = CASE WHEN $41::boolean THEN $42::text ELSE sessions.system_prompt END
  WHERE id = $1::text AND ($48::integer IS NULL OR turn_epoch = $48::integer)
  RETURNING id
),
inserted AS (
  INSERT INTO messages (session_id, turn_id, role, content, content_parts, tool_calls, tool_call_id, tool_name,
    reasoning, provider_metadata, timestamp, token_count, finish_reason, display_kind, display_metadata, search_vector)
  SELECT touched.id, input.turn_id, input.role, input.content, input.content_parts::jsonb, input.tool_calls::jsonb,
    input.tool_call_id, input.tool_name, input.reasoning, input.provider_metadata::jsonb, input.timestamp,
    input.token_count, input.finish_reason, input.display_kind, input.display_metadata::jsonb,
    input.search_vector::tsvector
  FROM touched, unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
    $12::text[], $13::text[], $14::bigint[], $15::integer[], $16::text[], $17::text[], $18::text[], $19::text[])
    WITH ORDINALITY AS input(turn_id, role, content, content_parts, tool_calls, tool_call_id, tool_name, reasoning,
      provider_metadata, timestamp, token_count, finish_reason, display_kind, display_metadata, search_vector, position)
  ORDER BY input.position
  RETURNING id
),
usage AS (
  INSERT INTO usage_by_model (session_id, provider, model, task, api_calls, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, cost_status, updated_at)
  SELECT touched.id, entry.provider, entry.model, entry.task, entry.api_calls, entry.input_tokens,
    entry.output_tokens, entry.cache_read_tokens, entry.cache_write_tokens, entry.reasoning_tokens, entry.cost_usd,
    entry.cost_status, $2::bigint
  FROM touched, unnest($20::text[], $21::text[], $22::text[], $23::integer[], $24::bigint[], $25::bigint[],
    $26::bigint[], $27::bigint[], $28::bigint[], $29::double precision[], $43::text[])
    AS entry(provider, model, task, api_calls, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
      reasoning_tokens, cost_usd, cost_status)
  ON CONFLICT (session_id, provider, model, task) DO UPDATE SET
    api_calls = usage_by_model.api_calls + excluded.api_calls,
    input_tokens = usage_by_model.input_tokens + excluded.input_tokens,
    output_tokens = usage_by_model.output_tokens + excluded.output_tokens,
    cache_read_tokens = usage_by_model.cache_read_tokens + excluded.cache_read_tokens,
    cache_write_tokens = usage_by_model.cache_write_tokens + excluded.cache_write_tokens,
    reasoning_tokens = usage_by_model.reasoning_tokens + excluded.reasoning_tokens,
    cost_usd = usage_by_model.cost_usd + excluded.cost_usd,
    cost_status = CASE
      WHEN 'unknown' IN (usage_by_model.cost_status, excluded.cost_status) THEN 'unknown'
      WHEN 'estimated' IN (usage_by_model.cost_status, excluded.cost_status) THEN 'estimated'
      WHEN usage_by_model.cost_status = 'included' AND excluded.cost_status = 'included' THEN 'included'
      ELSE 'actual' END,
    updated_at = excluded.updated_at
),
marked AS (
  UPDATE messages SET display_metadata = mark.metadata::jsonb
  FROM touched, unnest($44::bigint[], $45::text[]) AS mark(id, metadata)
  WHERE messages.id = mark.id AND messages.session_id = touched.id
),
released AS (
  DELETE FROM turn_leases USING touched
  WHERE turn_leases.session_id = touched.id AND turn_leases.holder = $46::text AND turn_leases.turn_id = $47::text
)
SELECT (SELECT count(*) FROM touched)::integer AS found,
  coalesce((SELECT array_agg(id ORDER BY id) FROM inserted), '{}') AS ids,
  (SELECT turn_epoch FROM sessions WHERE id = $1::text) AS epoch`;

/** The name the statement is prepared under, once per pooled connection. */
const COMMIT_TURN_NAME = 'hermes_commit_turn_v2';

function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

/**
 * The `messages` columns of `values` as parallel arrays, without the session id, in the order the inserts unnest them:
 * turn_id, role, content, content_parts, tool_calls, tool_call_id, tool_name, reasoning, provider_metadata, timestamp,
 * token_count, finish_reason, display_kind, display_metadata, search_vector (the text the search indexes).
 */
export function messageColumnArrays(values: readonly MessageInsert[]): unknown[][] {
  const column = <T>(pick: (value: MessageInsert) => T) => values.map(pick);
  return [
    column((value) => value.turnId ?? null),
    column((value) => value.role),
    column((value) => value.content ?? ''),
    column((value) => json(value.contentParts)),
    column((value) => json(value.toolCalls)),
    column((value) => value.toolCallId ?? null),
    column((value) => value.toolName ?? null),
    column((value) => value.reasoning ?? null),
    column((value) => json(value.providerMetadata)),
    column((value) => value.timestamp),
    column((value) => value.tokenCount ?? null),
    column((value) => value.finishReason ?? null),
    column((value) => value.displayKind ?? null),
    column((value) => json(value.displayMetadata)),
    column((value) =>
      toTsvectorLiteral(
        searchDocumentText({
          role: value.role,
          content: value.content ?? '',
          toolCalls: value.toolCalls,
          toolName: value.toolName,
        }),
      ),
    ),
  ];
}

/** The query config of one commit: its prepared statement's name and text, and the values of its parameters. */
export function commitTurnQuery(
  sessionId: string,
  commit: TurnCommit,
  now: number,
  options: WriteOptions = {},
): { name: string; text: string; values: unknown[] } {
  const rows = commit.rows ?? [];
  const usage = mergeUsageEntries(commit.usage ?? []);
  const own = sessionUsageOf(usage);
  const fields = turnSessionFields(commit.session) ?? {};
  const display = commit.display ?? [];
  const release = commit.lease?.release === true ? commit.lease : null;
  const values: unknown[] = [
    sessionId,
    now,
    rows.length,
    countToolCalls(rows),
    ...messageColumnArrays(rows.map((row) => newMessageValues(sessionId, row, now))),
    usage.map((entry) => entry.provider),
    usage.map((entry) => entry.model),
    usage.map((entry) => entry.task),
    usage.map((entry) => entry.usage.apiCalls),
    usage.map((entry) => entry.usage.inputTokens),
    usage.map((entry) => entry.usage.outputTokens),
    usage.map((entry) => entry.usage.cacheReadTokens),
    usage.map((entry) => entry.usage.cacheWriteTokens),
    usage.map((entry) => entry.usage.reasoningTokens),
    usage.map((entry) => entry.costUsd),
    own.apiCalls,
    own.inputTokens,
    own.outputTokens,
    own.cacheReadTokens,
    own.cacheWriteTokens,
    own.reasoningTokens,
    own.costUsd,
    own.costStatus,
    fields.model !== undefined,
    fields.model ?? null,
    json(fields.modelConfig),
    fields.systemPrompt !== undefined,
    fields.systemPrompt ?? null,
    usage.map((entry) => entry.costStatus),
    display.map((mark) => mark.rowId),
    display.map((mark) => json(mark.displayMetadata)),
    release?.holder ?? null,
    release?.turnId ?? null,
    options.fence?.epoch ?? null,
  ];
  return { name: COMMIT_TURN_NAME, text: COMMIT_TURN_SQL, values };
}

/**
 * The new rows' ids in order, from the statement's row.
 * @throws HermesError `session_not_found`, or `lease_lost` when the fence refused the commit.
 */
export function commitTurnResult(
  sessionId: string,
  row: { found: number; ids: Array<string | number>; epoch: number | null } | undefined,
  options: WriteOptions,
): number[] {
  if (row && row.found > 0) return row.ids.map(Number);
  const epoch = row?.epoch ?? null;
  if (options.fence && epoch !== null) throw leaseLost(options.fence, epoch === options.fence.epoch ? null : epoch);
  throw sessionNotFound(sessionId);
}
