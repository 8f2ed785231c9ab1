import { and, count, desc, eq, inArray, lt, lte, or, type SQL, sql } from 'drizzle-orm';
import { HermesError } from '../errors.js';
import { newId } from '../ids.js';
import type { JsonValue } from '../types.js';
import type { PgConnection, PgTransaction } from './pg-connection.js';
import { responses, runs, sessions, turnLeases } from './pg-schema.js';
import { IDEMPOTENCY_WINDOW_MS } from './run-store.js';
import type {
  LeaseOptions,
  ResponseRecord,
  ResponseStore,
  RunRecord,
  RunStatus,
  RunStore,
  TurnLease,
} from './types.js';

const UNFINISHED: RunStatus[] = ['queued', 'running', 'stopping'];

async function requireSessionExists(tx: PgTransaction, sessionId: string): Promise<void> {
  const [session] = await tx.select({ id: sessions.id }).from(sessions).where(eq(sessions.id, sessionId));
  if (!session) throw new HermesError('session_not_found', `No session ${sessionId}`, { details: { sessionId } });
}

/** A JSON value for a NOT NULL jsonb column: drizzle would write a JS null as SQL NULL. */
function jsonOrNullText(value: JsonValue): JsonValue | SQL {
  return value === null ? sql`'null'::jsonb` : value;
}

/** Stored Responses API objects on PostgreSQL (spec/core.md §9.2.4, §9.4.12). */
export class PgResponseStore implements ResponseStore {
  constructor(private readonly connection: PgConnection) {}

  async put(record: ResponseRecord): Promise<void> {
    const { id, ...rest } = record;
    const fields = { ...rest, request: jsonOrNullText(rest.request) };
    await this.connection.write('other', async (tx) => {
      await requireSessionExists(tx, record.sessionId);
      await tx
        .insert(responses)
        .values({ id, ...fields })
        .onConflictDoUpdate({ target: responses.id, set: fields });
    });
  }

  async get(id: string): Promise<ResponseRecord | null> {
    this.connection.assertOpen();
    const [row] = await this.connection.db.select().from(responses).where(eq(responses.id, id));
    return row ?? null;
  }

  async count(): Promise<number> {
    this.connection.assertOpen();
    const [row] = await this.connection.db.select({ value: count() }).from(responses);
    return Number(row?.value ?? 0);
  }

  async delete(id: string): Promise<boolean> {
    return this.connection.write('other', async (tx) => {
      const deleted = await tx.delete(responses).where(eq(responses.id, id)).returning({ id: responses.id });
      return deleted.length > 0;
    });
  }

  async latestForConversation(name: string): Promise<ResponseRecord | null> {
    this.connection.assertOpen();
    const [row] = await this.connection.db
      .select()
      .from(responses)
      .where(eq(responses.conversation, name))
      .orderBy(desc(responses.createdAt), sql`${responses.id} COLLATE "C" DESC`)
      .limit(1);
    return row ?? null;
  }

  async prune(olderThanMs: number): Promise<number> {
    return this.connection.write('other', async (tx) => {
      const cutoff = this.connection.clock.now() - olderThanMs;
      const deleted = await tx.delete(responses).where(lt(responses.createdAt, cutoff)).returning({ id: responses.id });
      return deleted.length;
    });
  }
}

/** Durable run records on PostgreSQL (spec/core.md §9.2.5, §9.4.12). */
export class PgRunStore implements RunStore {
  constructor(private readonly connection: PgConnection) {}

  async findByIdempotencyKey(key: string, withinMs: number = IDEMPOTENCY_WINDOW_MS): Promise<RunRecord | null> {
    this.connection.assertOpen();
    const [found] = await this.connection.db.select().from(runs).where(eq(runs.idempotencyKey, key));
    if (!found || found.createdAt < this.connection.clock.now() - withinMs) return null;
    return found;
  }

  /**
   * Creates a queued run. A key used within the last 24 hours returns that run with
   * `existing: true`; two instances racing on one key meet at its unique index and the retry
   * returns the winner's run.
   */
  async create(input: {
    sessionId: string;
    input: JsonValue;
    idempotencyKey?: string | null;
    holder: string;
    id?: string;
  }): Promise<RunRecord & { existing: boolean }> {
    return this.connection.write('other', async (tx) => {
      const now = this.connection.clock.now();
      const key = input.idempotencyKey ?? null;
      if (key !== null) {
        const [previous] = await tx.select().from(runs).where(eq(runs.idempotencyKey, key)).for('update');
        if (previous && previous.createdAt >= now - IDEMPOTENCY_WINDOW_MS) return { ...previous, existing: true };
        if (previous) await tx.update(runs).set({ idempotencyKey: null }).where(eq(runs.id, previous.id));
      }
      await requireSessionExists(tx, input.sessionId);
      const record: RunRecord = {
        id: input.id ?? newId('run_', 24),
        sessionId: input.sessionId,
        turnId: null,
        status: 'queued',
        idempotencyKey: key,
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
      await tx.insert(runs).values({ ...record, input: jsonOrNullText(record.input) });
      return { ...record, existing: false };
    });
  }

  async update(
    id: string,
    patch: Partial<Pick<RunRecord, 'turnId' | 'status' | 'result' | 'exitReason' | 'error' | 'startedAt' | 'endedAt'>>,
  ): Promise<void> {
    await this.connection.write('other', async (tx) => {
      const changed = await tx
        .update(runs)
        .set({ ...patch, updatedAt: this.connection.clock.now() })
        .where(eq(runs.id, id))
        .returning({ id: runs.id });
      if (changed.length === 0) throw new HermesError('run_not_found', `No run ${id}`, { details: { runId: id } });
    });
  }

  async get(id: string): Promise<RunRecord | null> {
    this.connection.assertOpen();
    const [row] = await this.connection.db.select().from(runs).where(eq(runs.id, id));
    return row ?? null;
  }

  async list(query: { sessionId?: string; status?: RunStatus[]; limit?: number } = {}): Promise<RunRecord[]> {
    const conditions: SQL[] = [];
    if (query.sessionId !== undefined) conditions.push(eq(runs.sessionId, query.sessionId));
    if (query.status !== undefined) {
      if (query.status.length === 0) return [];
      conditions.push(inArray(runs.status, query.status));
    }
    const limit = Math.max(1, Math.min(query.limit ?? 100, 1_000));
    this.connection.assertOpen();
    return this.connection.db
      .select()
      .from(runs)
      .where(and(...conditions))
      .orderBy(desc(runs.createdAt), sql`${runs.id} COLLATE "C" DESC`)
      .limit(limit);
  }

  async heartbeat(holder: string): Promise<void> {
    await this.connection.write('other', async (tx) => {
      await tx
        .update(runs)
        .set({ updatedAt: this.connection.clock.now() })
        .where(and(eq(runs.holder, holder), inArray(runs.status, UNFINISHED)));
    });
  }

  async markOrphaned(staleBefore: number): Promise<number> {
    return this.connection.write('other', async (tx) => {
      const now = this.connection.clock.now();
      const changed = await tx
        .update(runs)
        .set({
          status: 'failed',
          error: { code: 'orphaned', message: 'The process running this run stopped before it finished' },
          endedAt: now,
          updatedAt: now,
        })
        .where(and(inArray(runs.status, UNFINISHED), lt(runs.updatedAt, staleBefore)))
        .returning({ id: runs.id });
      return changed.length;
    });
  }
}

const POLL_INTERVAL_MS = 1_000;

function pollDelay(): number {
  return Math.round(POLL_INTERVAL_MS * (0.75 + Math.random() * 0.5));
}

type AttemptOutcome = { acquired: true } | { acquired: false; holder: string; expiresAt: number };

/**
 * Acquires the turn lease of a session (spec/core.md §9.4.9) in one statement: the insert takes a
 * free row, or takes over an expired one or one of the same holder; any other holder keeps it and
 * the caller polls until it is free, `waitMs` passes (`lease_timeout`) or the signal aborts.
 */
export async function acquirePgTurnLease(
  connection: PgConnection,
  sessionId: string,
  options: LeaseOptions,
): Promise<TurnLease> {
  const { clock } = connection;
  const started = clock.now();
  for (;;) {
    options.signal?.throwIfAborted();
    const outcome = await connection.write('other', async (tx): Promise<AttemptOutcome> => {
      const now = clock.now();
      await requireSessionExists(tx, sessionId);
      const lease = { holder: options.holder, turnId: options.turnId, acquiredAt: now, expiresAt: now + options.ttlMs };
      const taken = await tx
        .insert(turnLeases)
        .values({ sessionId, ...lease })
        .onConflictDoUpdate({
          target: turnLeases.sessionId,
          set: lease,
          setWhere: or(lte(turnLeases.expiresAt, now), eq(turnLeases.holder, options.holder)),
        })
        .returning({ holder: turnLeases.holder });
      if (taken.length > 0) return { acquired: true };
      const [current] = await tx
        .select({ holder: turnLeases.holder, expiresAt: turnLeases.expiresAt })
        .from(turnLeases)
        .where(eq(turnLeases.sessionId, sessionId));
      return { acquired: false, holder: current?.holder ?? '', expiresAt: current?.expiresAt ?? now };
    });
    if (outcome.acquired) return new PgTurnLease(connection, sessionId, options);
    const waitedMs = clock.now() - started;
    if (waitedMs >= options.waitMs) {
      throw new HermesError(
        'lease_timeout',
        `Session ${sessionId} is busy in another process (${outcome.holder}); waited ${waitedMs} ms`,
        { details: { sessionId, holder: outcome.holder, waitedMs } },
      );
    }
    options.onWait?.({ holder: outcome.holder, waitedMs });
    const untilExpiry = Math.max(0, outcome.expiresAt - clock.now()) + 1;
    await clock.sleep(Math.max(1, Math.min(pollDelay(), options.waitMs - waitedMs, untilExpiry)), options.signal);
  }
}

/** A held lease; ownership is the (holder, turn) pair, as in the SQLite store. */
class PgTurnLease implements TurnLease {
  private readonly controller = new AbortController();
  private released = false;

  constructor(
    private readonly connection: PgConnection,
    private readonly sessionId: string,
    private readonly options: LeaseOptions,
  ) {}

  get lost(): AbortSignal {
    return this.controller.signal;
  }

  private ownsRow() {
    return and(
      eq(turnLeases.sessionId, this.sessionId),
      eq(turnLeases.holder, this.options.holder),
      eq(turnLeases.turnId, this.options.turnId),
    );
  }

  async refresh(): Promise<boolean> {
    if (this.released || this.controller.signal.aborted) return false;
    const { clock } = this.connection;
    const current = await this.connection.write('other', async (tx) => {
      const changed = await tx
        .update(turnLeases)
        .set({ expiresAt: clock.now() + this.options.ttlMs })
        .where(this.ownsRow())
        .returning({ holder: turnLeases.holder });
      if (changed.length > 0) return null;
      const [row] = await tx
        .select({ holder: turnLeases.holder })
        .from(turnLeases)
        .where(eq(turnLeases.sessionId, this.sessionId));
      return row?.holder ?? '';
    });
    if (current === null) return true;
    this.controller.abort(
      new HermesError('lease_lost', `The turn lease of session ${this.sessionId} was lost`, {
        details: { sessionId: this.sessionId, holder: current === '' ? null : current },
      }),
    );
    return false;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    if (this.connection.isClosed) return;
    await this.connection.write('other', async (tx) => {
      await tx.delete(turnLeases).where(this.ownsRow());
    });
  }
}
