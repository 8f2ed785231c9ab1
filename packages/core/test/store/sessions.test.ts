import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import type { Usage } from '../../src/types.js';
import {
  assistant,
  openTestStore,
  STORE_LOCATIONS,
  type StoreLocation,
  sessionId,
  steppingClock,
  temporaryDirectory,
  tool,
  user,
} from './helpers.js';

function usage(partial: Partial<Usage>): Usage {
  return {
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    totalTokens: (partial.inputTokens ?? 0) + (partial.outputTokens ?? 0),
    apiCalls: 1,
    ...partial,
  };
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  return HermesError.isInstance(error) ? error.code : undefined;
}

describe.each<StoreLocation>(STORE_LOCATIONS)('sessions (%s)', (location) => {
  it('createSession writes the row and its seed rows in one go, and fails when the id exists', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    const row = await store.createSession(
      {
        id,
        source: 'acp',
        model: 'anthropic:claude',
        modelConfig: { base_url: 'http://localhost:1234', yolo: true },
        systemPrompt: 'prompt',
        cwd: '/tmp/x',
        hidden: false,
      },
      [
        user('seeded question'),
        assistant('', { toolCalls: [{ id: 'c', name: 'todo', arguments: '{}' }] }),
        tool('c', 'todo', 'ok'),
      ],
    );
    expect(row).toMatchObject({
      id,
      source: 'acp',
      kind: 'root',
      title: null,
      titleSource: null,
      model: 'anthropic:claude',
      modelConfig: { base_url: 'http://localhost:1234', yolo: true },
      systemPrompt: 'prompt',
      cwd: '/tmp/x',
      startedAt: clock.now(),
      lastActivityAt: clock.now(),
      endedAt: null,
      messageCount: 3,
      toolCallCount: 1,
      costStatus: 'unknown',
      rewindCount: 0,
      hidden: false,
    });
    const rows = await store.loadConversation(id);
    expect(rows.map((message) => [message.role, message.turnId, message.timestamp])).toEqual([
      ['user', null, clock.now()],
      ['assistant', null, clock.now()],
      ['tool', null, clock.now()],
    ]);
    expect(await codeOf(store.createSession({ id }))).toBe('session_exists');
    expect(await store.getSession('missing')).toBeNull();
  });

  it('getOrCreateSession creates a missing session once, returns an existing one unchanged, and races end on one row', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    const made = await store.getOrCreateSession({ id, source: 'api_server', model: 'custom:m', cwd: '/tmp/y' });
    expect(made.created).toBe(true);
    expect(made.row).toEqual(await store.getSession(id));
    expect(made.row).toMatchObject({
      id,
      source: 'api_server',
      kind: 'root',
      title: null,
      model: 'custom:m',
      modelConfig: {},
      cwd: '/tmp/y',
      startedAt: clock.now(),
      endedAt: null,
      messageCount: 0,
      inputTokens: 0,
      estimatedCostUsd: 0,
      costStatus: 'unknown',
      hidden: false,
    });
    await store.appendMessages(id, [user('hello')]);
    await store.recordUsage(id, {
      provider: 'custom',
      model: 'm',
      task: 'main',
      usage: usage({ inputTokens: 12, outputTokens: 3 }),
      costUsd: 0.5,
      costStatus: 'actual',
    });
    const existing = await store.getOrCreateSession({ id, source: 'other', model: 'other:x' });
    expect(existing.created).toBe(false);
    expect(existing.row).toEqual(await store.getSession(id));
    expect(existing.row).toMatchObject({ source: 'api_server', model: 'custom:m', messageCount: 1, inputTokens: 12 });
    expect(await store.loadConversation(id)).toHaveLength(1);

    const raced = sessionId();
    const results = await Promise.all(
      Array.from({ length: 5 }, () => store.getOrCreateSession({ id: raced, source: 'api_server' })),
    );
    expect(results.filter((result) => result.created)).toHaveLength(1);
    for (const result of results) expect(result.row.id).toBe(raced);
    expect((await store.listSessions({})).items.filter((item) => item.id === raced)).toHaveLength(1);
    await store.close();
  });

  it('getOrCreateSession with a lease: a created session is born with it held at epoch 1; a found one gets none', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    const lease = { holder: 'host-a', turnId: 'turn_born', ttlMs: 60_000 };
    const made = await store.getOrCreateSession({ id, source: 'api_server' }, { lease });
    expect(made.created).toBe(true);
    expect(made.lease?.fence).toEqual({ sessionId: id, epoch: 1 });
    expect(made.lease?.generation).toEqual({ lastRowId: 0, rewindCount: 0 });
    const other = { holder: 'host-b', turnId: 'turn_other', ttlMs: 60_000, waitMs: 0 };
    expect(await codeOf(store.acquireTurnLease(id, other))).toBe('lease_timeout');
    // Its commits pass the fence, and the lease refreshes and releases as an acquired one does.
    const born = made.lease;
    if (!born) throw new Error('expected a lease');
    await store.commitTurn(id, { rows: [user('hi', { turnId: 'turn_born' })] }, { fence: born.fence });
    expect(await born.refresh()).toBe(true);
    await born.release();
    const taken = await store.acquireTurnLease(id, other);
    expect(taken.fence.epoch).toBe(2);
    await taken.release();

    const found = await store.getOrCreateSession({ id, source: 'api_server' }, { lease });
    expect(found).toMatchObject({ created: false, lease: null });
    const free = await store.acquireTurnLease(id, other);
    expect(free.fence.epoch).toBe(3);
    await free.release();
    await store.close();
  });

  it("getOrCreateSession with a run: a created session gets the run's queued row in the same write; a found one gets none (ADR 0088)", async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    const lease = { holder: 'host-a', turnId: 'turn_born', ttlMs: 60_000 };
    const run = {
      id: 'run_born_with_its_session',
      input: { body: { input: 'hi' }, fingerprint: 'f' },
      holder: 'host-a',
    };
    const made = await store.getOrCreateSession({ id, source: 'api_server' }, { lease, run });
    expect(made.created).toBe(true);
    expect(made.lease?.fence).toEqual({ sessionId: id, epoch: 1 });
    const row = await store.runs.get(run.id);
    // What `runs.create` writes for the same run.
    expect(row).toMatchObject({
      id: run.id,
      sessionId: id,
      status: 'queued',
      holder: 'host-a',
      input: run.input,
      idempotencyKey: null,
      turnId: null,
      createdAt: clock.now(),
      updatedAt: clock.now(),
      startedAt: null,
      endedAt: null,
    });
    // It moves on as any run does.
    await store.runs.update(run.id, { status: 'running', turnId: 'turn_born', startedAt: clock.now() });
    expect((await store.runs.get(run.id))?.status).toBe('running');
    await made.lease?.release();

    const again = { ...run, id: 'run_of_a_found_session' };
    const found = await store.getOrCreateSession({ id, source: 'api_server' }, { lease, run: again });
    expect(found).toMatchObject({ created: false, lease: null });
    expect(await store.runs.get(again.id)).toBeNull();
    await store.close();
  });

  it('appendMessages returns increasing ids in order and updates counters and last activity in the same write', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    await store.createSession({ id });
    clock.advance(5_000);
    const ids = await store.appendMessages(id, [
      user('q'),
      assistant('', {
        toolCalls: [
          { id: 'a', name: 'read_file', arguments: '{}' },
          { id: 'b', name: 'read_file', arguments: '{}' },
        ],
      }),
      tool('a', 'read_file', 'A'),
      tool('b', 'read_file', 'B'),
    ]);
    expect(ids).toHaveLength(4);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(4);
    const session = await store.getSession(id);
    expect(session).toMatchObject({ messageCount: 4, toolCallCount: 2, lastActivityAt: clock.now() });
    expect(await store.generation(id)).toEqual({ lastRowId: ids[3], rewindCount: 0 });
    expect(await store.appendMessages(id, [])).toEqual([]);
    expect(await codeOf(store.appendMessages('missing', [user('x')]))).toBe('session_not_found');
    expect(await codeOf(store.loadConversation('missing'))).toBe('session_not_found');
    expect(await store.generation('missing')).toBeNull();
  });

  it('stored rows round-trip every field, including the display projection (§24.4)', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    const diffs = [{ path: '/a.ts', oldText: 'x', newText: 'y' }];
    const [assistantId, toolId] = await store.appendMessages(id, [
      {
        role: 'assistant',
        content: 'thinking done',
        turnId: 'turn_9',
        toolCalls: [{ id: 'call_7', name: 'patch', arguments: '{"path":"/a.ts"}' }],
        reasoning: 'because',
        providerMetadata: { anthropic: { signature: 'sig' } },
        timestamp: 42,
        tokenCount: 17,
        finishReason: 'tool_calls',
        displayKind: 'custom_kind',
        displayMetadata: { todos: [{ id: '1', content: 'x', status: 'pending' }] },
      },
      {
        role: 'tool',
        content: '--- a\n+++ b',
        turnId: 'turn_9',
        toolCallId: 'call_7',
        toolName: 'patch',
        displayMetadata: { status: 'running' },
      },
      {
        role: 'user',
        content: 'look at this',
        contentParts: [
          { type: 'text', text: 'look at this' },
          { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
        ],
      },
    ]);
    await store.updateMessageDisplay(toolId as number, { status: 'completed', diffs });
    const [first, second, third] = await store.loadConversation(id);
    expect(first).toEqual({
      rowId: assistantId,
      sessionId: id,
      turnId: 'turn_9',
      role: 'assistant',
      content: 'thinking done',
      contentParts: null,
      toolCalls: [{ id: 'call_7', name: 'patch', arguments: '{"path":"/a.ts"}' }],
      toolCallId: null,
      toolName: null,
      reasoning: 'because',
      providerMetadata: { anthropic: { signature: 'sig' } },
      timestamp: 42,
      tokenCount: 17,
      finishReason: 'tool_calls',
      active: true,
      compacted: false,
      supersededBy: null,
      displayKind: 'custom_kind',
      displayMetadata: { todos: [{ id: '1', content: 'x', status: 'pending' }] },
    });
    expect(second).toMatchObject({
      toolCallId: 'call_7',
      toolName: 'patch',
      displayMetadata: { status: 'completed', diffs },
    });
    expect(third?.contentParts).toEqual([
      { type: 'text', text: 'look at this' },
      { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
    ]);
    expect(await codeOf(store.updateMessageDisplay(987_654, null))).toBe('invalid_input');
  });

  it('titles: trimmed, cut to 100 characters, empty is null, unique case-insensitively', async () => {
    const store = await openTestStore(location);
    const a = sessionId();
    const b = sessionId();
    await store.createSession({ id: a });
    await store.createSession({ id: b });
    expect(await store.setTitle(a, '   Trip planning  ', 'user')).toBe('Trip planning');
    expect(await store.setTitle(a, `${'x'.repeat(150)}`, 'user')).toBe('x'.repeat(100));
    expect(await store.setTitle(a, '   ', 'user')).toBeNull();
    expect((await store.getSession(a))?.titleSource).toBeNull();
    expect(await store.setTitle(a, 'Trip planning', 'user')).toBe('Trip planning');

    expect(await codeOf(store.setTitle(b, 'TRIP PLANNING', 'user'))).toBe('title_taken');
    expect(await store.isTitleTaken('trip planning')).toBe(true);
    expect(await store.isTitleTaken('trip planning', a)).toBe(false);
    expect(await store.isTitleTaken('   ')).toBe(false);
    expect(await store.setTitle(b, 'trip PLANNING', 'llm')).toBe('trip PLANNING #2');
    expect(await store.nextAvailableTitle('Trip Planning')).toBe('Trip Planning #3');
    expect(await store.nextAvailableTitle('Fresh idea')).toBe('Fresh idea');
    // Renaming one's own title with a different case is not a conflict.
    expect(await store.setTitle(a, 'TRIP planning', 'user')).toBe('TRIP planning');
    expect((await store.resolveSession('trip planning'))?.id).toBe(a);
    expect((await store.resolveSession(b))?.id).toBe(b);
    expect(await store.resolveSession('nothing like it')).toBeNull();
  });

  it('readSession reads, by id or by title, what getSession, loadConversation with inactive rows, usageByModel and the lease say', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id, title: 'Resume me', model: 'p:m', modelConfig: { yolo: true }, cwd: '/tmp/r' });
    const [first] = await store.appendMessages(id, [
      user('look', {
        contentParts: [
          { type: 'text', text: 'look' },
          { type: 'text', text: 'here' },
        ],
        turnId: 't1',
      }),
      assistant('', {
        toolCalls: [{ id: 'c1', name: 'todo', arguments: '{"a":1}' }],
        reasoning: 'think',
        providerMetadata: { openai: { id: 'x' } },
        tokenCount: 12,
        finishReason: 'tool-calls',
      }),
      { ...tool('c1', 'todo', 'ok'), displayKind: 'tool', displayMetadata: { todos: [{ text: 'a' }] } },
      user('again'),
    ]);
    await store.rewind(id, { beforeRowId: (first as number) + 3 });
    await store.appendMessages(id, [user('instead')]);
    for (const task of ['title', 'main'] as const)
      await store.recordUsage(id, {
        provider: 'p',
        model: 'm',
        task,
        usage: usage({ inputTokens: 7, outputTokens: 3 }),
        costUsd: 0.25,
        costStatus: 'estimated',
      });
    await store.acquireTurnLease(id, { holder: 'holder-a', turnId: 't9', ttlMs: 60_000, waitMs: 0 });

    const expected = {
      session: await store.getSession(id),
      rows: await store.loadConversation(id, { includeInactive: true }),
      usage: await store.usageByModel(id),
      leaseHolder: 'holder-a',
    };
    expect(expected.rows.some((row) => !row.active)).toBe(true);
    expect(await store.readSession(id)).toEqual(expected);
    expect(await store.readSession('RESUME me')).toEqual(expected);
    expect(await store.readSession('nothing like it')).toBeNull();
    // No run bus listens on this store: asked for the listening instances, it lists none.
    const { listening, ...withListing } = (await store.readSession(id, { listeningBesides: 'me' })) ?? {};
    expect(withListing).toEqual(expected);
    expect(listening?.size).toBe(0);
    expect(listening?.covers([])).toBe(true);

    const empty = sessionId();
    await store.createSession({ id: empty });
    expect(await store.readSession(empty)).toEqual({
      session: await store.getSession(empty),
      rows: [],
      usage: [],
      leaseHolder: null,
    });
  });

  it('a user title is never replaced by an llm, derived or branch title', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id, title: 'Mine' });
    expect((await store.getSession(id))?.titleSource).toBe('user');
    for (const source of ['llm', 'derived', 'branch'] as const) {
      expect(await store.setTitle(id, `Generated by ${source}`, source)).toBe('Mine');
    }
    expect((await store.getSession(id))?.title).toBe('Mine');
    const other = sessionId();
    await store.createSession({ id: other });
    expect(await store.setTitle(other, 'Generated', 'llm')).toBe('Generated');
    expect(await store.setTitle(other, 'Chosen', 'user')).toBe('Chosen');
  });

  it('the suffix rule takes the first free number among many alike titles, case-insensitively, gaps first', async () => {
    const store = await openTestStore(location);
    const ids: string[] = [];
    for (let index = 0; index < 8; index += 1) {
      const id = sessionId();
      ids.push(id);
      await store.createSession({ id });
      expect(await store.setTitle(id, 'Same Answer', 'llm')).toBe(
        index === 0 ? 'Same Answer' : `Same Answer #${index + 1}`,
      );
    }
    // A gap (#4 freed) is filled before the next number; another case and an unrelated longer title do not count.
    await store.setTitle(ids[2] as string, 'Elsewhere', 'user');
    await store.setTitle(ids[3] as string, 'same answer #4 extra', 'user');
    expect(await store.nextAvailableTitle('SAME ANSWER')).toBe('SAME ANSWER #3');
    const next = sessionId();
    await store.createSession({ id: next });
    expect(await store.setTitle(next, 'same answer', 'llm')).toBe('same answer #3');
    expect(await store.nextAvailableTitle('Same Answer #7')).toBe('Same Answer #4');
    // A session keeps a numbered title of its own when it asks for it again.
    expect(await store.setTitle(ids[7] as string, 'Same Answer', 'llm')).toBe('Same Answer #4');
    expect(await store.setTitle(ids[7] as string, 'Same Answer', 'derived')).toBe('Same Answer #4');
    // A base at the length limit is cut to make room for the number.
    const long = 'L'.repeat(100);
    for (const expected of [long, `${'L'.repeat(97)} #2`, `${'L'.repeat(97)} #3`]) {
      const id = sessionId();
      await store.createSession({ id });
      expect(await store.setTitle(id, long, 'llm')).toBe(expected);
    }
  });

  it('a pending title taken in the meantime gets the suffix rule at creation', async () => {
    const store = await openTestStore(location);
    await store.createSession({ id: sessionId(), title: 'Report' });
    const row = await store.createSession({ id: sessionId(), title: 'report', titleSource: 'user' });
    expect(row.title).toBe('report #2');
  });

  it('51. listSessions leaves out hidden and subagent sessions, orders by last activity and previews the first user message', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const old = sessionId();
    const recent = sessionId();
    const hidden = sessionId();
    const child = sessionId();
    const branchParent = sessionId();
    await store.createSession({ id: old, source: 'cli', cwd: '/repo/a' }, [
      assistant('seeded greeting'),
      user('  first\n\n  question\twith   spaces  '),
      user('second question'),
    ]);
    clock.advance(10);
    await store.createSession({ id: recent, source: 'tui', cwd: '/repo/b', title: 'Recent work' });
    await store.appendMessages(recent, [user(`long ${'word '.repeat(60)}`)]);
    clock.advance(10);
    await store.createSession({ id: hidden, hidden: true });
    clock.advance(10);
    await store.createSession({ id: child, kind: 'subagent', source: 'subagent', hidden: true, parentSessionId: old });
    clock.advance(10);
    await store.createSession({ id: branchParent, source: 'cli' });
    clock.advance(10);
    const branch = await store.branch(branchParent, { id: sessionId() });
    clock.advance(10);
    await store.appendMessages(old, [assistant('touch old last')]);

    const page = await store.listSessions();
    expect(page.items.map((item) => item.id)).toEqual([old, branch.id, branchParent, recent]);
    expect(page.nextCursor).toBeNull();
    const first = page.items[0];
    expect(first?.preview).toBe('first question with spaces');
    expect(first?.cwd).toBe('/repo/a');
    expect(first?.messageCount).toBe(4);
    const recentItem = page.items.find((item) => item.id === recent);
    expect(recentItem?.preview).toHaveLength(120);
    expect(recentItem?.title).toBe('Recent work');
    expect(page.items.find((item) => item.id === branchParent)?.preview).toBe('');

    const withHidden = await store.listSessions({ includeHidden: true });
    expect(withHidden.items.map((item) => item.id)).toContain(hidden);
    expect(withHidden.items.map((item) => item.id)).not.toContain(child);
    const subagents = await store.listSessions({ kinds: ['subagent'], includeHidden: true });
    expect(subagents.items.map((item) => item.id)).toEqual([child]);
    expect((await store.listSessions({ kinds: ['subagent'] })).items).toEqual([]);

    expect((await store.listSessions({ sources: ['tui'] })).items.map((item) => item.id)).toEqual([recent]);
    expect((await store.listSessions({ excludeSources: ['cli'] })).items.map((item) => item.id)).toEqual([recent]);
    expect((await store.listSessions({ cwd: '/repo/b' })).items.map((item) => item.id)).toEqual([recent]);
    expect((await store.listSessions({ cwd: '/repo' })).items).toEqual([]);
    expect((await store.listSessions({ titlePrefix: 'recent' })).items.map((item) => item.id)).toEqual([recent]);
    expect((await store.listSessions({ titlePrefix: '%' })).items).toEqual([]);
  });

  it('listSessions pages with an opaque cursor over last activity desc, id desc, ties included', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const ids: string[] = [];
    for (let index = 0; index < 7; index += 1) {
      const id = sessionId();
      ids.push(id);
      await store.createSession({ id });
      if (index % 2 === 1) clock.advance(1); // pairs share a timestamp
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.listSessions({ limit: 3, ...(cursor === undefined ? {} : { cursor }) });
      seen.push(...page.items.map((item) => item.id));
      cursor = page.nextCursor ?? undefined;
      pages += 1;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    const expected = [...ids].sort((left, right) => {
      const activity = (id: string) => Math.floor(ids.indexOf(id) / 2);
      return activity(right) - activity(left) || (right < left ? -1 : 1);
    });
    expect(seen).toEqual(expected);
    expect(await codeOf(store.listSessions({ cursor: 'not-a-cursor' }))).toBe('invalid_input');
  });

  it('updateSession, end, reopen and hide change only their fields and touch last activity', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    await store.createSession({ id, model: 'a:b' });
    clock.advance(100);
    await store.updateSession(id, {
      model: 'c:d',
      modelConfig: { reasoning_effort: 'low', compression_cooldown_until: 5 },
      systemPrompt: 'new prompt',
      cwd: '/elsewhere',
      title: 'Named',
    });
    expect(await store.getSession(id)).toMatchObject({
      model: 'c:d',
      modelConfig: { reasoning_effort: 'low', compression_cooldown_until: 5 },
      systemPrompt: 'new prompt',
      cwd: '/elsewhere',
      title: 'Named',
      titleSource: 'user',
      lastActivityAt: clock.now(),
    });
    await store.endSession(id, 'closed');
    expect(await store.getSession(id)).toMatchObject({ endedAt: clock.now(), endReason: 'closed' });
    await store.reopenSession(id);
    expect(await store.getSession(id)).toMatchObject({ endedAt: null, endReason: null });
    await store.setHidden(id, true);
    expect((await store.getSession(id))?.hidden).toBe(true);
    for (const call of [
      () => store.endSession('missing', 'x'),
      () => store.reopenSession('missing'),
      () => store.setHidden('missing', true),
      () => store.updateSession('missing', { model: null }),
      () => store.deleteSession('missing'),
      () => store.setTitle('missing', 'x', 'user'),
      () => store.touchSession('missing'),
    ]) {
      // Started one at a time: a backend with real I/O would leave the later rejections unhandled meanwhile.
      expect(await codeOf(call())).toBe('session_not_found');
    }
  });

  it('deleteSession removes messages, leases, responses, runs and usage, and orphans children', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    const child = sessionId();
    await store.createSession({ id });
    await store.createSession({ id: child, kind: 'branch', parentSessionId: id });
    await store.appendMessages(id, [user('bye')]);
    await store.acquireTurnLease(id, { holder: 'h', turnId: 't', ttlMs: 1_000, waitMs: 0 });
    await store.responses.put({
      id: 'resp_1',
      sessionId: id,
      previousResponseId: null,
      conversation: 'c',
      model: 'm',
      status: 'completed',
      request: {},
      output: null,
      usage: null,
      error: null,
      firstRowId: null,
      lastRowId: null,
      createdAt: 1,
      completedAt: 2,
    });
    const run = await store.runs.create({ sessionId: id, input: 'x', holder: 'h' });
    await store.recordUsage(id, {
      provider: 'p',
      model: 'm',
      task: 'main',
      usage: usage({}),
      costUsd: 0,
      costStatus: 'unknown',
    });

    await store.deleteSession(id);

    expect(await store.getSession(id)).toBeNull();
    expect(await store.responses.get('resp_1')).toBeNull();
    expect(await store.runs.get(run.id)).toBeNull();
    expect(await store.usageByModel(id)).toEqual([]);
    expect(await store.search('bye')).toEqual([]);
    expect((await store.getSession(child))?.parentSessionId).toBeNull();
    // The lease went with the session: a new session with the same id can be leased at once.
    await store.createSession({ id });
    await expect(
      store.acquireTurnLease(id, { holder: 'other', turnId: 't2', ttlMs: 1_000, waitMs: 0 }),
    ).resolves.toBeDefined();
  });

  it('recordTurn creates a missing session, appends the rows and records the usage in one call, as the separate calls would', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    const entry = {
      provider: 'p',
      model: 'm',
      task: 'main' as const,
      usage: usage({ inputTokens: 10, outputTokens: 2 }),
      costUsd: 0.1,
      costStatus: 'estimated' as const,
    };
    const ids = await store.recordTurn(id, {
      create: { source: 'api_server', title: 'Derived' },
      rows: [
        user('hi', { turnId: 't1' }),
        assistant('', { turnId: 't1', toolCalls: [{ id: 'c', name: 'todo', arguments: '{}' }] }),
        { ...tool('c', 'todo', 'ok'), turnId: 't1' },
        assistant('hello', { turnId: 't1' }),
      ],
      usage: entry,
    });
    expect(ids).toHaveLength(4);
    // The new session is born with its rows counted (ADR 0093): the same counters the append would have set.
    expect((await store.loadConversation(id)).map((row) => row.rowId)).toEqual(ids);
    expect(await store.getSession(id)).toMatchObject({
      source: 'api_server',
      title: 'Derived',
      messageCount: 4,
      toolCallCount: 1,
      apiCallCount: 1,
      inputTokens: 10,
      outputTokens: 2,
      costStatus: 'estimated',
    });
    // An existing session is appended to (its fields kept), and the usage adds up.
    const more = await store.recordTurn(id, {
      create: { source: 'other', title: 'Ignored' },
      rows: [user('again', { turnId: 't2' }), assistant('still here', { turnId: 't2' })],
      usage: entry,
    });
    expect(more).toHaveLength(2);
    expect(Math.min(...more)).toBeGreaterThan(Math.max(...ids));
    expect(await store.getSession(id)).toMatchObject({ source: 'api_server', title: 'Derived', messageCount: 6 });
    expect((await store.usageByModel(id))[0]?.usage.inputTokens).toBe(20);
    expect((await store.loadConversation(id)).map((row) => row.content)).toEqual([
      'hi',
      '',
      'ok',
      'hello',
      'again',
      'still here',
    ]);
    // Without `create` a missing session fails, and nothing of the turn is written.
    const missing = sessionId();
    expect(await codeOf(store.recordTurn(missing, { rows: [user('x', { turnId: 't3' })], usage: entry }))).toBe(
      'session_not_found',
    );
    expect(await store.getSession(missing)).toBeNull();
  });

  it('loadConversation from a row id on reads that row and the later ones, active only unless asked (ADR 0093)', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    const first = await store.appendMessages(id, [user('one'), assistant('two')]);
    const second = await store.appendMessages(id, [user('three'), assistant('four')]);
    // Another session's rows in between are not part of it.
    const other = sessionId();
    await store.createSession({ id: other });
    await store.appendMessages(other, [user('elsewhere')]);
    const third = await store.appendMessages(id, [user('five')]);
    const contents = async (options: Parameters<typeof store.loadConversation>[1]) =>
      (await store.loadConversation(id, options)).map((row) => row.content);
    expect(await contents({ fromRowId: second[0] as number })).toEqual(['three', 'four', 'five']);
    expect(await contents({ fromRowId: (second[1] as number) + 1 })).toEqual(['five']);
    expect(await contents({ fromRowId: (third[0] as number) + 1 })).toEqual([]);
    expect(await contents({ fromRowId: 0 })).toEqual(['one', 'two', 'three', 'four', 'five']);
    // After a rewind (inactive rows, the kept ones written again): the same rows as the whole read from that id on.
    await store.rewind(id, { beforeRowId: second[0] as number });
    for (const includeInactive of [false, true]) {
      const all = await store.loadConversation(id, { includeInactive });
      for (const fromRowId of [first[1] as number, second[0] as number, (third[0] as number) + 1]) {
        expect(await store.loadConversation(id, { includeInactive, fromRowId })).toEqual(
          all.filter((row) => row.rowId >= fromRowId),
        );
      }
    }
    expect(await codeOf(store.loadConversation(sessionId(), { fromRowId: 1 }))).toBe('session_not_found');
  });

  it('recordUsage adds to usage_by_model and session counters, leaves subagent usage out of the counters, and keeps the weakest cost status', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    await store.recordUsage(id, {
      provider: 'anthropic',
      model: 'claude',
      task: 'main',
      usage: usage({ inputTokens: 100, outputTokens: 20, cacheReadTokens: 40, reasoningTokens: 5 }),
      costUsd: 0.5,
      costStatus: 'actual',
    });
    expect((await store.getSession(id))?.costStatus).toBe('actual');
    await store.recordUsage(id, {
      provider: 'anthropic',
      model: 'claude',
      task: 'main',
      usage: usage({ inputTokens: 50, outputTokens: 10, cacheWriteTokens: 7 }),
      costUsd: 0.25,
      costStatus: 'estimated',
    });
    await store.recordUsage(id, {
      provider: 'local',
      model: 'llama',
      task: 'title',
      usage: usage({ inputTokens: 5, outputTokens: 1 }),
      costUsd: 0,
      costStatus: 'included',
    });
    await store.recordUsage(id, {
      provider: 'anthropic',
      model: 'claude',
      task: 'subagent',
      usage: usage({ inputTokens: 1_000, outputTokens: 1_000, apiCalls: 3 }),
      costUsd: 9,
      costStatus: 'unknown',
    });
    const session = await store.getSession(id);
    expect(session).toMatchObject({
      apiCallCount: 3,
      inputTokens: 155,
      outputTokens: 31,
      cacheReadTokens: 40,
      cacheWriteTokens: 7,
      reasoningTokens: 5,
      costStatus: 'estimated',
    });
    expect(session?.estimatedCostUsd).toBeCloseTo(0.75, 10);
    const rows = await store.usageByModel(id);
    expect(
      rows.map((row) => [row.task, row.provider, row.usage.apiCalls, row.usage.inputTokens, row.costStatus]),
    ).toEqual([
      ['main', 'anthropic', 2, 150, 'estimated'],
      ['subagent', 'anthropic', 3, 1_000, 'unknown'],
      ['title', 'local', 1, 5, 'included'],
    ]);
    expect(rows[0]?.usage.totalTokens).toBe(180);
    expect(
      await codeOf(
        store.recordUsage('missing', {
          provider: 'p',
          model: 'm',
          task: 'main',
          usage: usage({}),
          costUsd: 0,
          costStatus: 'unknown',
        }),
      ),
    ).toBe('session_not_found');
  });

  it('touchSession recomputes the active counters and touches last activity', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    await store.createSession({ id });
    await store.appendMessages(id, [
      user('a'),
      assistant('', { toolCalls: [{ id: 'x', name: 't', arguments: '{}' }] }),
    ]);
    clock.advance(1_000);
    await store.touchSession(id);
    expect(await store.getSession(id)).toMatchObject({
      messageCount: 2,
      toolCallCount: 1,
      lastActivityAt: clock.now(),
    });
  });

  it('operations after close fail with store_closed; closing twice is harmless', async () => {
    const store = await openTestStore(location);
    await store.close();
    await store.close();
    expect(await codeOf(store.getSession('x'))).toBe('store_closed');
    expect(await codeOf(store.appendMessages('x', [user('y')]))).toBe('store_closed');
  });
});

describe('the suffix rule on SQLite after many alike titles (ADR 0080)', () => {
  it('fills a gap freed by a deletion, a retitle or another connection on the same file, gaps first', async () => {
    const path = join(temporaryDirectory(), 'state.db');
    const store = await openTestStore(path);
    const titled = async (title: string, on = store): Promise<{ id: string; title: string | null }> => {
      const id = sessionId();
      await on.createSession({ id });
      return { id, title: await on.setTitle(id, title, 'llm') };
    };
    const made: { id: string; title: string | null }[] = [];
    for (let index = 0; index < 6; index += 1) made.push(await titled('Same Answer'));
    expect(made.map((entry) => entry.title)).toEqual([
      'Same Answer',
      'Same Answer #2',
      'Same Answer #3',
      'Same Answer #4',
      'Same Answer #5',
      'Same Answer #6',
    ]);
    // A deleted session's number is the next one given.
    await store.deleteSession((made[2] as { id: string }).id);
    expect((await titled('same answer')).title).toBe('same answer #3');
    expect((await titled('Same Answer')).title).toBe('Same Answer #7');
    // So is the number of a session whose title changed.
    await store.setTitle((made[1] as { id: string }).id, 'Something else', 'user');
    expect((await titled('Same Answer')).title).toBe('Same Answer #2');
    // Another connection on the same file frees #4: this one sees it too, and another connection's new title counts.
    const other = await openTestStore(path);
    await other.deleteSession((made[3] as { id: string }).id);
    expect((await titled('Same Answer')).title).toBe('Same Answer #4');
    expect((await titled('Same Answer', other)).title).toBe('Same Answer #8');
    expect((await titled('Same Answer')).title).toBe('Same Answer #9');
    expect(await store.nextAvailableTitle('Same Answer #2')).toBe('Same Answer #10');
  });
});
