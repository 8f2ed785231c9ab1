import type { StoredMessage } from '@hermes/core';
import type { LiveSession } from '../live-session.js';
import { isUserOriginated, lineageRows } from '../projection.js';
import { ErrorCode } from '../wire/index.js';
import { fail } from './context.js';

/** A validated truncation request (§7.1). */
export interface TruncationTarget {
  rowId: number | null;
  messageId: string | null;
  ordinal: number | null;
  confirmEmpty: boolean;
  rebind: number[] | null;
}

const present = (params: Record<string, unknown>, key: string) =>
  key in params && params[key] !== null && params[key] !== undefined;
const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value);

/** Checks T1–T3 (§7.1). Returns null when no target is present. */
export function checkTruncation(params: Record<string, unknown>): TruncationTarget | null {
  const hasRow = present(params, 'truncate_before_row_id');
  const hasMessage = present(params, 'truncate_before_message_id');
  const hasOrdinal = present(params, 'truncate_before_user_ordinal');
  const confirmed = params.confirm_truncate === true;
  if (confirmed && !hasRow && !hasMessage && !hasOrdinal)
    fail(
      ErrorCode.malformedTruncation,
      'confirm_truncate requires truncate_before_row_id, truncate_before_message_id or truncate_before_user_ordinal',
    );
  if (hasRow && !isInteger(params.truncate_before_row_id))
    fail(ErrorCode.malformedTruncation, 'truncate_before_row_id must be an integer');
  if (hasOrdinal && !isInteger(params.truncate_before_user_ordinal))
    fail(ErrorCode.malformedTruncation, 'truncate_before_user_ordinal must be an integer');
  if (hasMessage && (typeof params.truncate_before_message_id !== 'string' || params.truncate_before_message_id === ''))
    fail(ErrorCode.malformedTruncation, 'truncate_before_message_id must be a string');
  const rebind = params.rebind_survivor_row_ids;
  if (present(params, 'rebind_survivor_row_ids') && !(Array.isArray(rebind) && rebind.every(isInteger)))
    fail(ErrorCode.malformedTruncation, 'rebind_survivor_row_ids must be a list of integers');
  if (!hasRow && !hasMessage && !hasOrdinal) return null;
  if (!confirmed)
    fail(
      ErrorCode.truncationWithoutConsent,
      'truncation parameters require confirm_truncate=true; nothing was changed',
    );
  return {
    rowId: hasRow ? (params.truncate_before_row_id as number) : null,
    messageId: hasMessage ? (params.truncate_before_message_id as string) : null,
    ordinal: hasOrdinal ? (params.truncate_before_user_ordinal as number) : null,
    confirmEmpty: params.confirm_empty_truncate === true,
    rebind: present(params, 'rebind_survivor_row_ids') ? (rebind as number[]) : null,
  };
}

/** Resolves the target (§7.2) and applies the cut (§7.3). Returns the survivor fields of §7.4. */
export async function rewindSession(session: LiveSession, target: TruncationTarget): Promise<Record<string, unknown>> {
  const agent = session.agent;
  const rows = await agent.history();
  const users = rows.filter(isUserOriginated);
  const lineageUsers = agent.persisted
    ? lineageRows(await agent.history({ includeInactive: true })).filter(isUserOriginated)
    : users;
  const prefix = Math.max(0, lineageUsers.length - users.length);
  const stale = () => {
    let segment: number | null = null;
    if (target.ordinal !== null && target.ordinal >= 0 && target.ordinal < lineageUsers.length) {
      const lineageRow = lineageUsers[target.ordinal];
      segment = lineageRow ? users.findIndex((row) => row.rowId === lineageRow.rowId) : null;
    }
    return fail(ErrorCode.staleTarget, 'target user message is no longer in session history', {
      user_turn_count: users.length,
      ordinal: target.ordinal,
      segment_ordinal: segment,
      prefix_user_count: prefix,
    });
  };
  let found: StoredMessage | undefined;
  if (target.rowId !== null) {
    found = target.rowId > 0 ? users.find((row) => row.rowId === target.rowId) : undefined;
    if (!found) stale();
  } else if (target.messageId !== null) {
    // The core's rows carry no client message ids, so a message id never matches (R2).
    stale();
  }
  if (found && target.ordinal !== null) {
    const lineageOrdinal = lineageUsers.findIndex((row) => row.rowId === found?.rowId);
    const segmentOrdinal = users.indexOf(found);
    if (target.ordinal !== lineageOrdinal && target.ordinal !== segmentOrdinal)
      fail(
        ErrorCode.ordinalMismatch,
        `truncate_before_user_ordinal (${target.ordinal}) does not match the resolved target turn (${lineageOrdinal})`,
      );
  }
  if (!found && target.ordinal !== null) {
    if (agent.persisted || users.some((row) => row.rowId > 0))
      fail(
        ErrorCode.malformedTruncation,
        'ordinal-only truncation is unsafe for durable session history; include truncate_before_row_id',
      );
    found = target.ordinal >= 0 ? users[target.ordinal] : undefined;
    if (!found) stale();
  }
  if (!found) return stale();
  const index = rows.indexOf(found);
  const survivors = rows.slice(0, index);
  if (survivors.length === 0 && rows.length > 0 && !target.confirmEmpty)
    fail(
      ErrorCode.emptyTruncation,
      'truncation would erase the entire session transcript; send confirm_empty_truncate=true to proceed',
    );
  return cutBefore(session, found, rows, target.rebind);
}

/** Applies a cut before `row` (C3–C5): store first, then memory. */
export async function cutBefore(
  session: LiveSession,
  row: StoredMessage,
  rows: StoredMessage[],
  rebind: number[] | null,
  failurePrefix = 'failed to persist history truncation',
): Promise<Record<string, unknown>> {
  const agent = session.agent;
  // A session without a stored row is cut in memory by the core (its rows have negative ids).
  let idMap: Record<number, number>;
  try {
    idMap = (await agent.rewind({ beforeRowId: row.rowId })).idMap;
  } catch (error) {
    fail(ErrorCode.historyWriteFailed, `${failurePrefix}: ${error instanceof Error ? error.message : String(error)}`);
  }
  session.inflight = null;
  const after = await agent.history();
  if (rebind) {
    const activeBefore = new Set(rows.map((entry) => entry.rowId));
    const map: Record<string, number | null> = {};
    for (const id of rebind) if (activeBefore.has(id)) map[String(id)] = idMap[id] ?? null;
    return { survivor_row_id_map: map };
  }
  return {
    survivor_user_row_ids: after.filter(isUserOriginated).map((entry) => (entry.rowId > 0 ? entry.rowId : null)),
  };
}
