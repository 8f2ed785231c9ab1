import { and, type Column, desc, eq, inArray, lt, type SQL, sql } from 'drizzle-orm';
import { HermesError } from '../errors.js';
import { newId } from '../ids.js';
import type { JsonValue } from '../types.js';
import type { StoreConnection } from './connection.js';
import { checkFenceSqlite } from './fence.js';
import { runs, sessions, turnLeases } from './schema.js';
import { sessionNotFound } from './store-common.js';
import type { RunRecord, RunStatus, RunStore, WriteOptions } from './types.js';

/** How long an idempotency key returns the run it created (spec/core.md §9.4.12). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Statuses of a run that has not ended. */
export const UNFINISHED: RunStatus[] = ['queued', 'running', 'stopping'];

/** What `RunStore.create` takes. */
export interface NewRun {
  sessionId: string;
  input: JsonValue;
  idempotencyKey?: string | null;
  holder: string;
  id?: string;
}

/** The record of a new queued run. */
export function newRunRecord(input: NewRun, now: number): RunRecord {
  return {
    id: input.id ?? newId('run_', 24),
    sessionId: input.sessionId,
    turnId: null,
    status: 'queued',
    idempotencyKey: input.idempotencyKey ?? null,
    holder: input.holder,
    input: input.input,
    result: null,
    exitReason: null,
    error: null,
    createdAt: now,
    startedAt: null,
    endedAt: null,
    updatedAt: now,
  };
}

/** The update that ends a run whose process stopped heartbeating. */
export function orphanedRunPatch(now: number) {
  return {
    status: 'failed' as const,
    error: { code: 'orphaned', message: 'The process running this run stopped before it finished' },
    endedAt: now,
    updatedAt: now,
  };
}

/** The update that ends an unfinished run of a dead holder reclaimed at start-up, with the reason it gives. */
export function reclaimedRunPatch(now: number, reason: { exitReason: string; message: string }) {
  return {
    ...orphanedRunPatch(now),
    exitReason: reason.exitReason,
    error: { code: 'orphaned', message: reason.message },
  };
}

export function runNotFound(id: string): HermesError {
  return new HermesError('run_not_found', `No run ${id}`, { details: { runId: id } });
}

/** The error of an update of a run whose status is already terminal: a settled run never changes (issue 33.3). */
export function runSettled(id: string, status: RunStatus): HermesError {
  return new HermesError('run_settled', `Run ${id} already ended (${status}); its status cannot change`, {
    details: { runId: id, status },
  });
}

/** The conditions and limit of a run list over either dialect's `runs` columns; `null` when nothing can match. */
export function runListQuery(
  runs: { sessionId: Column; status: Column },
  query: { sessionId?: string; status?: RunStatus[]; limit?: number },
): { conditions: SQL[]; limit: number } | null {
  const conditions: SQL[] = [];
  if (query.sessionId !== undefined) conditions.push(eq(runs.sessionId, query.sessionId));
  if (query.status !== undefined) {
    if (query.status.length === 0) return null;
    conditions.push(inArray(runs.status, query.status));
  }
  return { conditions, limit: Math.max(1, Math.min(query.limit ?? 100, 1_000)) };
}

function prepareRunStatements(connection: StoreConnection) {
  const { db } = connection;
  const placeholders = (names: Array<keyof RunRecord>) =>
    Object.fromEntries(names.map((name) => [name, sql.placeholder(name)])) as never;
  return {
    session: db
      .select({ id: sessions.id })
      .from(sessions)
      .where(eq(sessions.id, sql.placeholder('sessionId')))
      .prepare(),
    // The fields a new run has; the others start NULL (a bound null would be encoded as JSON `null`).
    insert: db
      .insert(runs)
      .values(
        placeholders(['id', 'sessionId', 'status', 'idempotencyKey', 'holder', 'input', 'createdAt', 'updatedAt']),
      )
      .prepare(),
  };
}

/** Durable run records of the runs API (spec/core.md §9.2.5, §9.4.12). */
export class SqliteRunStore implements RunStore {
  private prepared: ReturnType<typeof prepareRunStatements> | undefined;
  /** Updates prepared per set of changed fields (a null value is written as SQL NULL, not bound). */
  private readonly updates = new Map<string, { run(values: Record<string, unknown>): { changes: number } }>();

  /** @internal Built by the store that owns the connection. */
  constructor(private readonly connection: StoreConnection) {}

  private get statements(): ReturnType<typeof prepareRunStatements> {
    this.prepared ??= prepareRunStatements(this.connection);
    return this.prepared;
  }

  /** The update of the fields `values` sets, compiled once per shape: runs change state several times each. */
  private updateStatement(values: Record<string, unknown>) {
    const fields = Object.keys(values).filter((field) => values[field] !== undefined);
    const shape = fields.map((field) => (values[field] === null ? `${field}=null` : field)).join(',');
    let statement = this.updates.get(shape);
    if (!statement) {
      const set = Object.fromEntries(
        fields.map((field) => [field, values[field] === null ? null : sql.placeholder(field)]),
      ) as Partial<Record<keyof typeof runs.$inferInsert, unknown>>;
      statement = this.connection.db
        .update(runs)
        .set(set as never)
        // A terminal status is final (issue 33.3): only an unfinished run changes.
        .where(and(eq(runs.id, sql.placeholder('id')), inArray(runs.status, UNFINISHED)))
        .prepare();
      this.updates.set(shape, statement);
    }
    return statement;
  }

  /**
   * Creates a queued run. A key used within the last 24 hours returns that run with
   * `existing: true`; an older use of the key is released so it can name the new run.
   */
  async findByIdempotencyKey(key: string, withinMs: number = IDEMPOTENCY_WINDOW_MS): Promise<RunRecord | null> {
    return this.connection.read(() => {
      const found = this.connection.db.select().from(runs).where(eq(runs.idempotencyKey, key)).get();
      if (!found || found.createdAt < this.connection.clock.now() - withinMs) return null;
      return found as RunRecord;
    });
  }

  async create(input: NewRun): Promise<RunRecord & { existing: boolean }> {
    return this.connection.write('other', () => {
      const { db, clock } = this.connection;
      const now = clock.now();
      const key = input.idempotencyKey ?? null;
      if (key !== null) {
        const previous = db.select().from(runs).where(eq(runs.idempotencyKey, key)).get();
        if (previous && previous.createdAt >= now - IDEMPOTENCY_WINDOW_MS) return { ...previous, existing: true };
        if (previous) db.update(runs).set({ idempotencyKey: null }).where(eq(runs.id, previous.id)).run();
      }
      const statements = this.statements;
      if (!statements.session.get({ sessionId: input.sessionId })) throw sessionNotFound(input.sessionId);
      const record = newRunRecord(input, now);
      // The prepared insert encodes the input as JSON, so a JSON null input is stored as the text `null`.
      statements.insert.run({ ...record });
      return { ...record, existing: false };
    });
  }

  /**
   * @internal Writes the queued row of a run born with its session, inside the session store's write transaction
   * (`getOrCreateSession` with `run`, ADR 0088).
   */
  insertBorn(input: NewRun): void {
    // The prepared insert encodes the input as JSON, as `create` does.
    this.statements.insert.run({ ...newRunRecord(input, this.connection.clock.now()) });
  }

  async update(
    id: string,
    patch: Partial<Pick<RunRecord, 'turnId' | 'status' | 'result' | 'exitReason' | 'error' | 'startedAt' | 'endedAt'>>,
    options: WriteOptions = {},
  ): Promise<void> {
    await this.connection.write('other', () => {
      checkFenceSqlite(this.connection.db, options.fence);
      const values = { ...patch, updatedAt: this.connection.clock.now() };
      const changed = this.updateStatement(values).run({ ...values, id });
      if (changed.changes > 0) return;
      const row = this.connection.db.select({ status: runs.status }).from(runs).where(eq(runs.id, id)).get();
      throw row ? runSettled(id, row.status) : runNotFound(id);
    });
  }

  async get(id: string): Promise<RunRecord | null> {
    return this.connection.read(() => this.connection.db.select().from(runs).where(eq(runs.id, id)).get() ?? null);
  }

  /** Newest first; at most `limit` (default 100). */
  async list(query: { sessionId?: string; status?: RunStatus[]; limit?: number } = {}): Promise<RunRecord[]> {
    const list = runListQuery(runs, query);
    if (list === null) return [];
    const { conditions, limit } = list;
    return this.connection.read(() =>
      this.connection.db
        .select()
        .from(runs)
        .where(and(...conditions))
        .orderBy(desc(runs.createdAt), desc(runs.id))
        .limit(limit)
        .all(),
    );
  }

  async heartbeat(holder: string): Promise<void> {
    await this.connection.write('other', () => {
      this.connection.db
        .update(runs)
        .set({ updatedAt: this.connection.clock.now() })
        .where(and(eq(runs.holder, holder), inArray(runs.status, UNFINISHED)))
        .run();
    });
  }

  async reclaimHolders(
    isDead: (holder: string) => boolean,
    reason: { exitReason: string; message: string },
  ): Promise<{ holders: string[]; leases: number; runs: number }> {
    return this.connection.write('other', () => {
      const { db } = this.connection;
      const candidates = new Set([
        ...db
          .selectDistinct({ holder: turnLeases.holder })
          .from(turnLeases)
          .all()
          .map((row) => row.holder),
        ...db
          .selectDistinct({ holder: runs.holder })
          .from(runs)
          .where(inArray(runs.status, UNFINISHED))
          .all()
          .map((row) => row.holder),
      ]);
      const holders = [...candidates].filter((holder) => isDead(holder));
      if (holders.length === 0) return { holders, leases: 0, runs: 0 };
      const now = this.connection.clock.now();
      const leases = db.delete(turnLeases).where(inArray(turnLeases.holder, holders)).run().changes;
      const settled = db
        .update(runs)
        .set(reclaimedRunPatch(now, reason))
        .where(and(inArray(runs.holder, holders), inArray(runs.status, UNFINISHED)))
        .run().changes;
      return { holders, leases, runs: settled };
    });
  }

  async markOrphaned(staleBefore: number): Promise<number> {
    return this.connection.write('other', () => {
      const now = this.connection.clock.now();
      return this.connection.db
        .update(runs)
        .set(orphanedRunPatch(now))
        .where(and(inArray(runs.status, UNFINISHED), lt(runs.updatedAt, staleBefore)))
        .run().changes;
    });
  }
}
