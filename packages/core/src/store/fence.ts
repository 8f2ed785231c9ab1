import { HermesError } from '../errors.js';
import type { StoreDatabase } from './connection.js';
import type { TurnFence } from './types.js';

export type { TurnFence, WriteOptions } from './types.js';

/** The error of a write refused because the session's lease epoch moved past the writer's (or the session is gone). */
export function leaseLost(fence: TurnFence, current: number | null): HermesError {
  return new HermesError(
    'lease_lost',
    `The turn lease of session ${fence.sessionId} was taken over (epoch ${fence.epoch}, now ${current ?? 'none'}); the write was refused`,
    { details: { sessionId: fence.sessionId, epoch: fence.epoch, currentEpoch: current } },
  );
}

/** True when `error` is a write refused by {@link TurnFence} (a `lease_lost` HermesError). */
export function isLeaseLost(error: unknown): boolean {
  return HermesError.isInstance(error) && error.code === 'lease_lost';
}

const sqliteChecks = new WeakMap<object, { get(sessionId: string): unknown }>();

/**
 * The fence check of a SQLite write transaction: call it first inside the transaction's callback (SQLite writes are
 * serialized, so nothing can take the lease between the check and the write). A no-op without a fence.
 * @throws HermesError `lease_lost` when the session's epoch is no longer `fence.epoch`.
 */
export function checkFenceSqlite(db: StoreDatabase, fence: TurnFence | undefined): void {
  if (fence === undefined) return;
  let statement = sqliteChecks.get(db);
  if (statement === undefined) {
    // A raw statement that plucks the one column: every fenced commit of a turn runs it, and the ORM's row mapping
    // around it cost more than the lookup (issue 34).
    statement = db.$client.prepare('SELECT turn_epoch FROM sessions WHERE id = ?').pluck();
    sqliteChecks.set(db, statement);
  }
  const found = statement.get(fence.sessionId);
  const current = typeof found === 'number' ? found : null;
  if (current !== fence.epoch) throw leaseLost(fence, current);
}
