import { and, eq } from 'drizzle-orm';
import { HermesError } from '../errors.js';
import type { StoreConnection } from './connection.js';
import { sessions, turnLeases } from './schema.js';
import type { LeaseOptions, TurnLease } from './types.js';

/** Poll interval while another holder has the lease; jittered ±25% so waiting processes spread out. */
const POLL_INTERVAL_MS = 1_000;

function pollDelay(): number {
  return Math.round(POLL_INTERVAL_MS * (0.75 + Math.random() * 0.5));
}

type AttemptOutcome = { acquired: true } | { acquired: false; holder: string; expiresAt: number };

/**
 * Acquires the turn lease of a session (spec/core.md §9.4.9): inserts it, or takes it over when the
 * current one has expired or belongs to the same holder; otherwise polls about once a second until
 * it is free, `waitMs` passes (`lease_timeout`) or the signal aborts (rejects with its reason).
 */
export async function acquireTurnLease(
  connection: StoreConnection,
  sessionId: string,
  options: LeaseOptions,
): Promise<TurnLease> {
  const { clock } = connection;
  const started = clock.now();
  for (;;) {
    options.signal?.throwIfAborted();
    const outcome = await connection.write('other', (): AttemptOutcome => {
      const { db } = connection;
      const now = clock.now();
      const session = db.select({ id: sessions.id }).from(sessions).where(eq(sessions.id, sessionId)).get();
      if (!session) throw new HermesError('session_not_found', `No session ${sessionId}`, { details: { sessionId } });
      const current = db.select().from(turnLeases).where(eq(turnLeases.sessionId, sessionId)).get();
      if (current && current.expiresAt > now && current.holder !== options.holder) {
        return { acquired: false, holder: current.holder, expiresAt: current.expiresAt };
      }
      const lease = { holder: options.holder, turnId: options.turnId, acquiredAt: now, expiresAt: now + options.ttlMs };
      db.insert(turnLeases)
        .values({ sessionId, ...lease })
        .onConflictDoUpdate({ target: turnLeases.sessionId, set: lease })
        .run();
      return { acquired: true };
    });
    if (outcome.acquired) return new SqliteTurnLease(connection, sessionId, options);
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

/** A held lease. Ownership is the (holder, turn) pair, so a stale handle can never refresh a newer turn's lease. */
class SqliteTurnLease implements TurnLease {
  private readonly controller = new AbortController();
  private released = false;

  constructor(
    private readonly connection: StoreConnection,
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
    const current = await this.connection.write('other', () => {
      const { db } = this.connection;
      const changed = db
        .update(turnLeases)
        .set({ expiresAt: clock.now() + this.options.ttlMs })
        .where(this.ownsRow())
        .run();
      if (changed.changes > 0) return null;
      const row = db
        .select({ holder: turnLeases.holder })
        .from(turnLeases)
        .where(eq(turnLeases.sessionId, this.sessionId))
        .get();
      return row?.holder ?? '';
    });
    if (current === null) return true;
    // Another holder took it over after it expired, or it was removed: either way this turn no longer owns the session.
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
    await this.connection.write('other', () => {
      this.connection.db.delete(turnLeases).where(this.ownsRow()).run();
    });
  }
}
