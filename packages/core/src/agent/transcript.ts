import type { StoredMessage } from '../store/types.js';
import type { StoredToolCall } from '../types.js';

/**
 * A row of the in-memory transcript: what the store holds, plus rows of ephemeral sessions that
 * have no id. The request builder reads these; the store writes them.
 */
export type TranscriptRow = Omit<
  StoredMessage,
  'rowId' | 'sessionId' | 'tokenCount' | 'active' | 'compacted' | 'supersededBy'
> & {
  rowId: number | null;
};

/** Display kinds of user rows that did not start a turn (spec/core.md §9.4.4). */
export const NON_TURN_USER_KINDS: ReadonlySet<string> = new Set([
  'steer',
  'redirect',
  'model_switch',
  'compaction_summary',
]);

/** Display-metadata key of a user row whose turn failed before storing any answer; requests leave the row out. */
export const FAILED_PROMPT_KEY = 'turn_failed';

/** True for a user row that started a turn. */
export function startsTurn(row: Pick<TranscriptRow, 'role' | 'displayKind'>): boolean {
  return row.role === 'user' && (row.displayKind === null || !NON_TURN_USER_KINDS.has(row.displayKind));
}

/** Characters of a row as counted for context estimates. */
export function rowChars(row: TranscriptRow): number {
  let chars = row.content.length + (row.reasoning?.length ?? 0);
  for (const call of row.toolCalls ?? []) chars += call.name.length + call.arguments.length;
  return chars;
}

/**
 * The tool calls the transcript's tail still waits for: calls of the assistant rows after the last row that started a
 * turn, with no tool row answering them. Only a run that stopped for its client's tools leaves any (ADR 0052); every
 * other run answers all of its calls before it ends (spec/core.md §7.10).
 */
export function pendingToolCalls(
  rows: readonly Pick<TranscriptRow, 'role' | 'displayKind' | 'toolCalls' | 'toolCallId'>[],
): StoredToolCall[] {
  let start = rows.length;
  while (start > 0 && !startsTurn(rows[start - 1] as TranscriptRow)) start -= 1;
  const answered = new Set<string>();
  const calls: StoredToolCall[] = [];
  for (let index = start; index < rows.length; index += 1) {
    const row = rows[index] as TranscriptRow;
    if (row.role === 'tool' && row.toolCallId) answered.add(row.toolCallId);
    for (const call of row.toolCalls ?? []) calls.push(call);
  }
  return calls.filter((call) => !answered.has(call.id));
}
