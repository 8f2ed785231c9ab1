import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PostgresSessionStore, SqliteSessionStore } from '../../src/store/index.js';
import { collectTurn, createTestHost, step, type TestHost, text, toolCall } from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';
import { createTestDatabase } from '../support/postgres.js';
import { until } from './helpers.js';

const { cleanups, temp } = useCleanups();

async function host(database: string, script: ReturnType<typeof step>[], autoTitle = false): Promise<TestHost> {
  const created = await createTestHost({
    database,
    // No automatic clock: the lease refresh and the runs heartbeat would fire while a query waits and be counted.
    autoAdvance: false,
    config: { session: { auto_title: autoTitle }, approvals: { mode: 'off' } },
    script,
  });
  cleanups.push(() => created.dispose());
  return created;
}

/** A stored session as the HTTP API keeps one: created without a prompt, then resumed for its turns. */
async function storedSession(testHost: TestHost) {
  const id = '20260101_000000_abcdef';
  await testHost.store.createSession({ id, source: 'api_server' });
  return testHost.resumeSession(id);
}

/**
 * Counts what the PostgreSQL store sends over its pool: every query is one round trip (node-postgres does not
 * pipeline), and a write transaction is a BEGIN … COMMIT block, or a single statement outside one, that changes rows.
 */
function countPostgres(store: PostgresSessionStore) {
  const counts = { roundTrips: 0, writeTransactions: 0 };
  const wrapped = new WeakSet<object>();
  store.pool.on('acquire', (client) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    let inBlock = false;
    let blockWrites = false;
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0];
      const text = (typeof first === 'string' ? first : ((first as { text?: string }).text ?? '')).trim();
      counts.roundTrips += 1;
      const writes = /\b(insert|update|delete)\b/iu.test(text);
      if (/^begin\b/iu.test(text)) {
        inBlock = true;
        blockWrites = false;
      } else if (/^(commit|rollback)\b/iu.test(text)) {
        if (/^commit/iu.test(text) && blockWrites) counts.writeTransactions += 1;
        inBlock = false;
      } else if (inBlock) blockWrites ||= writes;
      else if (writes) counts.writeTransactions += 1;
      return query(...args);
    };
  });
  return counts;
}

/**
 * The transactions committed to a SQLite file since its WAL last started over, read from the WAL itself: every frame
 * that ends a transaction carries the database's size after the commit, other frames carry 0. Frames of an earlier
 * pass through the file (another salt) are not counted. The store's checkpoints come every 128 commits, far more than
 * a test below makes.
 */
function walCommits(path: string): number {
  if (!existsSync(path)) return 0;
  const wal = readFileSync(path);
  if (wal.length < 32) return 0;
  const pageSize = wal.readUInt32BE(8);
  const salts = [wal.readUInt32BE(16), wal.readUInt32BE(20)];
  let commits = 0;
  for (let offset = 32; offset + 24 + pageSize <= wal.length; offset += 24 + pageSize) {
    if (wal.readUInt32BE(offset + 8) !== salts[0] || wal.readUInt32BE(offset + 12) !== salts[1]) break;
    if (wal.readUInt32BE(offset + 4) !== 0) commits += 1;
  }
  return commits;
}

describe('the writes of a short chat turn (ADR 0056)', () => {
  it('on SQLite, a turn on a stored session commits three write transactions: lease, prompt, answer', async () => {
    const testHost = await host(':memory:', [step(text('First answer.')), step(text('Second answer.'))]);
    const store = testHost.store as SqliteSessionStore;
    const agent = await storedSession(testHost);
    const perTurn: number[] = [];
    for (const prompt of ['first', 'second']) {
      const before = store.committedWrites;
      const { result } = await collectTurn(agent.runTurn({ text: prompt }));
      expect(result.outcome).toBe('completed');
      perTurn.push(store.committedWrites - before);
    }
    // The first turn also stores the session's system prompt, in the prompt row's transaction.
    expect(perTurn).toEqual([3, 3]);

    const rows = await store.loadConversation(agent.sessionId);
    expect(rows.map((row) => [row.role, row.content])).toEqual([
      ['user', 'first'],
      ['assistant', 'First answer.'],
      ['user', 'second'],
      ['assistant', 'Second answer.'],
    ]);
    const session = await store.getSession(agent.sessionId);
    expect(session).toMatchObject({ messageCount: 4, apiCallCount: 2 });
    expect(session?.systemPrompt).toBeTruthy();
    expect((await store.usageByModel(agent.sessionId))[0]?.usage.apiCalls).toBe(2);
    // The last commit released the lease: another holder takes it at once.
    const lease = await store.acquireTurnLease(agent.sessionId, {
      holder: 'other',
      turnId: 'turn_other',
      ttlMs: 60_000,
      waitMs: 0,
    });
    await lease.release();
  });

  it("on SQLite, a session opened by id is born with its first turn's lease: three write transactions in all (issue 34.2)", async () => {
    // A file store, so the commits can also be counted where they land: the WAL's commit frames (ADR 0086).
    const homeDir = temp('hermes-born-');
    const testHost = await createTestHost({
      homeDir,
      storage: 'file',
      autoAdvance: false,
      config: { session: { auto_title: false }, approvals: { mode: 'off' } },
      script: [step(text('Only answer.')), step(text('Next answer.'))],
    });
    cleanups.push(() => testHost.dispose());
    const store = testHost.store as SqliteSessionStore;
    const wal = join(homeDir, 'state.db-wal');
    const writes = () => ({ counted: store.committedWrites, inWal: walCommits(wal) });
    const since = (start: { counted: number; inWal: number }) => {
      const now = writes();
      return { counted: now.counted - start.counted, inWal: now.inWal - start.inWal };
    };
    const before = writes();
    const agent = await testHost.openSession('header-named-session', { create: { source: 'api_server' } });
    if (!agent) throw new Error('expected an agent');
    // The session's row and its first turn's lease, in one transaction.
    expect(since(before)).toEqual({ counted: 1, inWal: 1 });
    const { result } = await collectTurn(agent.runTurn({ text: 'hello' }));
    expect(result.outcome).toBe('completed');
    // The open with the lease, the prompt row (with the system prompt), the answer with the lease's release: the turn
    // takes no lease of its own. Without the born lease this is 4 (create, take, prompt, end).
    expect(since(before)).toEqual({ counted: 3, inWal: 3 });
    expect(await store.getSession('header-named-session')).toMatchObject({ source: 'api_server', messageCount: 2 });
    // The born lease was the turn's (fence epoch 1) and its last commit released it: another holder takes it at once.
    const other = await store.acquireTurnLease('header-named-session', {
      holder: 'other',
      turnId: 'turn_other',
      ttlMs: 60_000,
      waitMs: 0,
    });
    expect(other.fence.epoch).toBe(2);
    await other.release();
    // As the HTTP API runs the session's next turn: the agent let go, the session opened again (found, nothing
    // written), and a turn that takes the lease itself (ADR 0086: that take stays its own transaction).
    expect(testHost.releaseAgent('header-named-session')).toBe(true);
    const next = writes();
    const again = await testHost.openSession('header-named-session', { create: { source: 'api_server' } });
    if (!again) throw new Error('expected an agent');
    expect(since(next)).toEqual({ counted: 0, inWal: 0 });
    expect((await collectTurn(again.runTurn({ text: 'again' }))).result.outcome).toBe('completed');
    expect(since(next)).toEqual({ counted: 3, inWal: 3 });
    expect((await store.loadConversation('header-named-session')).map((row) => row.content)).toEqual([
      'hello',
      'Only answer.',
      'again',
      'Next answer.',
    ]);
  });

  it('on SQLite, a tool turn adds one commit per tool step and keeps the call stored before the tool runs', async () => {
    const testHost = await host(':memory:', [
      step(toolCall('todo', { todos: [{ id: '1', content: 'x', status: 'pending' }] }, 'call_todo')),
      step(text('Done.')),
    ]);
    const store = testHost.store as SqliteSessionStore;
    const agent = await storedSession(testHost);
    let storedBeforeTool = false;
    agent.subscribe((event) => {
      if (event.type !== 'tool.start') return;
      void store.loadConversation(agent.sessionId).then((rows) => {
        storedBeforeTool = rows.some((row) => row.toolCalls?.[0]?.id === 'call_todo');
      });
    });
    const before = store.committedWrites;
    const { result } = await collectTurn(agent.runTurn({ text: 'plan it' }));
    expect(result.outcome).toBe('completed');
    // Lease, prompt, the call with its usage, the tool's result, the answer with its usage and the lease release.
    expect(store.committedWrites - before).toBe(5);
    expect(storedBeforeTool).toBe(true);
    const rows = await store.loadConversation(agent.sessionId);
    expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(result.rowIds).toEqual(rows.map((row) => row.rowId));
  });

  it('on SQLite, a generated title follows the turn in one more write that also stores its call usage', async () => {
    const testHost = await host(
      ':memory:',
      [step(text('Rome is lovely in spring.')), step(text('Trip To Rome'))],
      true,
    );
    const store = testHost.store as SqliteSessionStore;
    const agent = await storedSession(testHost);
    const titles: string[] = [];
    agent.subscribe((event) => {
      if (event.type === 'title') titles.push(event.title);
    });
    const before = store.committedWrites;
    await collectTurn(agent.runTurn({ text: 'Help me plan a trip to Rome' }));
    await until(() => titles.length > 0);
    expect(titles).toEqual(['Trip To Rome']);
    expect(store.committedWrites - before).toBe(4);
    const usage = await store.usageByModel(agent.sessionId);
    expect(usage.map((row) => [row.task, row.usage.apiCalls])).toEqual([
      ['main', 1],
      ['title', 1],
    ]);
  });

  it('on PostgreSQL, a turn on a stored session commits three write transactions', async () => {
    const database = await createTestDatabase();
    cleanups.push(database.drop);
    const testHost = await host(database.url, [step(text('First answer.')), step(text('Second answer.'))]);
    const store = testHost.store as PostgresSessionStore;
    const agent = await storedSession(testHost);
    await collectTurn(agent.runTurn({ text: 'first' }));
    const counts = countPostgres(store);
    const { result } = await collectTurn(agent.runTurn({ text: 'second' }));
    const { writeTransactions, roundTrips } = counts;
    expect(result.outcome).toBe('completed');
    expect(writeTransactions).toBe(3);
    // Three statements: the lease's take with the epoch bump and the session's generation, the prompt row, and the
    // answer with its usage, the session's fields and the lease release.
    expect(roundTrips).toBe(3);
    const rows = await store.loadConversation(agent.sessionId);
    expect(rows.map((row) => row.content)).toEqual(['first', 'First answer.', 'second', 'Second answer.']);
    expect(await store.getSession(agent.sessionId)).toMatchObject({ messageCount: 4, apiCallCount: 2 });
  });

  it("on PostgreSQL, opening a new session by id and taking its first turn's lease is one statement, the turn two more (issue 34.2)", async () => {
    const database = await createTestDatabase();
    cleanups.push(database.drop);
    const testHost = await host(database.url, [
      step(text('Warm answer.')),
      step(text('Only answer.')),
      step(text('New answer.')),
    ]);
    const store = testHost.store as PostgresSessionStore;
    // One turn on another session first, so that every statement below has been prepared on some pooled connection.
    const warm = await storedSession(testHost);
    await collectTurn(warm.runTurn({ text: 'warm' }));
    const counts = countPostgres(store);
    const agent = await testHost.openSession('header-named-session', { create: { source: 'api_server' } });
    if (!agent) throw new Error('expected an agent');
    expect(counts.roundTrips).toBe(1);
    const { result } = await collectTurn(agent.runTurn({ text: 'hello' }));
    expect(result.outcome).toBe('completed');
    // The open (with the lease the session is born with), the prompt row, the answer with the lease's release.
    expect(counts.roundTrips).toBe(3);
    expect(counts.writeTransactions).toBe(3);
    expect(await store.getSession('header-named-session')).toMatchObject({ source: 'api_server', messageCount: 2 });
    // The born lease was the turn's (fence epoch 1) and its last commit released it: another holder takes it at once.
    const other = await store.acquireTurnLease('header-named-session', {
      holder: 'other',
      turnId: 'turn_other',
      ttlMs: 60_000,
      waitMs: 0,
    });
    expect(other.fence.epoch).toBe(2);
    await other.release();
    // A new session's first turn (a gateway's or ACP's, created at it): the untitled create is one statement too.
    const fresh = await testHost.newSession({ source: 'tui' });
    const lazy = countPostgres(store);
    expect((await collectTurn(fresh.runTurn({ text: 'new' }))).result.outcome).toBe('completed');
    expect(lazy.roundTrips).toBe(4);
    expect((await store.loadConversation(fresh.sessionId)).map((row) => row.role)).toEqual(['user', 'assistant']);
    // Opening it again (not live any more) finds it, creates nothing, and reads its transcript.
    expect(testHost.releaseAgent('header-named-session')).toBe(true);
    const again = await testHost.openSession('header-named-session', { create: { source: 'api_server' } });
    expect((await again?.history())?.map((row) => row.content)).toEqual(['hello', 'Only answer.']);
  });
});
