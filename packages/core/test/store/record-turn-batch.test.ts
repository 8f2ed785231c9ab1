import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import {
  assistant,
  openTestStore,
  scriptedUsage,
  sessionId,
  steppingClock,
  temporaryDirectory,
  user,
} from './helpers.js';

async function outcome(promise: Promise<number[]>): Promise<number[] | string> {
  return promise.then(
    (ids) => ids,
    (caught: unknown) => (HermesError.isInstance(caught) ? caught.code : String(caught)),
  );
}

// ADR 0106: header-less turns that end together under load are written in one SQLite transaction, a savepoint each.
describe('recordTurn calls made together (SQLite)', () => {
  it('after the first, which is written at once, are one transaction, each answered with its own rows', async () => {
    const store = await openTestStore('file');
    const ids = [sessionId(), sessionId(), sessionId(), sessionId()];
    await store.createSession({ id: ids[2] as string, source: 'cli' });
    await store.appendMessages(ids[2] as string, [user('earlier'), assistant('before')]);
    const before = store.committedWrites;
    const written = await Promise.all(
      ids.map((id, index) =>
        store.recordTurn(id, {
          create: { source: 'api_server' },
          rows: [
            user(`question ${index}`, { turnId: `t${index}` }),
            assistant(`answer ${index}`, { turnId: `t${index}` }),
          ],
          usage: scriptedUsage,
        }),
      ),
    );
    // The first call's write and one for the three after it.
    expect(store.committedWrites - before).toBe(2);
    // A call in a later turn of the event loop is written at once again.
    const alone = store.recordTurn(sessionId(), {
      create: { source: 'api_server' },
      rows: [user('later')],
      usage: scriptedUsage,
    });
    expect(store.committedWrites - before).toBe(3);
    expect(await alone).toHaveLength(1);
    for (const [index, id] of ids.entries()) {
      const rows = await store.loadConversation(id);
      expect(rows.slice(-2).map((row) => row.rowId)).toEqual(written[index]);
      expect(rows.slice(-2).map((row) => row.content)).toEqual([`question ${index}`, `answer ${index}`]);
      expect((await store.usageByModel(id))[0]?.usage.inputTokens).toBe(10);
    }
    // A new session is born with its rows counted; an existing one keeps its fields and counts on.
    expect(await store.getSession(ids[0] as string)).toMatchObject({ source: 'api_server', messageCount: 2 });
    expect(await store.getSession(ids[2] as string)).toMatchObject({ source: 'cli', messageCount: 4 });
  });

  it('fails one turn alone: its rows are rolled back and the others are written', async () => {
    const clock = steppingClock();
    const store = await openTestStore('file', { clock });
    const fenced = sessionId();
    await store.createSession({ id: fenced });
    const stale = await store.acquireTurnLease(fenced, { holder: 'a', turnId: 't1', ttlMs: 1_000, waitMs: 0 });
    clock.advance(1_001);
    await store.acquireTurnLease(fenced, { holder: 'b', turnId: 't2', ttlMs: 1_000, waitMs: 0 });
    const good = [sessionId(), sessionId()];
    const missing = sessionId();
    const [first, lost, absent, last] = await Promise.all([
      outcome(
        store.recordTurn(good[0] as string, {
          create: { source: 'api_server' },
          rows: [user('one')],
          usage: scriptedUsage,
        }),
      ),
      outcome(store.recordTurn(fenced, { rows: [assistant('late')], usage: scriptedUsage }, { fence: stale.fence })),
      outcome(store.recordTurn(missing, { rows: [user('nowhere')], usage: scriptedUsage })),
      outcome(
        store.recordTurn(good[1] as string, {
          create: { source: 'api_server' },
          rows: [user('two')],
          usage: scriptedUsage,
        }),
      ),
    ]);
    expect(lost).toBe('lease_lost');
    expect(absent).toBe('session_not_found');
    expect(first).toHaveLength(1);
    expect(last).toHaveLength(1);
    expect((await store.loadConversation(good[0] as string)).map((row) => row.content)).toEqual(['one']);
    expect((await store.loadConversation(good[1] as string)).map((row) => row.content)).toEqual(['two']);
    expect(await store.loadConversation(fenced)).toEqual([]);
    expect(await store.usageByModel(fenced)).toEqual([]);
    expect(await store.getSession(missing)).toBeNull();
  });

  it('are written before the store closes when it closes at once', async () => {
    const path = `${temporaryDirectory()}/state.db`;
    const store = await openTestStore(path);
    const ids = [sessionId(), sessionId()];
    const pending = ids.map((id) =>
      store.recordTurn(id, { create: { source: 'api_server' }, rows: [user(id)], usage: scriptedUsage }),
    );
    await store.close();
    expect(await Promise.all(pending.map(outcome))).toEqual([[1], [2]]);
    const reopened = await openTestStore(path);
    for (const id of ids) expect((await reopened.loadConversation(id)).map((row) => row.content)).toEqual([id]);
    await expect(store.recordTurn(sessionId(), { rows: [], usage: scriptedUsage })).rejects.toMatchObject({
      code: 'store_closed',
    });
  });
});

// What a header-less turn and its usage write, read back from the file (ADR 0108 tried running these statements on
// the driver directly and did not keep it; the columns must stay what drizzle writes).
describe('the columns a header-less turn and its usage write (SQLite)', () => {
  it('are the values the store was given, encoded as the ORM encodes them', async () => {
    const path = join(temporaryDirectory(), 'store.db');
    const store = await openTestStore(path);
    const created = sessionId();
    await store.createSession({ id: created, source: 'cli', hidden: true, modelConfig: { toolsets: ['files'] } });
    const derived = sessionId();
    await store.recordTurn(derived, {
      create: { source: 'api_server' },
      rows: [user('question'), assistant('answer')],
      usage: { ...scriptedUsage, costUsd: 0.25, costStatus: 'actual' },
    });
    // A second call of the same model, estimated: the row adds up, its status and the session's become the weaker.
    await store.recordUsage(derived, { ...scriptedUsage, costUsd: 0.5, costStatus: 'estimated' });
    await store.recordUsage(derived, { ...scriptedUsage, model: 'other', costUsd: 0, costStatus: 'actual' });
    await store.close();
    const sqlite = new Database(path, { readonly: true });
    try {
      const session = (id: string) =>
        sqlite
          .prepare(
            `SELECT source, kind, title, hidden, model_config, message_count, tool_call_count, api_call_count,
              input_tokens, output_tokens, estimated_cost_usd, cost_status, ended_at, rewind_count FROM sessions WHERE id = ?`,
          )
          .get(id);
      expect(session(created)).toEqual({
        source: 'cli',
        kind: 'root',
        title: null,
        hidden: 1,
        model_config: '{"toolsets":["files"]}',
        message_count: 0,
        tool_call_count: 0,
        api_call_count: 0,
        input_tokens: 0,
        output_tokens: 0,
        estimated_cost_usd: 0,
        cost_status: 'unknown',
        ended_at: null,
        rewind_count: 0,
      });
      expect(session(derived)).toEqual({
        source: 'api_server',
        kind: 'root',
        title: null,
        hidden: 0,
        model_config: '{}',
        message_count: 2,
        tool_call_count: 0,
        api_call_count: 3,
        input_tokens: 30,
        output_tokens: 15,
        estimated_cost_usd: 0.75,
        cost_status: 'estimated',
        ended_at: null,
        rewind_count: 0,
      });
      expect(
        sqlite
          .prepare(
            'SELECT model, task, api_calls, input_tokens, cost_usd, cost_status FROM usage_by_model WHERE session_id = ? ORDER BY model',
          )
          .all(derived),
      ).toEqual([
        { model: 'fake', task: 'main', api_calls: 2, input_tokens: 20, cost_usd: 0.75, cost_status: 'estimated' },
        { model: 'other', task: 'main', api_calls: 1, input_tokens: 10, cost_usd: 0, cost_status: 'actual' },
      ]);
    } finally {
      sqlite.close();
    }
  });
});
