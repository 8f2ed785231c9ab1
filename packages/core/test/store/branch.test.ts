import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import type { NewMessage } from '../../src/store/types.js';
import {
  assistant,
  openTestStore,
  STORE_LOCATIONS,
  type StoreLocation,
  scriptedUsage,
  sessionId,
  user,
} from './helpers.js';

describe.each<StoreLocation>(STORE_LOCATIONS)('branch (%s)', (location) => {
  it('34. branch copies only active rows, sets kind branch, parent and a unique "<title> #2" title, and leaves the parent untouched', async () => {
    const store = await openTestStore(location);
    const parentId = sessionId();
    await store.createSession({
      id: parentId,
      source: 'tui',
      title: 'Refactor plan',
      model: 'openrouter:x',
      modelConfig: { reasoning_effort: 'high', toolsets: ['files'] },
      systemPrompt: 'You are Hermes.\n  exact bytes ',
      cwd: '/work/project',
    });
    await store.appendMessages(parentId, [user('one'), assistant('two')]);
    await store.appendMessages(parentId, [user('three'), assistant('four')]);
    await store.undo(parentId); // three/four become inactive; one/two are re-inserted as copies
    await store.appendMessages(parentId, [user('five'), assistant('six')]);
    await store.recordUsage(parentId, {
      ...scriptedUsage,
      provider: 'openrouter',
      model: 'x',
      costUsd: 0.01,
      costStatus: 'estimated',
    });
    const parentBefore = await store.getSession(parentId);
    const parentRowsBefore = await store.loadConversation(parentId, { includeInactive: true });

    const branch = await store.branch(parentId);

    expect(branch.kind).toBe('branch');
    expect(branch.parentSessionId).toBe(parentId);
    expect(branch.title).toBe('Refactor plan #2');
    expect(branch.titleSource).toBe('branch');
    expect(branch.source).toBe('tui');
    expect(branch.model).toBe('openrouter:x');
    expect(branch.systemPrompt).toBe('You are Hermes.\n  exact bytes ');
    expect(branch.cwd).toBe('/work/project');
    expect(branch.modelConfig).toEqual({ reasoning_effort: 'high', toolsets: ['files'], branched_from: parentId });
    expect(branch.apiCallCount).toBe(0);
    expect(branch.inputTokens).toBe(0);
    expect(branch.estimatedCostUsd).toBe(0);
    expect(branch.rewindCount).toBe(0);
    expect(branch.messageCount).toBe(4);
    const copied = await store.loadConversation(branch.id, { includeInactive: true });
    expect(copied.map((row) => row.content)).toEqual(['one', 'two', 'five', 'six']);
    expect(copied.every((row) => row.active && row.sessionId === branch.id)).toBe(true);

    expect(await store.getSession(parentId)).toEqual(parentBefore);
    expect(await store.loadConversation(parentId, { includeInactive: true })).toEqual(parentRowsBefore);

    const second = await store.branch(parentId);
    expect(second.title).toBe('Refactor plan #3');
    const ofBranch = await store.branch(branch.id);
    expect(ofBranch.title).toBe('Refactor plan #4');
  });

  it('branch up to a row copies the active rows up to it; an untitled parent gives "Untitled"', async () => {
    const store = await openTestStore(location);
    const parentId = sessionId();
    await store.createSession({ id: parentId });
    const ids = await store.appendMessages(parentId, [user('a'), assistant('b'), user('c'), assistant('d')]);
    const branch = await store.branch(parentId, { upToRowId: ids[1] as number, source: 'acp' });
    expect(branch.title).toBe('Untitled');
    expect(branch.source).toBe('acp');
    expect((await store.loadConversation(branch.id)).map((row) => row.content)).toEqual(['a', 'b']);
    const error = await store.branch(parentId, { upToRowId: 123_456 }).catch((caught: unknown) => caught);
    expect(HermesError.isInstance(error) && error.code).toBe('invalid_input');
  });

  it('branch with a given title uses it, and fails with title_taken when another session has it', async () => {
    const store = await openTestStore(location);
    const parentId = sessionId();
    await store.createSession({ id: parentId, title: 'Alpha' });
    const named = await store.branch(parentId, { title: '  Beta  ', id: sessionId() });
    expect(named.title).toBe('Beta');
    expect(named.titleSource).toBe('user');
    const error = await store.branch(parentId, { title: 'alpha' }).catch((caught: unknown) => caught);
    expect(HermesError.isInstance(error) && error.code).toBe('title_taken');
  });

  it('branch copies long transcripts across several 500-row batches in order', async () => {
    const store = await openTestStore(location);
    const parentId = sessionId();
    await store.createSession({ id: parentId });
    const rows: NewMessage[] = Array.from({ length: 1_203 }, (_, index) =>
      index % 2 === 0 ? user(`question ${index}`) : assistant(`answer ${index}`),
    );
    await store.appendMessages(parentId, rows);
    const branch = await store.branch(parentId);
    const copied = await store.loadConversation(branch.id);
    expect(copied.map((row) => row.content)).toEqual(rows.map((row) => row.content));
    expect(branch.messageCount).toBe(1_203);
  });
});

describe('branch atomicity', () => {
  it('34. a copy that fails in its second batch leaves no branch row and no copied messages behind', async () => {
    const store = await openTestStore('file');
    const parentId = sessionId();
    await store.createSession({ id: parentId, title: 'Source' });
    await store.appendMessages(
      parentId,
      Array.from({ length: 700 }, (_, index) => user(`row ${index}`)),
    );
    const raw = new Database(store.path);
    raw.exec(`
      CREATE TRIGGER inject_failure BEFORE INSERT ON messages
      WHEN NEW.session_id <> '${parentId}' AND NEW.content = 'row 600'
      BEGIN SELECT RAISE(ABORT, 'copy failed'); END;
    `);
    const sessionsBefore = raw.prepare('SELECT * FROM sessions').all();
    const messagesBefore = raw.prepare('SELECT count(*) AS count FROM messages').get();

    await expect(store.branch(parentId)).rejects.toThrow('copy failed');

    expect(raw.prepare('SELECT * FROM sessions').all()).toEqual(sessionsBefore);
    expect(raw.prepare('SELECT count(*) AS count FROM messages').get()).toEqual(messagesBefore);
    expect((await store.listSessions()).items.map((item) => item.id)).toEqual([parentId]);
    raw.close();
  });
});
