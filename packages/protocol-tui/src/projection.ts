import type { StoredMessage } from '@hermes/core';
import type { TranscriptMessage } from './wire/index.js';

/** A user-originated turn: role user, no display kind, not a compaction summary (glossary). */
export function isUserOriginated(row: StoredMessage): boolean {
  return row.role === 'user' && (row.displayKind === null || row.displayKind === '');
}

/** The display text of a row (§3.7). */
export function displayText(row: StoredMessage): string {
  const metadata = row.displayMetadata;
  if (metadata && typeof metadata.display_text === 'string') return metadata.display_text;
  if (row.contentParts && row.contentParts.length > 0) {
    return row.contentParts
      .filter((part): part is { type: 'text'; text: string } => part.type === 'text')
      .map((part) => part.text)
      .join('\n');
  }
  return row.content;
}

/** Rows of the display lineage: active rows and rows archived by compaction, in id order (§3.6). */
export function lineageRows(rows: StoredMessage[]): StoredMessage[] {
  return rows
    .filter((row) => row.active || (row.compacted && row.supersededBy === null))
    .sort((left, right) => left.rowId - right.rowId);
}

/** Projects stored rows to `TranscriptMessage`s (§3.7 row rules). Negative ids are in-memory rows. */
export function project(rows: StoredMessage[]): TranscriptMessage[] {
  const out: TranscriptMessage[] = [];
  for (const row of rows) {
    if (row.displayKind === 'compaction_summary') continue;
    const rowId = row.rowId > 0 ? row.rowId : null;
    const base: Partial<TranscriptMessage> = { timestamp: row.timestamp / 1000, row_id: rowId };
    if (row.displayKind) base.display_kind = row.displayKind;
    if (row.displayMetadata) base.display_metadata = row.displayMetadata as Record<string, unknown>;
    if (row.role === 'user') {
      out.push({ role: 'user', text: displayText(row), ...base, row_id: rowId });
    } else if (row.role === 'assistant') {
      const text = displayText(row);
      if (text.length === 0) continue;
      const message: TranscriptMessage = { role: 'assistant', text, ...base, row_id: rowId };
      if (row.reasoning) message.reasoning = row.reasoning;
      out.push(message);
    } else {
      let content: unknown = row.content;
      try {
        content = JSON.parse(row.content) as unknown;
      } catch {
        // A plain-text tool result stays a string.
      }
      const message: TranscriptMessage = { role: 'tool', content, ...base, row_id: rowId };
      if (row.toolCallId) message.tool_call_id = row.toolCallId;
      if (row.toolName) message.name = row.toolName;
      out.push(message);
    }
  }
  return out;
}
