import { and, asc, count, desc, eq, getTableColumns, inArray, lt, type SQL, sql } from 'drizzle-orm';
import type pg from 'pg';
import type { Clock, JsonValue } from '../types.js';
import type { PgConnection, PgTransaction } from './pg-connection.js';
import { checkFencePg } from './pg-fence.js';
import {
  type RefreshLeaseRow,
  refreshLeaseQuery,
  releaseLeaseQuery,
  type TakeLeaseRow,
  takeLeaseAttempt,
  takeLeaseQuery,
} from './pg-lease-take.js';
import { numericTypes } from './pg-reads.js';
import { responses, runs, sessions, turnLeases } from './pg-schema.js';
import {
  IDEMPOTENCY_WINDOW_MS,
  type NewRun,
  newRunRecord,
  orphanedRunPatch,
  reclaimedRunPatch,
  runListQuery,
  runNotFound,
  runSettled,
  UNFINISHED,
} from './run-store.js';
import { sessionNotFound } from './store-common.js';
import type { LeaseAttempt, LeaseOwner, LeaseStatements } from './turn-lease.js';
import type { ResponseRecord, ResponseStore, RunRecord, RunStatus, RunStore, WriteOptions } from './types.js';

async function requireSessionExists(tx: PgTransaction, sessionId: string): Promise<void> {
  const [session] = await tx.select({ id: sessions.id }).from(sessions).where(eq(sessions.id, sessionId));
  if (!session) throw sessionNotFound(sessionId);
}

/** A JSON value for a NOT NULL jsonb column: drizzle would write a JS null as SQL NULL. */
function jsonOrNullText(value: JsonValue): JsonValue | SQL {
  return value === null ? sql`'null'::jsonb` : value;
}

/**
 * The update half of {@link PgResponseStore.put}'s upsert: every column but the key takes the value the insert half
 * was given (`excluded`), so each JSON column is encoded and sent once, as on SQLite (ADR 0091): a stored response
 * holds its whole answer twice, and giving the values to `set` as well sent both copies again.
 */
const REPLACE_WITH_INSERTED: Record<string, SQL> = Object.fromEntries(
  Object.entries(getTableColumns(responses))
    .filter(([key]) => key !== 'id')
    .map(([key, column]) => [key, sql.raw(`excluded."${column.name}"`)]),
);

/** Stored Responses API objects on PostgreSQL (spec/core.md §9.2.4, §9.4.12). */
export class PgResponseStore implements ResponseStore {
  /** @internal Built by the store that owns the connection. */
  constructor(private readonly connection: PgConnection) {}

  async put(record: ResponseRecord): Promise<void> {
    const { id, ...rest } = record;
    const fields = { ...rest, request: jsonOrNullText(rest.request) };
    await this.connection.write('other', async (tx) => {
      await requireSessionExists(tx, record.sessionId);
      await tx
        .insert(responses)
        .values({ id, ...fields })
        .onConflictDoUpdate({ target: responses.id, set: REPLACE_WITH_INSERTED });
    });
  }

  async get(id: string): Promise<ResponseRecord | null> {
    const [row] = await this.connection.query((db) => db.select().from(responses).where(eq(responses.id, id)));
    return row ?? null;
  }

  async count(): Promise<number> {
    const [row] = await this.connection.query((db) => db.select({ value: count() }).from(responses));
    return Number(row?.value ?? 0);
  }

  async delete(id: string): Promise<boolean> {
    return this.connection.write('other', async (tx) => {
      const deleted = await tx.delete(responses).where(eq(responses.id, id)).returning({ id: responses.id });
      return deleted.length > 0;
    });
  }

  async latestForConversation(name: string): Promise<ResponseRecord | null> {
    const [row] = await this.connection.query((db) =>
      db
        .select()
        .from(responses)
        .where(eq(responses.conversation, name))
        .orderBy(desc(responses.createdAt), sql`${responses.id} COLLATE "C" DESC`)
        .limit(1),
    );
    return row ?? null;
  }

  async withOutputItems(itemIds: readonly string[]): Promise<ResponseRecord[]> {
    if (itemIds.length === 0) return [];
    const list = sql.join(
      itemIds.map((id) => sql`${id}`),
      sql`, `,
    );
    // A scan of the stored outputs: references are rare (one request per client turn) and records are pruned.
    return this.connection.query((db) =>
      db
        .select()
        .from(responses)
        .where(
          sql`exists (select 1 from jsonb_array_elements(case when jsonb_typeof(${responses.output}) = 'array' then ${responses.output} else '[]'::jsonb end) as item where (case when jsonb_typeof(item) = 'object' then item ->> 'id' end) in (${list}))`,
        )
        .orderBy(asc(responses.createdAt), sql`${responses.id} COLLATE "C" ASC`),
    );
  }

  async prune(olderThanMs: number): Promise<number> {
    return this.connection.write('other', async (tx) => {
      const cutoff = this.connection.clock.now() - olderThanMs;
      const deleted = await tx.delete(responses).where(lt(responses.createdAt, cutoff)).returning({ id: responses.id });
      return deleted.length;
    });
  }
}

/** The columns of a run row, named as {@link RunRecord} names them. */
const RUN_COLUMNS = `id, session_id AS "sessionId", turn_id AS "turnId", status, idempotency_key AS "idempotencyKey",
  holder, input, result, exit_reason AS "exitReason", error, created_at AS "createdAt", started_at AS "startedAt",
  ended_at AS "endedAt", updated_at AS "updatedAt"`;

/** The run with this id. */
const RUN_BY_ID = `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1`;

/**
 * A new queued run without an idempotency key, written only when its session exists: the check and the insert in one
 * statement, where a transaction took four round trips (BEGIN, the session's SELECT, the INSERT, COMMIT).
 */
const CREATE_RUN = `INSERT INTO runs (id, session_id, status, holder, input, created_at, updated_at)
  SELECT $1::text, $2::text, 'queued', $3::text, $4::jsonb, $5::bigint, $5::bigint
  WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $2::text)
  RETURNING id`;

/**
 * A change of an unfinished run, each column set only when its flag is true, and the run's status as it was when
 * nothing changed (settled, or null when there is no such run): one statement for every patch, prepared once per
 * pooled connection, where a transaction took three round trips (BEGIN, the UPDATE, COMMIT).
 */
const UPDATE_RUN = `WITH changed AS (
    UPDATE runs SET
      turn_id = CASE WHEN $2::boolean THEN $3::text ELSE turn_id END,
      status = CASE WHEN $4::boolean THEN $5::text ELSE status END,
      result = CASE WHEN $6::boolean THEN $7::jsonb ELSE result END,
      exit_reason = CASE WHEN $8::boolean THEN $9::text ELSE exit_reason END,
      error = CASE WHEN $10::boolean THEN $11::jsonb ELSE error END,
      started_at = CASE WHEN $12::boolean THEN $13::bigint ELSE started_at END,
      ended_at = CASE WHEN $14::boolean THEN $15::bigint ELSE ended_at END,
      updated_at = $16::bigint
    WHERE id = $1::text AND status IN ('queued', 'running', 'stopping')
    RETURNING id)
  SELECT (SELECT count(*) FROM changed)::int AS changed, (SELECT status FROM runs WHERE id = $1::text) AS status`;

/** A jsonb parameter as text: `pg` would send a JS array as a PostgreSQL array, and null must stay SQL NULL. */
function jsonParameter(value: JsonValue | null): string | null {
  return value === null ? null : JSON.stringify(value);
}

/** Durable run records on PostgreSQL (spec/core.md §9.2.5, §9.4.12). */
export class PgRunStore implements RunStore {
  private readonly types: pg.CustomTypesConfig;

  /** @internal Built by the store that owns the connection. */
  constructor(
    private readonly connection: PgConnection,
    pgTypes: typeof pg.types,
  ) {
    this.types = numericTypes(pgTypes);
  }

  /**
   * One named statement outside a transaction (issue 34, ADR 0082): the run routes make these on every run, and
   * through drizzle each was a query built per call, most of them in a transaction of their own.
   */
  private async statement<Row extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
  ): Promise<Row[]> {
    const result = await this.connection.withRetry('other', async () => {
      this.connection.assertOpen();
      return this.connection.pool.query<Row>({ name, text, values, types: this.types });
    });
    return result.rows;
  }

  async findByIdempotencyKey(key: string, withinMs: number = IDEMPOTENCY_WINDOW_MS): Promise<RunRecord | null> {
    const [found] = await this.connection.query((db) => db.select().from(runs).where(eq(runs.idempotencyKey, key)));
    if (!found || found.createdAt < this.connection.clock.now() - withinMs) return null;
    return found;
  }

  /**
   * Creates a queued run. A key used within the last 24 hours returns that run with
   * `existing: true`; two instances racing on one key meet at its unique index and the retry
   * returns the winner's run.
   */
  async create(input: NewRun): Promise<RunRecord & { existing: boolean }> {
    const key = input.idempotencyKey ?? null;
    if (key === null) {
      const record = newRunRecord(input, this.connection.clock.now());
      const created = await this.statement('hermes_run_create_v1', CREATE_RUN, [
        record.id,
        record.sessionId,
        record.holder,
        JSON.stringify(record.input),
        record.createdAt,
      ]);
      if (created.length === 0) throw sessionNotFound(input.sessionId);
      return { ...record, existing: false };
    }
    return this.connection.write('other', async (tx) => {
      const now = this.connection.clock.now();
      const [previous] = await tx.select().from(runs).where(eq(runs.idempotencyKey, key)).for('update');
      if (previous && previous.createdAt >= now - IDEMPOTENCY_WINDOW_MS) return { ...previous, existing: true };
      if (previous) await tx.update(runs).set({ idempotencyKey: null }).where(eq(runs.id, previous.id));
      await requireSessionExists(tx, input.sessionId);
      const record = newRunRecord(input, now);
      await tx.insert(runs).values({ ...record, input: jsonOrNullText(record.input) });
      return { ...record, existing: false };
    });
  }

  async update(
    id: string,
    patch: Partial<Pick<RunRecord, 'turnId' | 'status' | 'result' | 'exitReason' | 'error' | 'startedAt' | 'endedAt'>>,
    options: WriteOptions = {},
  ): Promise<void> {
    if (options.fence === undefined) {
      const given = (value: unknown) => value !== undefined;
      const [row] = await this.statement<{ changed: number; status: RunStatus | null }>(
        'hermes_run_update_v1',
        UPDATE_RUN,
        [
          id,
          given(patch.turnId),
          patch.turnId ?? null,
          given(patch.status),
          patch.status ?? null,
          given(patch.result),
          jsonParameter(patch.result ?? null),
          given(patch.exitReason),
          patch.exitReason ?? null,
          given(patch.error),
          jsonParameter(patch.error ?? null),
          given(patch.startedAt),
          patch.startedAt ?? null,
          given(patch.endedAt),
          patch.endedAt ?? null,
          this.connection.clock.now(),
        ],
      );
      if ((row?.changed ?? 0) > 0) return;
      throw row?.status ? runSettled(id, row.status) : runNotFound(id);
    }
    await this.connection.write('other', async (tx) => {
      await checkFencePg(tx, options.fence);
      // A terminal status is final (issue 33.3): only an unfinished run changes.
      const changed = await tx
        .update(runs)
        .set({ ...patch, updatedAt: this.connection.clock.now() })
        .where(and(eq(runs.id, id), inArray(runs.status, UNFINISHED)))
        .returning({ id: runs.id });
      if (changed.length > 0) return;
      const [row] = await tx.select({ status: runs.status }).from(runs).where(eq(runs.id, id));
      throw row ? runSettled(id, row.status) : runNotFound(id);
    });
  }

  async get(id: string): Promise<RunRecord | null> {
    const [row] = await this.statement<RunRecord>('hermes_run_by_id_v1', RUN_BY_ID, [id]);
    return row ?? null;
  }

  async list(query: { sessionId?: string; status?: RunStatus[]; limit?: number } = {}): Promise<RunRecord[]> {
    const list = runListQuery(runs, query);
    if (list === null) return [];
    const { conditions, limit } = list;
    return this.connection.query((db) =>
      db
        .select()
        .from(runs)
        .where(and(...conditions))
        .orderBy(desc(runs.createdAt), sql`${runs.id} COLLATE "C" DESC`)
        .limit(limit),
    );
  }

  async heartbeat(holder: string): Promise<void> {
    await this.connection.write('other', async (tx) => {
      await tx
        .update(runs)
        .set({ updatedAt: this.connection.clock.now() })
        .where(and(eq(runs.holder, holder), inArray(runs.status, UNFINISHED)));
    });
  }

  async reclaimHolders(
    isDead: (holder: string) => boolean,
    reason: { exitReason: string; message: string },
  ): Promise<{ holders: string[]; leases: number; runs: number }> {
    return this.connection.write('other', async (tx) => {
      const leaseHolders = await tx.selectDistinct({ holder: turnLeases.holder }).from(turnLeases);
      const runHolders = await tx
        .selectDistinct({ holder: runs.holder })
        .from(runs)
        .where(inArray(runs.status, UNFINISHED));
      const candidates = new Set([...leaseHolders, ...runHolders].map((row) => row.holder));
      const holders = [...candidates].filter((holder) => isDead(holder));
      if (holders.length === 0) return { holders, leases: 0, runs: 0 };
      const now = this.connection.clock.now();
      const leases = await tx
        .delete(turnLeases)
        .where(inArray(turnLeases.holder, holders))
        .returning({ sessionId: turnLeases.sessionId });
      const settled = await tx
        .update(runs)
        .set(reclaimedRunPatch(now, reason))
        .where(and(inArray(runs.holder, holders), inArray(runs.status, UNFINISHED)))
        .returning({ id: runs.id });
      return { holders, leases: leases.length, runs: settled.length };
    });
  }

  async markOrphaned(staleBefore: number): Promise<number> {
    return this.connection.write('other', async (tx) => {
      const now = this.connection.clock.now();
      const changed = await tx
        .update(runs)
        .set(orphanedRunPatch(now))
        .where(and(inArray(runs.status, UNFINISHED), lt(runs.updatedAt, staleBefore)))
        .returning({ id: runs.id });
      return changed.length;
    });
  }
}

/** The PostgreSQL statements of the turn lease: one upsert takes a free, expired or own lease. */
export class PgLeaseStatements implements LeaseStatements {
  /** @internal Built by the store that owns the connection. */
  constructor(private readonly connection: PgConnection) {}

  get clock(): Clock {
    return this.connection.clock;
  }

  get isClosed(): boolean {
    return this.connection.isClosed;
  }

  /** One statement: the take, the epoch bump and the session's generation (ADR 0056). */
  async tryAcquire(owner: LeaseOwner, ttlMs: number): Promise<LeaseAttempt> {
    const now = this.connection.clock.now();
    const result = await this.connection.withRetry('other', async () => {
      this.connection.assertOpen();
      return this.connection.pool.query<TakeLeaseRow>(takeLeaseQuery(owner, now, ttlMs));
    });
    const attempt = takeLeaseAttempt(result.rows[0], now);
    if (attempt === null) throw sessionNotFound(owner.sessionId);
    return attempt;
  }

  /** One prepared statement (issue 34.2). */
  async refresh(owner: LeaseOwner, ttlMs: number): Promise<string | null> {
    const result = await this.connection.withRetry('other', async () => {
      this.connection.assertOpen();
      return this.connection.pool.query<RefreshLeaseRow>(refreshLeaseQuery(owner, this.connection.clock.now() + ttlMs));
    });
    const row = result.rows[0];
    return row && row.refreshed > 0 ? null : (row?.holder ?? '');
  }

  /** One prepared statement (issue 34.2). */
  async release(owner: LeaseOwner): Promise<void> {
    await this.connection.withRetry('other', async () => {
      this.connection.assertOpen();
      return this.connection.pool.query(releaseLeaseQuery(owner));
    });
  }
}
