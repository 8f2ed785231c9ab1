import type { StoredMessage } from '@hermes/core';
import { describe, expect, it } from 'vitest';
import { replayableRows, ToolCallIds } from './history-replay.js';

function row(rowId: number, fields: Partial<StoredMessage>): StoredMessage {
  return {
    rowId,
    sessionId: 's',
    turnId: null,
    role: 'user',
    content: '',
    contentParts: null,
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    reasoning: null,
    providerMetadata: null,
    timestamp: 0,
    tokenCount: null,
    finishReason: null,
    active: true,
    compacted: false,
    supersededBy: null,
    displayKind: null,
    displayMetadata: null,
    ...fields,
  };
}

describe('history replay', () => {
  it('repeated core call ids get -2, -3 suffixes in order of appearance', () => {
    const ids = new ToolCallIds();
    expect([ids.assign('call_1'), ids.assign('call_1'), ids.assign('call_2'), ids.assign('call_1')]).toEqual([
      'call_1',
      'call_1-2',
      'call_2',
      'call_1-3',
    ]);
  });

  it('replays active and compacted rows, never superseded, undone or hidden ones, in row order', () => {
    const rows = [
      row(3, { content: 'compacted', active: false, compacted: true }),
      row(1, { content: 'active' }),
      row(2, { content: 'undone', active: false }),
      row(4, { content: 'superseded', supersededBy: 9 }),
      row(5, { content: 'switch', displayKind: 'model_switch' }),
    ];
    expect(replayableRows(rows).map((entry) => entry.content)).toEqual(['active', 'compacted']);
  });
});
