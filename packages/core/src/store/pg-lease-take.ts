/**
 * The take of a turn lease on PostgreSQL as one statement (ADR 0056): the upsert that takes a free, expired or own
 * lease, the epoch bump that fences the previous holder (ADR 0049) and the session's generation, which the turn reads
 * next to know whether another process changed the transcript. A drizzle transaction of the same took BEGIN, three
 * statements and COMMIT, and the generation a transaction of its own: six round trips where this is one.
 */
import type { LeaseAttempt, LeaseOwner } from './turn-lease.js';

/**
 * `found` is the snapshot's session row; `bumped` re-reads the row's newest version (an UPDATE waits for and then
 * follows a concurrent writer), so when their counters differ the snapshot missed a commit (the previous holder's last
 * one, say) and the generation is reported unknown instead of stale.
 */
const TAKE_LEASE_SQL = `
WITH found AS (
  SELECT id, message_count, rewind_count FROM sessions WHERE id = $1::text
),
taken AS (
  INSERT INTO turn_leases (session_id, holder, turn_id, acquired_at, expires_at)
  SELECT id, $2::text, $3::text, $4::bigint, $5::bigint FROM found
  ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, turn_id = excluded.turn_id,
    acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
  WHERE turn_leases.expires_at <= $4::bigint OR turn_leases.holder = $2::text
  RETURNING session_id
),
bumped AS (
  UPDATE sessions SET turn_epoch = sessions.turn_epoch + 1 FROM taken
  WHERE sessions.id = taken.session_id
  RETURNING sessions.turn_epoch, sessions.message_count, sessions.rewind_count
)
SELECT (SELECT count(*) FROM found)::integer AS found,
  (SELECT turn_epoch FROM bumped) AS epoch,
  (SELECT bumped.message_count = found.message_count AND bumped.rewind_count = found.rewind_count
    FROM bumped, found) AS current,
  (SELECT rewind_count FROM bumped) AS rewind_count,
  (SELECT m.id FROM messages m WHERE m.session_id = $1::text AND m.active ORDER BY m.id DESC LIMIT 1) AS last_row_id,
  (SELECT holder FROM turn_leases WHERE session_id = $1::text) AS holder,
  (SELECT expires_at FROM turn_leases WHERE session_id = $1::text) AS expires_at`;

/** The statement's row. */
export interface TakeLeaseRow {
  found: number;
  epoch: number | null;
  current: boolean | null;
  rewind_count: number | null;
  last_row_id: string | number | null;
  holder: string | null;
  expires_at: string | number | null;
}

/** The query config of one take (a prepared statement, once per pooled connection). */
export function takeLeaseQuery(owner: LeaseOwner, now: number, ttlMs: number) {
  return {
    name: 'hermes_take_lease_v1',
    text: TAKE_LEASE_SQL,
    values: [owner.sessionId, owner.holder, owner.turnId, now, now + ttlMs],
  };
}

/** What the take found; `null` when the session does not exist. */
export function takeLeaseAttempt(row: TakeLeaseRow | undefined, now: number): LeaseAttempt | null {
  if (!row || row.found === 0) return null;
  if (row.epoch !== null) {
    const generation =
      row.current === true ? { lastRowId: Number(row.last_row_id ?? 0), rewindCount: row.rewind_count ?? 0 } : null;
    return { acquired: true, epoch: row.epoch, generation };
  }
  // A lease row the snapshot does not show yet (its writer committed meanwhile) reads as expiring now: the caller polls
  // again at once and sees it then.
  return {
    acquired: false,
    holder: row.holder ?? '',
    expiresAt: row.expires_at === null ? now : Number(row.expires_at),
  };
}

/**
 * The refresh of an owned lease as one statement: `refreshed` is 1 when the owner still held it, else `holder` is the
 * lease's current holder (null for none). A drizzle transaction of the same took BEGIN, the update, a read and COMMIT.
 */
const REFRESH_LEASE_SQL = `
WITH refreshed AS (
  UPDATE turn_leases SET expires_at = $4::bigint
  WHERE session_id = $1::text AND holder = $2::text AND turn_id = $3::text
  RETURNING holder
)
SELECT (SELECT count(*) FROM refreshed)::integer AS refreshed,
  (SELECT holder FROM turn_leases WHERE session_id = $1::text) AS holder`;

/** The statement's row. */
export interface RefreshLeaseRow {
  refreshed: number;
  holder: string | null;
}

/** The query config of one refresh (a prepared statement). */
export function refreshLeaseQuery(owner: LeaseOwner, expiresAt: number) {
  return {
    name: 'hermes_refresh_lease_v1',
    text: REFRESH_LEASE_SQL,
    values: [owner.sessionId, owner.holder, owner.turnId, expiresAt],
  };
}

/** The query config of one release: the owned lease's deletion, if it still is owned (a prepared statement). */
export function releaseLeaseQuery(owner: LeaseOwner) {
  return {
    name: 'hermes_release_lease_v1',
    text: 'DELETE FROM turn_leases WHERE session_id = $1::text AND holder = $2::text AND turn_id = $3::text',
    values: [owner.sessionId, owner.holder, owner.turnId],
  };
}
