import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import type { SessionStore } from '../../src/store/index.js';
import { assistant, openTestStore, STORE_LOCATIONS, type StoreLocation, sessionId, tool, user } from './helpers.js';

async function twoTurns(store: SessionStore, id = sessionId()) {
  await store.createSession({ id, source: 'cli' });
  const first = await store.appendMessages(id, [
    user('first question', { turnId: 'turn_1' }),
    assistant('', { turnId: 'turn_1', toolCalls: [{ id: 'call_1', name: 'read_file', arguments: '{"path":"a"}' }] }),
    { ...tool('call_1', 'read_file', 'file body'), turnId: 'turn_1' },
    assistant('first answer', { turnId: 'turn_1', finishReason: 'stop' }),
  ]);
  const second = await store.appendMessages(id, [
    user('second question', { turnId: 'turn_2' }),
    assistant('second answer', { turnId: 'turn_2' }),
  ]);
  return { id, first, second };
}

function snapshot(path: string) {
  const raw = new Database(path, { readonly: true });
  try {
    return {
      sessions: raw.prepare('SELECT * FROM sessions ORDER BY id').all(),
      messages: raw.prepare('SELECT * FROM messages ORDER BY id').all(),
      fts: raw.prepare('SELECT rowid, text FROM messages_fts ORDER BY rowid').all(),
      sequence: raw.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").all(),
    };
  } finally {
    raw.close();
  }
}

describe.each<StoreLocation>(STORE_LOCATIONS)('rewind and undo (%s)', (location) => {
  it('33. undo after two turns archives the second turn, re-inserts the survivors with ids above every archived id, increments rewind_count and returns the removed user text', async () => {
    const store = await openTestStore(location);
    const { id, first, second } = await twoTurns(store);

    const result = await store.undo(id);

    expect(result.removedUserText).toBe('second question');
    expect(result.rewindCount).toBe(1);
    expect(result.removed.map((row) => row.rowId)).toEqual(second);
    expect(result.removed.every((row) => !row.active)).toBe(true);
    expect(Object.keys(result.idMap).map(Number)).toEqual(first);

    const live = await store.loadConversation(id);
    expect(live.map((row) => row.content)).toEqual(['first question', '', 'file body', 'first answer']);
    const all = await store.loadConversation(id, { includeInactive: true });
    const archived = all.filter((row) => !row.active);
    const maxArchived = Math.max(...archived.map((row) => row.rowId));
    expect(live.every((row) => row.rowId > maxArchived)).toBe(true);
    expect(archived.map((row) => row.rowId)).toEqual([...first, ...second]);
    // Each surviving original points at its copy, and the copy says where it came from.
    for (const original of all.filter((row) => first.includes(row.rowId))) {
      const copyId = result.idMap[original.rowId];
      expect(original.supersededBy).toBe(copyId);
      const copy = live.find((row) => row.rowId === copyId);
      expect(copy?.displayMetadata).toEqual({ rewound_from: original.rowId });
      expect(copy?.turnId).toBe(original.turnId);
      expect(copy?.timestamp).toBe(original.timestamp);
      expect(copy?.toolCalls).toEqual(original.toolCalls);
    }
    // The removed rows are archived, not superseded.
    expect(all.filter((row) => second.includes(row.rowId)).every((row) => row.supersededBy === null)).toBe(true);

    const session = await store.getSession(id);
    expect(session?.rewindCount).toBe(1);
    expect(session?.messageCount).toBe(4);
    expect(session?.toolCallCount).toBe(1);
  });

  it('undo skips steer, redirect, model_switch and compaction_summary user rows when finding the turn start', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    const [turnStart] = await store.appendMessages(id, [
      user('do the thing'),
      assistant('working'),
      user('use tabs', { displayKind: 'steer' }),
      user('no, spaces', { displayKind: 'redirect' }),
      user('switched model', { displayKind: 'model_switch' }),
      assistant('done'),
    ]);
    const result = await store.undo(id);
    expect(result.removedUserText).toBe('do the thing');
    expect(result.removed[0]?.rowId).toBe(turnStart);
    expect(await store.loadConversation(id)).toEqual([]);
  });

  it('undo with nothing to undo returns an empty result and changes nothing', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    await store.appendMessages(id, [assistant('hello from a seed')]);
    const before = await store.loadConversation(id, { includeInactive: true });
    expect(await store.undo(id)).toEqual({ removed: [], removedUserText: null, idMap: {}, rewindCount: 0 });
    expect(await store.loadConversation(id, { includeInactive: true })).toEqual(before);
    expect((await store.getSession(id))?.rewindCount).toBe(0);
  });

  it('rewind to a row that is not active in the session fails with invalid_input', async () => {
    const store = await openTestStore(location);
    const { id, first } = await twoTurns(store);
    const other = sessionId();
    await store.createSession({ id: other });
    const [foreignRow] = await store.appendMessages(other, [user('elsewhere')]);
    await store.undo(id);
    for (const beforeRowId of [first[0] as number, foreignRow as number, 999_999]) {
      const error = await store.rewind(id, { beforeRowId }).catch((caught: unknown) => caught);
      expect(HermesError.isInstance(error) && error.code).toBe('invalid_input');
    }
  });

  it('a held row id from before a rewind can never address a live row again', async () => {
    const store = await openTestStore(location);
    const { id, first } = await twoTurns(store);
    const { idMap } = await store.rewind(id, { beforeRowId: first[3] as number });
    const live = await store.loadConversation(id);
    expect(live.map((row) => row.content)).toEqual(['first question', '', 'file body']);
    expect(live.some((row) => first.includes(row.rowId))).toBe(false);
    // A second rewind through the copies works and records the latest origin.
    const copyOfToolRow = idMap[first[2] as number] as number;
    const again = await store.rewind(id, { beforeRowId: copyOfToolRow });
    expect(again.rewindCount).toBe(2);
    expect(again.removedUserText).toBeNull();
    const after = await store.loadConversation(id);
    expect(after.map((row) => row.displayMetadata?.rewound_from)).toEqual([
      idMap[first[0] as number],
      idMap[first[1] as number],
    ]);
  });
});

describe('rewind atomicity', () => {
  it('33. a failure injected mid-way through an undo leaves the database unchanged', async () => {
    const store = await openTestStore('file');
    const { id } = await twoTurns(store);
    // A trigger that aborts on the second re-inserted copy: rows are already archived and one copy written by then.
    const raw = new Database(store.path);
    raw.exec(`
      CREATE TRIGGER inject_failure BEFORE INSERT ON messages
      WHEN json_extract(NEW.display_metadata, '$.rewound_from') IS NOT NULL
        AND (SELECT count(*) FROM messages WHERE json_extract(display_metadata, '$.rewound_from') IS NOT NULL) >= 1
      BEGIN SELECT RAISE(ABORT, 'injected failure'); END;
    `);
    const before = snapshot(store.path);

    await expect(store.undo(id)).rejects.toThrow('injected failure');

    expect(snapshot(store.path)).toEqual(before);
    raw.exec('DROP TRIGGER inject_failure');
    raw.close();
    // With the fault gone the same undo goes through.
    const result = await store.undo(id);
    expect(result.removedUserText).toBe('second question');
  });
});
