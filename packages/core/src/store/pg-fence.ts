import { eq } from 'drizzle-orm';
import { leaseLost } from './fence.js';
import type { PgTransaction } from './pg-connection.js';
import { sessions as pgSessions } from './pg-schema.js';
import type { TurnFence } from './types.js';

// Apart from fence.ts so that a process on SQLite, which imports fence.ts, never loads the PostgreSQL
// schema and drizzle's pg-core with it (cold start, ADR 0057).

/**
 * The fence check of a PostgreSQL write transaction: call it first inside the transaction. It locks the session's
 * row (`FOR NO KEY UPDATE`, the lock an UPDATE of the row takes, so a later UPDATE in the same transaction needs no
 * upgrade), and an acquire, which updates `turn_epoch`, waits for this transaction to end: the check holds until the
 * commit. A no-op without a fence.
 * @throws HermesError `lease_lost` when the session's epoch is no longer `fence.epoch`.
 */
export async function checkFencePg(tx: PgTransaction, fence: TurnFence | undefined): Promise<void> {
  if (fence === undefined) return;
  const [row] = await tx
    .select({ epoch: pgSessions.turnEpoch })
    .from(pgSessions)
    .where(eq(pgSessions.id, fence.sessionId))
    .for('no key update');
  const current = row?.epoch ?? null;
  if (current !== fence.epoch) throw leaseLost(fence, current);
}
