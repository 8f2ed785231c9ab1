/**
 * The PostgreSQL store's reads of one session (its row, its transcript, its usage by model) as single named
 * statements (issue 34, ADR 0065). A resume makes these reads; through drizzle each was a query built per call, and
 * `resolveSession` and `loadConversation` each ran in a transaction of their own (BEGIN, one or two SELECTs,
 * COMMIT): about four round trips where one statement, which reads one snapshot by itself, does. `pg` prepares a
 * named statement once per connection and then only binds it, so neither the SQL nor its plan is built again.
 */
import type pg from 'pg';
import { LISTENER_NAME_PREFIX, listeningFrom } from './pg-bus.js';
import type { PgConnection } from './pg-connection.js';
import { storedMessageFromPgColumns } from './rows.js';
import { toUsageByModelRow } from './store-common.js';
import type { SessionRow, StoredMessage, StoredSession, UsageByModelRow } from './types.js';

/** Row ids, millisecond timestamps and token counts are `bigint`: read as JS numbers (they stay far below 2^53). */
const INT8_OID = 20;

/** `pg`'s type parsers, but `bigint` read as a number (as the drizzle schema's `mode: 'number'` columns are). */
export function numericTypes(types: typeof pg.types): pg.CustomTypesConfig {
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID && format !== 'binary'
        ? (value: string) => Number(value)
        : types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
  };
}

const SESSION_COLUMNS = `s.id, s.source, s.kind, s.title, s.title_source AS "titleSource",
  s.parent_session_id AS "parentSessionId", s.model, s.model_config AS "modelConfig", s.system_prompt AS "systemPrompt",
  s.cwd, s.started_at AS "startedAt", s.last_activity_at AS "lastActivityAt", s.ended_at AS "endedAt",
  s.end_reason AS "endReason", s.message_count AS "messageCount", s.tool_call_count AS "toolCallCount",
  s.api_call_count AS "apiCallCount", s.input_tokens AS "inputTokens", s.output_tokens AS "outputTokens",
  s.cache_read_tokens AS "cacheReadTokens", s.cache_write_tokens AS "cacheWriteTokens",
  s.reasoning_tokens AS "reasoningTokens", s.estimated_cost_usd AS "estimatedCostUsd", s.cost_status AS "costStatus",
  s.rewind_count AS "rewindCount", s.turn_epoch AS "turnEpoch", s.hidden`;

/** The session with this id. */
const SESSION_BY_ID = `SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.id = $1`;

/**
 * The session with this id, else the one with this title (compared case-insensitively, as the unique index does):
 * an id wins over a title, as in two lookups one after the other.
 */
const SESSION_BY_ID_OR_TITLE = `SELECT * FROM (
  SELECT 0 AS rank, ${SESSION_COLUMNS} FROM sessions s WHERE s.id = $1
  UNION ALL
  (SELECT 1 AS rank, ${SESSION_COLUMNS} FROM sessions s WHERE $2::text IS NOT NULL AND lower(s.title) = lower($2::text)
    LIMIT 1)
) AS found ORDER BY rank LIMIT 1`;

/** Each transcript row as a JSON array, in the column order {@link storedMessageFromPgColumns} (the columns of rows.ts's `LOAD_MESSAGES_SQL`) reads. */
const MESSAGE_ARRAY = `json_build_array(m.id, m.session_id, m.turn_id, m.role, m.content, m.content_parts, m.tool_calls,
  m.tool_call_id, m.tool_name, m.reasoning, m.provider_metadata, m.timestamp, m.token_count, m.finish_reason, m.active,
  m.compacted, m.superseded_by, m.display_kind, m.display_metadata)`;

/**
 * A session found as {@link SESSION_BY_ID_OR_TITLE} finds it, with its transcript, its usage and its lease holder, in
 * one row of one statement (one snapshot, one round trip): the rows and the usage as JSON arrays, which PostgreSQL
 * builds and `JSON.parse` reads at once, where a result row per message costs `pg` a parse per field.
 */
function storedSessionQuery(listing: boolean): string {
  return `WITH found AS (
  SELECT * FROM (
    SELECT 0 AS rank, sessions.* FROM sessions WHERE id = $1
    UNION ALL
    (SELECT 1 AS rank, sessions.* FROM sessions WHERE $2::text IS NOT NULL AND lower(title) = lower($2::text) LIMIT 1)
  ) AS candidates ORDER BY rank LIMIT 1
)
SELECT ${SESSION_COLUMNS},
  (SELECT coalesce(json_agg(${MESSAGE_ARRAY} ORDER BY m.id), '[]') FROM messages m WHERE m.session_id = s.id)
    AS "transcriptRows",
  (SELECT coalesce(json_agg(json_build_object('sessionId', u.session_id, 'provider', u.provider, 'model', u.model,
      'task', u.task, 'apiCalls', u.api_calls, 'inputTokens', u.input_tokens, 'outputTokens', u.output_tokens,
      'cacheReadTokens', u.cache_read_tokens, 'cacheWriteTokens', u.cache_write_tokens,
      'reasoningTokens', u.reasoning_tokens, 'costUsd', u.cost_usd, 'costStatus', u.cost_status,
      'updatedAt', u.updated_at) ORDER BY u.task COLLATE "C", u.provider COLLATE "C", u.model COLLATE "C"), '[]')
    FROM usage_by_model u WHERE u.session_id = s.id) AS "usageRows",
  (SELECT l.holder FROM turn_leases l WHERE l.session_id = s.id AND l.expires_at > $3) AS "leaseHolder"${
    listing
      ? `,
  (SELECT coalesce(array_agg(DISTINCT a.application_name), '{}') FROM pg_stat_activity a
    WHERE a.datname = current_database() AND starts_with(a.application_name, $4)) AS "listenerNames"`
      : ''
  }
FROM found s`;
}

const STORED_SESSION = storedSessionQuery(false);
/** The same with the run buses listening on this database (`pg-bus.ts`), as `PgRunBus.listening` lists them. */
const STORED_SESSION_LISTENING = storedSessionQuery(true);

/**
 * The session's rows in order, and whether it exists, in one statement: no row at all when the session is missing,
 * one row of nulls when it has no messages (the LEFT JOIN keeps the session's side).
 */
function transcriptQuery(activeOnly: boolean, from: boolean): string {
  return `SELECT m.id, m.session_id, m.turn_id, m.role, m.content, m.content_parts, m.tool_calls, m.tool_call_id,
    m.tool_name, m.reasoning, m.provider_metadata, m.timestamp, m.token_count, m.finish_reason, m.active, m.compacted,
    m.superseded_by, m.display_kind, m.display_metadata
  FROM sessions s LEFT JOIN messages m ON m.session_id = s.id${activeOnly ? ' AND m.active' : ''}${from ? ' AND m.id >= $2' : ''}
  WHERE s.id = $1 ORDER BY m.id`;
}

/** The transcript statements by name: active rows or all, the whole transcript or from a row id on (ADR 0093). */
const TRANSCRIPTS = {
  hermes_transcript_active_v1: transcriptQuery(true, false),
  hermes_transcript_all_v1: transcriptQuery(false, false),
  hermes_transcript_active_from_v1: transcriptQuery(true, true),
  hermes_transcript_all_from_v1: transcriptQuery(false, true),
};

/** Rows ordered as the SQLite store orders them (bytewise, whatever the database's collation). */
const USAGE_BY_MODEL = `SELECT session_id AS "sessionId", provider, model, task, api_calls AS "apiCalls",
  input_tokens AS "inputTokens", output_tokens AS "outputTokens", cache_read_tokens AS "cacheReadTokens",
  cache_write_tokens AS "cacheWriteTokens", reasoning_tokens AS "reasoningTokens", cost_usd AS "costUsd",
  cost_status AS "costStatus", updated_at AS "updatedAt"
  FROM usage_by_model WHERE session_id = $1
  ORDER BY task COLLATE "C", provider COLLATE "C", model COLLATE "C"`;

type SessionRecord = Omit<SessionRow, 'modelConfig'> & { modelConfig: SessionRow['modelConfig'] };
type UsageRecord = Parameters<typeof toUsageByModelRow>[0];
interface StoredSessionColumns {
  transcriptRows: unknown[][];
  usageRows: UsageRecord[];
  leaseHolder: string | null;
  listenerNames?: string[];
}

/** The store's single-statement reads of one session, over its connection's pool. */
export class PgSessionReads {
  private readonly types: pg.CustomTypesConfig;

  constructor(
    private readonly connection: PgConnection,
    pgTypes: typeof pg.types,
  ) {
    this.types = numericTypes(pgTypes);
  }

  private async run<Row extends pg.QueryResultRow>(name: string, text: string, values: unknown[]): Promise<Row[]> {
    const result = await this.connection.withRetry('other', async () => {
      this.connection.assertOpen();
      return this.connection.pool.query<Row>({ name, text, values, types: this.types });
    });
    return result.rows;
  }

  /** The session row with this id, or null. */
  async session(id: string): Promise<SessionRow | null> {
    const [row] = await this.run<SessionRecord>('hermes_session_by_id_v1', SESSION_BY_ID, [id]);
    return row ? { ...row, modelConfig: { ...row.modelConfig } } : null;
  }

  /** The session with this id, else the one with this (normalised) title, or null. */
  async sessionByIdOrTitle(id: string, title: string | null): Promise<SessionRow | null> {
    const [row] = await this.run<SessionRecord & { rank?: number }>(
      'hermes_session_by_id_or_title_v1',
      SESSION_BY_ID_OR_TITLE,
      [id, title],
    );
    if (!row) return null;
    const { rank: _rank, ...session } = row;
    return { ...session, modelConfig: { ...session.modelConfig } };
  }

  /**
   * The session with this id, else this (normalised) title, its transcript, usage and lease holder at `now`; with
   * `listeningBesides` (this instance's holder id), also the other instances whose run bus listens.
   */
  async storedSession(
    id: string,
    title: string | null,
    now: number,
    listeningBesides?: string,
  ): Promise<StoredSession | null> {
    const listing = listeningBesides !== undefined;
    const [row] = await this.run<SessionRecord & StoredSessionColumns>(
      listing ? 'hermes_stored_session_listening_v1' : 'hermes_stored_session_v1',
      listing ? STORED_SESSION_LISTENING : STORED_SESSION,
      listing ? [id, title, now, LISTENER_NAME_PREFIX] : [id, title, now],
    );
    if (!row) return null;
    const { transcriptRows, usageRows, leaseHolder, listenerNames, ...session } = row;
    return {
      session: { ...session, modelConfig: { ...session.modelConfig } },
      rows: transcriptRows.map(storedMessageFromPgColumns),
      usage: usageRows.map(toUsageByModelRow),
      leaseHolder,
      ...(listeningBesides !== undefined ? { listening: listeningFrom(listenerNames ?? [], listeningBesides) } : {}),
    };
  }

  /**
   * The session's rows in order (active ones only unless `includeInactive`; from `fromRowId` on when given), or null
   * when it does not exist.
   */
  async transcript(sessionId: string, includeInactive: boolean, fromRowId?: number): Promise<StoredMessage[] | null> {
    const name: keyof typeof TRANSCRIPTS = `hermes_transcript_${includeInactive ? 'all' : 'active'}${fromRowId === undefined ? '' : '_from'}_v1`;
    const result = await this.connection.withRetry('other', async () => {
      this.connection.assertOpen();
      return this.connection.pool.query<unknown[]>({
        name,
        text: TRANSCRIPTS[name],
        values: fromRowId === undefined ? [sessionId] : [sessionId, fromRowId],
        rowMode: 'array',
        types: this.types,
      });
    });
    if (result.rows.length === 0) return null;
    const messages: StoredMessage[] = [];
    for (const columns of result.rows) if (columns[0] !== null) messages.push(storedMessageFromPgColumns(columns));
    return messages;
  }

  /** The session's usage by model, ordered by task, provider and model. */
  async usageByModel(sessionId: string): Promise<UsageByModelRow[]> {
    const rows = await this.run<UsageRecord>('hermes_usage_by_model_v1', USAGE_BY_MODEL, [sessionId]);
    return rows.map(toUsageByModelRow);
  }
}
