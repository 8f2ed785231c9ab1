import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import type { SessionStore, UsageEntry } from '../../src/store/types.js';
import type { CostStatus, Usage } from '../../src/types.js';
import {
  assistant,
  openTestStore,
  STORE_LOCATIONS,
  type StoreLocation,
  sessionId,
  steppingClock,
  user,
} from './helpers.js';

function entry(task: UsageEntry['task'], model: string, costStatus: CostStatus, tokens: number): UsageEntry {
  const usage: Usage = {
    inputTokens: tokens,
    outputTokens: tokens + 1,
    cacheReadTokens: 2,
    cacheWriteTokens: 3,
    reasoningTokens: 4,
    totalTokens: 2 * tokens + 1,
    apiCalls: 1,
  };
  return { provider: 'openai', model, task, usage, costUsd: tokens / 1000, costStatus };
}

/** The session's counters and usage rows without ids and times, to compare two sessions written two ways. */
async function written(store: SessionStore, id: string) {
  const row = await store.getSession(id);
  const usage = await store.usageByModel(id);
  const messages = await store.loadConversation(id);
  return {
    session: {
      messageCount: row?.messageCount,
      toolCallCount: row?.toolCallCount,
      apiCallCount: row?.apiCallCount,
      inputTokens: row?.inputTokens,
      outputTokens: row?.outputTokens,
      cacheReadTokens: row?.cacheReadTokens,
      cacheWriteTokens: row?.cacheWriteTokens,
      reasoningTokens: row?.reasoningTokens,
      estimatedCostUsd: Number(row?.estimatedCostUsd.toFixed(9)),
      costStatus: row?.costStatus,
      systemPrompt: row?.systemPrompt,
      modelConfig: row?.modelConfig,
    },
    usage: usage.map(({ sessionId: _session, updatedAt: _updated, costUsd, ...rest }) => ({
      ...rest,
      costUsd: Number(costUsd.toFixed(9)),
    })),
    messages: messages.map(({ rowId: _row, sessionId: _session, timestamp: _time, ...rest }) => rest),
  };
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  return HermesError.isInstance(error) ? error.code : undefined;
}

describe.each<StoreLocation>(STORE_LOCATIONS)('commitTurn (%s)', (location) => {
  it('writes rows, usage, session fields and display marks as the single-purpose calls would', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const [one, two] = [sessionId(), sessionId()];
    await store.createSession({ id: one, systemPrompt: 'old' });
    await store.createSession({ id: two, systemPrompt: 'old' });
    const usage = [
      entry('main', 'gpt-a', 'actual', 10),
      entry('main', 'gpt-a', 'estimated', 20),
      entry('title', 'gpt-b', 'included', 5),
      entry('subagent', 'gpt-c', 'unknown', 7),
    ];
    const later = [entry('main', 'gpt-a', 'included', 1), entry('main', 'gpt-d', 'actual', 2)];
    const calls = [{ id: 'call_1', name: 'todo', arguments: '{}' }];

    // One session by the single-purpose calls.
    const [userRow] = await store.appendMessages(one, [user('hello', { turnId: 't1' })]);
    await store.appendMessages(one, [assistant('', { turnId: 't1', toolCalls: calls }), assistant('done')]);
    for (const item of usage) await store.recordUsage(one, item);
    await store.updateSession(one, { systemPrompt: 'new', modelConfig: { prompt_fingerprint: 'f' } });
    await store.updateMessageDisplay(userRow as number, { turn_failed: true });
    for (const item of later) await store.recordUsage(one, item);

    // The other by commits.
    const [otherUser] = await store.commitTurn(two, { rows: [user('hello', { turnId: 't1' })] });
    const ids = await store.commitTurn(two, {
      rows: [assistant('', { turnId: 't1', toolCalls: calls }), assistant('done')],
      usage,
      session: { systemPrompt: 'new', modelConfig: { prompt_fingerprint: 'f' } },
      display: [{ rowId: otherUser as number, displayMetadata: { turn_failed: true } }],
    });
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBeGreaterThan(ids[0] as number);
    expect(ids[0]).toBeGreaterThan(otherUser as number);
    expect(await store.commitTurn(two, { usage: later })).toEqual([]);

    expect(await written(store, two)).toEqual(await written(store, one));
    const session = await store.getSession(two);
    expect(session).toMatchObject({ messageCount: 3, toolCallCount: 1, costStatus: 'estimated', systemPrompt: 'new' });
  });

  it('releases the lease of its owner only, in the same commit', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    const lease = await store.acquireTurnLease(id, { holder: 'me', turnId: 't1', ttlMs: 60_000, waitMs: 0 });
    await store.commitTurn(id, { rows: [user('x')], lease: { holder: 'me', turnId: 'other', release: true } });
    expect(await codeOf(store.acquireTurnLease(id, { holder: 'you', turnId: 't2', ttlMs: 60_000, waitMs: 0 }))).toBe(
      'lease_timeout',
    );
    await store.commitTurn(id, { rows: [assistant('y')], lease: { holder: 'me', turnId: 't1', release: true } });
    const next = await store.acquireTurnLease(id, { holder: 'you', turnId: 't2', ttlMs: 60_000, waitMs: 0 });
    await next.release();
    await lease.release();
  });

  it('with a fence, a commit after another holder took the lease over is refused with lease_lost and writes nothing', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    await store.createSession({ id });
    const first = await store.acquireTurnLease(id, { holder: 'a', turnId: 't1', ttlMs: 1_000, waitMs: 0 });
    await store.commitTurn(id, { rows: [user('kept', { turnId: 't1' })] }, { fence: first.fence });
    clock.advance(2_000);
    const second = await store.acquireTurnLease(id, { holder: 'b', turnId: 't2', ttlMs: 60_000, waitMs: 0 });
    const late = store.commitTurn(
      id,
      {
        rows: [assistant('late', { turnId: 't1' })],
        usage: [entry('main', 'gpt-a', 'actual', 1)],
        session: { systemPrompt: 'late' },
        lease: { holder: 'a', turnId: 't1', release: true },
      },
      { fence: first.fence },
    );
    expect(await codeOf(late)).toBe('lease_lost');
    expect((await store.loadConversation(id)).map((row) => row.content)).toEqual(['kept']);
    expect(await store.usageByModel(id)).toEqual([]);
    expect((await store.getSession(id))?.systemPrompt).toBeNull();
    expect(await codeOf(store.acquireTurnLease(id, { holder: 'c', turnId: 't3', ttlMs: 1_000, waitMs: 0 }))).toBe(
      'lease_timeout',
    );
    await store.commitTurn(id, { rows: [assistant('new turn', { turnId: 't2' })] }, { fence: second.fence });
    expect((await store.loadConversation(id)).map((row) => row.content)).toEqual(['kept', 'new turn']);
    expect(second.generation).toEqual({ lastRowId: expect.any(Number), rewindCount: 0 });
    await second.release();
  });

  it('setTitle stores a generated title and its call usage together', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    const stored = await store.setTitle(id, 'Trip To Rome', 'llm', { usage: [entry('title', 'gpt-b', 'actual', 3)] });
    expect(stored).toBe('Trip To Rome');
    expect(await store.getSession(id)).toMatchObject({ title: 'Trip To Rome', titleSource: 'llm', apiCallCount: 1 });
    expect((await store.usageByModel(id)).map((row) => [row.task, row.usage.inputTokens])).toEqual([['title', 3]]);
  });

  it('a missing session fails with session_not_found and writes nothing', async () => {
    const store = await openTestStore(location);
    const missing = sessionId();
    expect(
      await codeOf(store.commitTurn(missing, { rows: [user('x')], usage: [entry('main', 'gpt-a', 'actual', 1)] })),
    ).toBe('session_not_found');
    expect(await store.getSession(missing)).toBeNull();
    expect(await store.usageByModel(missing)).toEqual([]);
  });
});
