import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import { assistant, openTestStore, STORE_LOCATIONS, type StoreLocation, sessionId, user } from './helpers.js';

describe.each<StoreLocation>(STORE_LOCATIONS)('compaction commit (%s)', (location) => {
  it('keeps the head, archives the middle as compacted, inserts the summary and re-inserts the tail after it', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    const ids = await store.appendMessages(id, [
      user('h1'),
      assistant('h2'),
      user('m1'),
      assistant('m2'),
      user('m3'),
      assistant('t1'),
      user('t2'),
    ]);
    const [h1, h2, m1, m2, m3, t1, t2] = ids as [number, number, number, number, number, number, number];

    const commit = await store.compactInPlace(id, {
      middleRowIds: [m1, m2, m3],
      tailRowIds: [t1, t2],
      summary: { role: 'user', content: '[Summary of 3 earlier messages] …' },
    });

    expect(commit.archivedRows).toBe(3);
    expect(Object.keys(commit.idMap).map(Number)).toEqual([t1, t2]);
    const live = await store.loadConversation(id);
    expect(live.map((row) => row.content)).toEqual(['h1', 'h2', '[Summary of 3 earlier messages] …', 't1', 't2']);
    expect(live.map((row) => row.rowId)).toEqual([h1, h2, commit.summaryRowId, commit.idMap[t1], commit.idMap[t2]]);
    expect(live[2]?.displayKind).toBe('compaction_summary');
    const all = await store.loadConversation(id, { includeInactive: true });
    const byId = new Map(all.map((row) => [row.rowId, row]));
    for (const middle of [m1, m2, m3])
      expect(byId.get(middle)).toMatchObject({ active: false, compacted: true, supersededBy: null });
    for (const tail of [t1, t2])
      expect(byId.get(tail)).toMatchObject({ active: false, compacted: false, supersededBy: commit.idMap[tail] });
    expect((await store.getSession(id))?.messageCount).toBe(5);
  });

  it('rejects a plan that leaves an active row out or names foreign rows, changing nothing', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    const ids = (await store.appendMessages(id, [user('a'), assistant('b'), user('c'), assistant('d')])) as number[];
    const before = await store.loadConversation(id, { includeInactive: true });
    const plans = [
      { middleRowIds: [ids[1] as number], tailRowIds: [ids[3] as number] }, // row c left out
      { middleRowIds: [], tailRowIds: [ids[3] as number] },
      { middleRowIds: [ids[1] as number, 99_999], tailRowIds: [ids[2] as number, ids[3] as number] },
      { middleRowIds: [ids[1] as number, ids[3] as number], tailRowIds: [ids[2] as number] }, // tail before middle
    ];
    for (const plan of plans) {
      const error = await store
        .compactInPlace(id, { ...plan, summary: { role: 'user', content: 'summary' } })
        .catch((caught: unknown) => caught);
      expect(HermesError.isInstance(error) && error.code).toBe('invalid_input');
    }
    expect(await store.loadConversation(id, { includeInactive: true })).toEqual(before);
  });
});

describe('compaction atomicity', () => {
  it('a failure while copying the tail leaves the transcript unchanged', async () => {
    const store = await openTestStore('file');
    const id = sessionId();
    await store.createSession({ id });
    const ids = (await store.appendMessages(id, [
      user('a'),
      assistant('b'),
      user('c'),
      assistant('tail-row'),
    ])) as number[];
    const raw = new Database(store.path);
    raw.exec(`CREATE TRIGGER inject_failure BEFORE INSERT ON messages WHEN NEW.content = 'tail-row'
      BEGIN SELECT RAISE(ABORT, 'tail copy failed'); END;`);
    const before = raw.prepare('SELECT * FROM messages ORDER BY id').all();
    await expect(
      store.compactInPlace(id, {
        middleRowIds: [ids[1] as number, ids[2] as number],
        tailRowIds: [ids[3] as number],
        summary: { role: 'user', content: 'summary' },
      }),
    ).rejects.toThrow('tail copy failed');
    expect(raw.prepare('SELECT * FROM messages ORDER BY id').all()).toEqual(before);
    raw.close();
  });
});
