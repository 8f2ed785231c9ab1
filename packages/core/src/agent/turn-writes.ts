import type { NewMessage, SessionStore, TurnCommit, UsageEntry, WriteOptions } from '../store/types.js';
import type { TranscriptRow } from './transcript.js';

/**
 * What a stored session's turn has written in memory but not yet to the store, and the commit that writes it
 * (ADR 0056). A turn commits at its durability points only: its prompt before the first model call, an answer with
 * tool calls before the tools run, a tool result as it arrives, and its end, which also releases the lease. Between
 * them rows, usage, session fields and display marks wait here, so each point is one transaction.
 */
export class PendingTurnWrites {
  private rows: { message: NewMessage; row: TranscriptRow }[] = [];
  private usage: UsageEntry[] = [];
  private sessionFieldsChanged = false;
  private marked = new Set<TranscriptRow>();

  /** True when nothing waits. */
  get isEmpty(): boolean {
    return this.rows.length === 0 && this.usage.length === 0 && !this.sessionFieldsChanged && this.marked.size === 0;
  }

  /** Rows appended to the in-memory transcript as `row`s, to be stored as `message`s. */
  addRows(messages: readonly NewMessage[], rows: readonly TranscriptRow[]): void {
    messages.forEach((message, index) => {
      const row = rows[index];
      if (row) this.rows.push({ message, row });
    });
  }

  addUsage(entry: UsageEntry): void {
    this.usage.push(entry);
  }

  /** The session's stored prompt or model config changed; their values are read when the commit is written. */
  markSessionFields(): void {
    this.sessionFieldsChanged = true;
  }

  /** `row`'s display metadata changed; a row that waits here is stored with it, a stored one gets it in the commit. */
  markDisplay(row: TranscriptRow): void {
    const waiting = this.rows.find((entry) => entry.row === row);
    if (waiting) waiting.message = { ...waiting.message, displayMetadata: row.displayMetadata };
    else if (row.rowId !== null) this.marked.add(row);
  }

  /** Drops everything that waits (a session that stores nothing). */
  clear(): void {
    this.rows = [];
    this.usage = [];
    this.sessionFieldsChanged = false;
    this.marked.clear();
  }

  /**
   * Writes what waits in one `commitTurn` (with the turn's fence in `options`), then gives the stored rows their ids. On failure the rows that were not
   * stored are returned to the caller (to take out of the transcript) and nothing waits any more: a write the store
   * refused is not tried again by a later commit.
   */
  async commit(
    store: SessionStore,
    sessionId: string,
    sessionFields: () => TurnCommit['session'],
    lease: TurnCommit['lease'] | undefined,
    options: WriteOptions,
  ): Promise<{ stored: TranscriptRow[] } | { failed: TranscriptRow[]; error: unknown }> {
    const rows = this.rows;
    const commit: TurnCommit = {};
    if (rows.length > 0) commit.rows = rows.map((entry) => entry.message);
    if (this.usage.length > 0) commit.usage = this.usage;
    if (this.sessionFieldsChanged) commit.session = sessionFields();
    if (this.marked.size > 0)
      commit.display = [...this.marked].map((row) => ({
        rowId: row.rowId as number,
        displayMetadata: row.displayMetadata,
      }));
    if (lease) commit.lease = lease;
    this.clear();
    try {
      const ids = await store.commitTurn(sessionId, commit, options);
      rows.forEach((entry, index) => {
        entry.row.rowId = ids[index] ?? null;
      });
      return { stored: rows.map((entry) => entry.row) };
    } catch (error) {
      return { failed: rows.map((entry) => entry.row), error };
    }
  }
}
