import { and, eq, sql } from 'drizzle-orm';
import { HermesError } from '../errors.js';
import type { Clock } from '../types.js';
import type { StoreConnection } from './connection.js';
import { sessions, turnLeases } from './schema.js';
import type { LeaseOptions, TurnFence, TurnLease } from './types.js';

/** Poll interval while another holder has the lease; jittered ±25% so waiting processes spread out. */
const POLL_INTERVAL_MS = 1_000;

function pollDelay(): number {
  return Math.round(POLL_INTERVAL_MS * (0.75 + Math.random() * 0.5));
}

/** What one attempt to take the lease found. */
export type LeaseAttempt =
  | { acquired: true; epoch: number; generation?: SessionGeneration | null }
  | { acquired: false; holder: string; expiresAt: number };

/** A session's highest active row id and rewind count (`SessionStore.generation`). */
export interface SessionGeneration {
  lastRowId: number;
  rewindCount: number;
}

/** A lease row's owner: the (holder, turn) pair, so a stale handle can never refresh a newer turn's lease. */
export interface LeaseOwner {
  sessionId: string;
  holder: string;
  turnId: string;
}

/**
 * The statements of one backend behind {@link acquireTurnLease}; each runs in its own write
 * transaction. The waiting, polling and expiry rules are the same for every backend.
 */
export interface LeaseStatements {
  readonly clock: Clock;
  readonly isClosed: boolean;
  /**
   * Takes the lease when it is free, expired or the same holder's, and adds one to the session's `turn_epoch` in the
   * same transaction (the new epoch is the taker's fencing token, ADR 0049); otherwise reports its holder.
   * @throws HermesError `session_not_found`.
   */
  tryAcquire(owner: LeaseOwner, ttlMs: number): Promise<LeaseAttempt>;
  /** Moves the owned lease's expiry to `ttlMs` from now; `null` when it did, else the current holder (`''` for none). */
  refresh(owner: LeaseOwner, ttlMs: number): Promise<string | null>;
  /** Deletes the owned lease, if it still is. */
  release(owner: LeaseOwner): Promise<void>;
}

/**
 * Acquires the turn lease of a session (spec/core.md §9.4.9): takes it when it is free, expired or
 * the same holder's; otherwise polls about once a second until it is free, `waitMs` passes
 * (`lease_timeout`) or the signal aborts (rejects with its reason).
 */
export async function acquireTurnLease(
  statements: LeaseStatements,
  sessionId: string,
  options: LeaseOptions,
): Promise<TurnLease> {
  const { clock } = statements;
  const owner: LeaseOwner = { sessionId, holder: options.holder, turnId: options.turnId };
  const started = clock.now();
  for (;;) {
    options.signal?.throwIfAborted();
    const outcome = await statements.tryAcquire(owner, options.ttlMs);
    if (outcome.acquired)
      return new StoreTurnLease(statements, owner, options.ttlMs, outcome.epoch, outcome.generation ?? null);
    const waitedMs = clock.now() - started;
    if (waitedMs >= options.waitMs) {
      throw new HermesError(
        'lease_timeout',
        `Session ${sessionId} is busy in another process (${outcome.holder}); waited ${waitedMs} ms`,
        { details: { sessionId, holder: outcome.holder, waitedMs } },
      );
    }
    options.onWait?.({ holder: outcome.holder, waitedMs });
    // Wake at the expiry when it comes sooner than the next poll, so a crashed holder's lease is taken over promptly.
    const untilExpiry = Math.max(0, outcome.expiresAt - clock.now()) + 1;
    await clock.sleep(Math.max(1, Math.min(pollDelay(), options.waitMs - waitedMs, untilExpiry)), options.signal);
  }
}

/**
 * The lease a session was created with (`getOrCreateSession` with `lease`): held, epoch 1, an empty session's
 * generation.
 */
export function bornTurnLease(statements: LeaseStatements, owner: LeaseOwner, ttlMs: number): TurnLease {
  return new StoreTurnLease(statements, owner, ttlMs, 1, { lastRowId: 0, rewindCount: 0 });
}

/** A held lease of any backend. */
class StoreTurnLease implements TurnLease {
  private readonly controller = new AbortController();
  private released = false;
  readonly fence: TurnFence;

  constructor(
    private readonly statements: LeaseStatements,
    private readonly owner: LeaseOwner,
    private readonly ttlMs: number,
    epoch: number,
    /** The session's generation read with the take, `null` when unknown. */
    readonly generation: SessionGeneration | null,
  ) {
    this.fence = { sessionId: owner.sessionId, epoch };
  }

  get lost(): AbortSignal {
    return this.controller.signal;
  }

  async refresh(): Promise<boolean> {
    if (this.released || this.controller.signal.aborted) return false;
    const current = await this.statements.refresh(this.owner, this.ttlMs);
    if (current === null) return true;
    // Another holder took it over after it expired, or it was removed: either way this turn no longer owns the session.
    const { sessionId } = this.owner;
    this.controller.abort(
      new HermesError('lease_lost', `The turn lease of session ${sessionId} was lost`, {
        details: { sessionId, holder: current === '' ? null : current },
      }),
    );
    return false;
  }

  markReleased(): void {
    this.released = true;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    if (this.statements.isClosed) return;
    await this.statements.release(this.owner);
  }
}

function prepareLeaseStatements(connection: StoreConnection) {
  const { db } = connection;
  const sessionId = sql.placeholder('sessionId');
  const owns = and(
    eq(turnLeases.sessionId, sessionId),
    eq(turnLeases.holder, sql.placeholder('holder')),
    eq(turnLeases.turnId, sql.placeholder('turnId')),
  );
  const lease = {
    holder: sql`${sql.placeholder('holder')}`,
    turnId: sql`${sql.placeholder('turnId')}`,
    acquiredAt: sql`${sql.placeholder('now')}`,
    expiresAt: sql`${sql.placeholder('expiresAt')}`,
  };
  return {
    session: db.select({ id: sessions.id }).from(sessions).where(eq(sessions.id, sessionId)).prepare(),
    current: db.select().from(turnLeases).where(eq(turnLeases.sessionId, sessionId)).prepare(),
    // A takeover is what fences the previous holder: every acquire moves the session's epoch on.
    bump: db
      .update(sessions)
      .set({ turnEpoch: sql`${sessions.turnEpoch} + 1` })
      .where(eq(sessions.id, sessionId))
      .returning({ epoch: sessions.turnEpoch })
      .prepare(),
    // The generation, read in the take's transaction so a turn needs no read of its own (ADR 0056).
    generation: connection.sqlite.prepare<[string, string], { rewindCount: number; lastRowId: number | null }>(
      `SELECT rewind_count AS rewindCount, (SELECT id FROM messages WHERE session_id = ? AND active = 1
        ORDER BY id DESC LIMIT 1) AS lastRowId FROM sessions WHERE id = ?`,
    ),
    take: db
      .insert(turnLeases)
      .values({ sessionId, ...lease })
      .onConflictDoUpdate({ target: turnLeases.sessionId, set: lease })
      .prepare(),
    extend: db
      .update(turnLeases)
      .set({ expiresAt: sql`${sql.placeholder('expiresAt')}` })
      .where(owns)
      .prepare(),
    holder: db
      .select({ holder: turnLeases.holder })
      .from(turnLeases)
      .where(eq(turnLeases.sessionId, sessionId))
      .prepare(),
    release: db.delete(turnLeases).where(owns).prepare(),
  };
}

/**
 * The SQLite statements of the turn lease, compiled once per store: a turn takes, refreshes and
 * releases its lease, and compiling these cost more than running them (issue 18).
 */
export class SqliteLeaseStatements implements LeaseStatements {
  private prepared: ReturnType<typeof prepareLeaseStatements> | undefined;

  /** @internal Built by the store that owns the connection. */
  constructor(private readonly connection: StoreConnection) {}

  private get statements(): ReturnType<typeof prepareLeaseStatements> {
    this.prepared ??= prepareLeaseStatements(this.connection);
    return this.prepared;
  }

  get clock(): Clock {
    return this.connection.clock;
  }

  get isClosed(): boolean {
    return this.connection.isClosed;
  }

  tryAcquire(owner: LeaseOwner, ttlMs: number): Promise<LeaseAttempt> {
    return this.connection.write('other', (): LeaseAttempt => {
      const now = this.connection.clock.now();
      const { sessionId } = owner;
      const statements = this.statements;
      if (!statements.session.get({ sessionId })) {
        throw new HermesError('session_not_found', `No session ${sessionId}`, { details: { sessionId } });
      }
      const current = statements.current.get({ sessionId });
      if (current && current.expiresAt > now && current.holder !== owner.holder) {
        return { acquired: false, holder: current.holder, expiresAt: current.expiresAt };
      }
      statements.take.run({ ...owner, now, expiresAt: now + ttlMs });
      const bumped = statements.bump.get({ sessionId });
      const generation = statements.generation.get(sessionId, sessionId);
      return {
        acquired: true,
        epoch: bumped?.epoch ?? 0,
        generation: generation ? { lastRowId: generation.lastRowId ?? 0, rewindCount: generation.rewindCount } : null,
      };
    });
  }

  /**
   * Inside the caller's write transaction: the lease of a session the transaction just created, and its epoch moved to
   * 1 as an acquire moves it (`getOrCreateSession` with `lease`).
   */
  takeForNewSession(owner: LeaseOwner, ttlMs: number): void {
    const now = this.connection.clock.now();
    this.statements.take.run({ ...owner, now, expiresAt: now + ttlMs });
    this.statements.bump.get({ sessionId: owner.sessionId });
  }

  refresh(owner: LeaseOwner, ttlMs: number): Promise<string | null> {
    return this.connection.write('other', () => {
      const statements = this.statements;
      const changed = statements.extend.run({ ...owner, expiresAt: this.connection.clock.now() + ttlMs });
      if (changed.changes > 0) return null;
      return statements.holder.get({ sessionId: owner.sessionId })?.holder ?? '';
    });
  }

  async release(owner: LeaseOwner): Promise<void> {
    await this.connection.write('other', () => {
      this.statements.release.run({ ...owner });
    });
  }
}
