import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { resolveMigrationsFolder } from '../../src/store/migrations.js';
import { FTS_INDEX_BATCH_ROWS } from '../../src/store/sqlite-statements.js';
import {
  assistant,
  openTestStore,
  STORE_LOCATIONS,
  type StoreLocation,
  sessionId,
  temporaryDirectory,
  tool,
  user,
} from './helpers.js';

function count(raw: Database.Database, table: string): number {
  return (raw.prepare(`SELECT count(*) AS count FROM ${table}`).get() as { count: number }).count;
}

/** Rows above the full-text index's mark: appended, not indexed yet. */
function unindexed(raw: Database.Database): number {
  return (
    raw
      .prepare('SELECT count(*) AS count FROM messages WHERE id > (SELECT last_row_id FROM messages_fts_indexed)')
      .get() as { count: number }
  ).count;
}

describe.each<StoreLocation>(STORE_LOCATIONS)('search (%s)', (location) => {
  it('38. finds a word from an assistant row with >>>/<<< markers, with its session and neighbours', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id, title: 'Kettle talk', source: 'cli' });
    const [, answerId] = await store.appendMessages(id, [
      user('how do I descale a kettle?'),
      assistant('Use citric acid and boil it twice, then rinse.'),
      user('thanks'),
    ]);
    const hits = await store.search('citric');
    expect(hits).toHaveLength(1);
    const [hit] = hits;
    expect(hit?.rowId).toBe(answerId);
    expect(hit?.role).toBe('assistant');
    expect(hit?.snippet).toContain('>>>citric<<<');
    expect(hit?.active).toBe(true);
    expect(hit?.compacted).toBe(false);
    expect(hit?.session).toMatchObject({ title: 'Kettle talk', source: 'cli' });
    expect(hit?.context.before).toEqual({ role: 'user', text: 'how do I descale a kettle?' });
    expect(hit?.context.after).toEqual({ role: 'user', text: 'thanks' });
  });

  it('38. finds compacted rows flagged as such, and never returns a superseded row and its copy twice', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    const ids = await store.appendMessages(id, [
      user('start'),
      assistant('head answer'),
      user('discuss the zeppelin route'),
      assistant('the zeppelin goes north'),
      user('and the tail mentions a platypus'),
      assistant('platypus noted'),
    ]);
    const commit = await store.compactInPlace(id, {
      middleRowIds: [ids[2] as number, ids[3] as number],
      tailRowIds: [ids[4] as number, ids[5] as number],
      summary: { role: 'assistant', content: '[Summary of 2 earlier messages] zeppelin planning' },
    });
    const zeppelin = await store.search('zeppelin');
    const archived = zeppelin.filter((hit) => !hit.active);
    expect(archived.map((hit) => hit.rowId).sort()).toEqual([ids[2], ids[3]].sort());
    expect(archived.every((hit) => hit.compacted)).toBe(true);
    expect(zeppelin.find((hit) => hit.active)?.rowId).toBe(commit.summaryRowId);

    const platypus = await store.search('platypus');
    expect(platypus.map((hit) => hit.rowId).sort()).toEqual(
      [commit.idMap[ids[4] as number], commit.idMap[ids[5] as number]].sort(),
    );

    // Rewind supersedes again: still exactly one hit per live message.
    await store.undo(id);
    const afterUndo = await store.search('head');
    expect(afterUndo).toHaveLength(1);
    expect(afterUndo[0]?.active).toBe(true);

    expect(await store.search('zeppelin', { includeArchived: false })).toHaveLength(1);
  });

  it('38. accepts quotes, hyphens, operators and stray syntax without an FTS error', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    await store.appendMessages(id, [
      user('the well-known "quoted" phrase AND near things'),
      assistant('NEAR(alpha beta) column:filter ^start'),
    ]);
    const hostile = [
      '"',
      '""',
      '"unbalanced',
      'well-known',
      '-known',
      'AND',
      'OR NOT',
      'NEAR(',
      'NEAR(alpha',
      '*',
      '**',
      'column:filter',
      '^start',
      '(',
      ')',
      'a AND (b OR',
      "it's",
      '{near}',
      '   ',
      '',
      '+',
      '🙂',
    ];
    for (const query of hostile) {
      await expect(store.search(query), query).resolves.toBeInstanceOf(Array);
    }
    expect(await store.search('*')).toEqual([]);
    expect(await store.search('"')).toEqual([]);
    expect(await store.search('   ')).toEqual([]);
    expect((await store.search('well-known')).map((hit) => hit.role)).toEqual(['user']);
    expect((await store.search('"quoted"')).map((hit) => hit.role)).toEqual(['user']);
    expect((await store.search('NEAR(alpha')).map((hit) => hit.role)).toEqual(['assistant']);
    expect((await store.search('AND')).map((hit) => hit.role)).toEqual(['user']);
    expect((await store.search('column:filter')).map((hit) => hit.role)).toEqual(['assistant']);
  });

  it('combines terms with AND, keeps a trailing * as a prefix match, and folds diacritics', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    await store.appendMessages(id, [user('configuration of the café'), assistant('configure nothing')]);
    expect((await store.search('config*')).length).toBe(2);
    expect((await store.search('config')).length).toBe(0);
    expect((await store.search('config* cafe')).map((hit) => hit.role)).toEqual(['user']);
    expect((await store.search('CAFÉ')).map((hit) => hit.role)).toEqual(['user']);
  });

  it('indexes tool call names and arguments, and tool output only up to 8,000 characters', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    await store.appendMessages(id, [
      user('look'),
      assistant('', { toolCalls: [{ id: 'call_1', name: 'search_files', arguments: '{"pattern":"frobnicate"}' }] }),
      tool('call_1', 'search_files', `${'x '.repeat(3_990)}early ${'y '.repeat(100)}beyondlimit`),
    ]);
    expect((await store.search('frobnicate')).map((hit) => hit.role)).toEqual(['assistant']);
    expect((await store.search('search_files')).map((hit) => hit.role).sort()).toEqual(['assistant', 'tool']);
    expect((await store.search('early')).map((hit) => hit.role)).toEqual(['tool']);
    expect(await store.search('beyondlimit')).toEqual([]);
    // The neighbour of a tool-call-only assistant row shows its tool names.
    const [hit] = await store.search('early');
    expect(hit?.context.before).toEqual({ role: 'assistant', text: 'search_files' });
  });

  it('leaves out subagent and hidden sessions unless asked, and filters by source, role and session', async () => {
    const store = await openTestStore(location);
    const root = sessionId();
    const hidden = sessionId();
    const child = sessionId();
    await store.createSession({ id: root, source: 'cli' });
    await store.createSession({ id: hidden, source: 'tui', hidden: true });
    await store.createSession({ id: child, source: 'subagent', kind: 'subagent', hidden: true, parentSessionId: root });
    await store.appendMessages(root, [user('marmalade in root'), assistant('marmalade reply')]);
    await store.appendMessages(hidden, [user('marmalade hidden')]);
    await store.appendMessages(child, [user('marmalade child')]);

    const sessionsOf = async (options?: Parameters<typeof store.search>[1]) =>
      [...new Set((await store.search('marmalade', options)).map((hit) => hit.sessionId))].sort();

    expect(await sessionsOf()).toEqual([root]);
    expect(await sessionsOf({ includeHidden: true })).toEqual([root, hidden].sort());
    expect(await sessionsOf({ sources: ['subagent'] })).toEqual([child]);
    expect(await sessionsOf({ sources: ['cli', 'subagent'] })).toEqual([root, child].sort());
    expect(await sessionsOf({ excludeSources: ['cli'], includeHidden: true })).toEqual([hidden]);
    expect((await store.search('marmalade', { roles: ['assistant'] })).map((hit) => hit.role)).toEqual(['assistant']);
    expect(await sessionsOf({ sessionId: hidden, includeHidden: true })).toEqual([hidden]);
    expect(await store.search('marmalade', { limit: 1 })).toHaveLength(1);
  });

  it('ranks by bm25, then by recency', async () => {
    const clockTimes = [1_000, 2_000, 3_000];
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    await store.appendMessages(id, [
      user('walrus', { timestamp: clockTimes[0] }),
      user('walrus', { timestamp: clockTimes[2] }),
      user('walrus walrus walrus walrus', { timestamp: clockTimes[1] }),
    ]);
    const hits = await store.search('walrus');
    expect(hits.map((hit) => hit.timestamp)).toEqual([2_000, 3_000, 1_000]);
  });
});

describe('search index maintenance', () => {
  it('re-indexes a row whose content changes and drops a deleted session from the index', async () => {
    const store = await openTestStore('file');
    const id = sessionId();
    await store.createSession({ id });
    const [rowId] = await store.appendMessages(id, [user('original wording')]);
    await store.updateMessageDisplay(rowId as number, { note: 'display only' });
    expect(await store.search('original')).toHaveLength(1);

    const raw = new Database(store.path);
    raw.prepare('UPDATE messages SET content = ? WHERE id = ?').run('replacement wording', rowId);
    expect(await store.search('original')).toEqual([]);
    expect((await store.search('replacement')).map((hit) => hit.rowId)).toEqual([rowId]);

    await store.deleteSession(id);
    expect(raw.prepare('SELECT count(*) AS count FROM messages_fts').get()).toEqual({ count: 0 });
    raw.close();
  });

  it('indexes appended rows in batches, or before a search so that it finds every row (ADR 0060)', async () => {
    const store = await openTestStore('file');
    const id = sessionId();
    await store.createSession({ id });
    const [first] = await store.appendMessages(id, [user('a lonely wombat'), assistant('noted')]);
    const raw = new Database(store.path);
    expect(count(raw, 'messages_fts')).toBe(0);
    expect(unindexed(raw)).toBe(2);
    // A row edited before its batch is indexed is indexed as it is then.
    raw.prepare('UPDATE messages SET content = ? WHERE id = ?').run('a lonely wombat, edited', first);

    expect((await store.search('wombat')).map((hit) => hit.rowId)).toEqual([first]);
    expect((await store.search('edited')).map((hit) => hit.rowId)).toEqual([first]);
    expect(count(raw, 'messages_fts')).toBe(2);
    expect(unindexed(raw)).toBe(0);

    // The append that completes a batch indexes it, with no search in between.
    const turns = Math.ceil(FTS_INDEX_BATCH_ROWS / 4);
    for (let turn = 0; turn < turns; turn += 1) {
      await store.appendMessages(id, [
        user(`question ${turn}`),
        assistant('', {
          toolCalls: [{ id: `call_${turn}`, name: 'read_file', arguments: '{"path":"/src/quokka.ts"}' }],
        }),
        tool(`call_${turn}`, 'read_file', `output ${turn}`),
        assistant(`answer ${turn}`),
      ]);
    }
    expect(count(raw, 'messages_fts')).toBe(2 + turns * 4);
    expect(unindexed(raw)).toBe(0);
    // The batch indexes what the trigger indexed: tool call names and arguments, tool names.
    expect(await store.search('quokka', { limit: 500 })).toHaveLength(turns);
    raw.close();
  });

  it('finds rows that another store on the same file appended', async () => {
    const writer = await openTestStore('file');
    const reader = await openTestStore(writer.path);
    const id = sessionId();
    await writer.createSession({ id });
    const [rowId] = await writer.appendMessages(id, [user('the platypus from the other process')]);
    expect((await reader.search('platypus')).map((hit) => hit.rowId)).toEqual([rowId]);
  });

  it('keeps the rows a database indexed before migration 0003 and indexes the rows appended after it', async () => {
    // The shipped migrations up to 0002, as the previous release applied them.
    const folder = join(temporaryDirectory(), 'drizzle');
    cpSync(resolveMigrationsFolder(), folder, { recursive: true });
    const journalPath = join(folder, 'meta', '_journal.json');
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] };
    journal.entries = journal.entries.filter((entry) => entry.tag < '0003');
    writeFileSync(journalPath, JSON.stringify(journal));
    const path = join(temporaryDirectory(), 'state.db');
    const before = await openTestStore(path, { migrationsFolder: folder });
    const id = sessionId();
    await before.createSession({ id });
    const [oldRow] = await before.appendMessages(id, [user('an armadillo before the upgrade')]);
    await before.close();

    const after = await openTestStore(path);
    const [newRow] = await after.appendMessages(id, [user('an armadillo after the upgrade')]);
    expect((await after.search('armadillo')).map((hit) => hit.rowId).sort()).toEqual([oldRow, newRow].sort());
  });
});
