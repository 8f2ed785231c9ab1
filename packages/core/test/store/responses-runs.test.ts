import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import type { ResponseRecord } from '../../src/store/types.js';
import {
  assistant,
  openTestStore,
  STORE_LOCATIONS,
  type StoreLocation,
  sessionId,
  steppingClock,
  user,
} from './helpers.js';

function response(overrides: Partial<ResponseRecord> & Pick<ResponseRecord, 'id' | 'sessionId'>): ResponseRecord {
  return {
    previousResponseId: null,
    conversation: null,
    model: 'hermes',
    status: 'completed',
    request: { instructions: 'be brief', input: [{ role: 'user', content: 'hi' }], metadata: {} },
    output: [{ type: 'message', content: [{ type: 'output_text', text: 'hello' }] }],
    usage: { input_tokens: 3, output_tokens: 1 },
    error: null,
    firstRowId: null,
    lastRowId: null,
    createdAt: 1_000,
    completedAt: 1_500,
    ...overrides,
  };
}

describe.each<StoreLocation>(STORE_LOCATIONS)('responses and runs (%s)', (location) => {
  it('50. a responses record can be stored, read back and deleted without touching the session messages', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id, source: 'api_server' });
    const [first, last] = await store.appendMessages(id, [user('hi'), assistant('hello')]);
    const record = response({
      id: 'resp_aaaaaaaaaaaaaaaaaaaaaaaa',
      sessionId: id,
      firstRowId: first as number,
      lastRowId: last as number,
    });

    await store.responses.put(record);
    expect(await store.responses.get(record.id)).toEqual(record);

    await store.responses.put({ ...record, status: 'incomplete', completedAt: null });
    expect((await store.responses.get(record.id))?.status).toBe('incomplete');

    expect(await store.responses.delete(record.id)).toBe(true);
    expect(await store.responses.delete(record.id)).toBe(false);
    expect(await store.responses.get(record.id)).toBeNull();
    expect((await store.loadConversation(id)).map((row) => row.content)).toEqual(['hi', 'hello']);
    expect((await store.getSession(id))?.messageCount).toBe(2);
  });

  it('latestForConversation returns the newest record of a named conversation; prune removes old ones', async () => {
    const clock = steppingClock(100_000);
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    await store.createSession({ id });
    await store.responses.put(response({ id: 'resp_1', sessionId: id, conversation: 'chat', createdAt: 10_000 }));
    await store.responses.put(response({ id: 'resp_2', sessionId: id, conversation: 'chat', createdAt: 20_000 }));
    await store.responses.put(response({ id: 'resp_3', sessionId: id, conversation: 'other', createdAt: 90_000 }));
    expect((await store.responses.latestForConversation('chat'))?.id).toBe('resp_2');
    expect(await store.responses.latestForConversation('none')).toBeNull();
    await store.responses.put(response({ id: 'resp_null', sessionId: id, request: null, createdAt: 95_000 }));
    expect((await store.responses.get('resp_null'))?.request).toBeNull();
    const error = await store.responses
      .put(response({ id: 'resp_orphan', sessionId: 'missing' }))
      .catch((caught: unknown) => caught);
    expect(HermesError.isInstance(error) && error.code).toBe('session_not_found');
    expect(await store.responses.prune(50_000)).toBe(2); // created before 100,000 − 50,000
    expect(await store.responses.get('resp_3')).not.toBeNull();
  });

  it('withOutputItems finds the records whose output holds one of the named items, and no other', async () => {
    const store = await openTestStore(location);
    const id = sessionId();
    await store.createSession({ id });
    const message = (itemId: string) => ({ id: itemId, type: 'message', content: [] });
    await store.responses.put(response({ id: 'resp_a', sessionId: id, output: [message('msg_a1')], createdAt: 1 }));
    await store.responses.put(
      response({ id: 'resp_b', sessionId: id, output: [message('msg_b1'), message('mcp_b2')], createdAt: 2 }),
    );
    await store.responses.put(response({ id: 'resp_null', sessionId: id, output: null, createdAt: 3 }));
    await store.responses.put(response({ id: 'resp_object', sessionId: id, output: { id: 'msg_a1' }, createdAt: 4 }));
    const ids = async (itemIds: string[]) => (await store.responses.withOutputItems(itemIds)).map((r) => r.id);
    expect(await ids(['mcp_b2'])).toEqual(['resp_b']);
    expect(await ids(['msg_b1', 'msg_a1'])).toEqual(['resp_a', 'resp_b']);
    expect(await ids(['msg_missing', "x' or 1=1 --"])).toEqual([]);
    expect(await ids([])).toEqual([]);
  });

  it('50. runs.create with a reused idempotency key returns the existing run within 24 hours, a new one after', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    await store.createSession({ id });
    const created = await store.runs.create({
      sessionId: id,
      input: { input: 'hi' },
      idempotencyKey: 'key-1',
      holder: 'host-a',
    });
    expect(created.existing).toBe(false);
    expect(created.id).toMatch(/^run_[A-Za-z0-9]{24}$/u);
    expect(created).toMatchObject({
      status: 'queued',
      holder: 'host-a',
      input: { input: 'hi' },
      createdAt: clock.now(),
    });

    clock.advance(23 * 60 * 60 * 1000);
    const again = await store.runs.create({
      sessionId: id,
      input: { input: 'different' },
      idempotencyKey: 'key-1',
      holder: 'host-b',
    });
    expect(again).toEqual({ ...created, existing: true });

    clock.advance(2 * 60 * 60 * 1000);
    const later = await store.runs.create({
      sessionId: id,
      input: { input: 'later' },
      idempotencyKey: 'key-1',
      holder: 'host-b',
    });
    expect(later.existing).toBe(false);
    expect(later.id).not.toBe(created.id);
    expect((await store.runs.get(created.id))?.idempotencyKey).toBeNull();

    const withoutKey = await store.runs.create({ sessionId: id, input: null, holder: 'h', id: 'run_given' });
    expect(withoutKey.id).toBe('run_given');
    const error = await store.runs
      .create({ sessionId: 'missing', input: null, holder: 'h' })
      .catch((caught: unknown) => caught);
    expect(HermesError.isInstance(error) && error.code).toBe('session_not_found');
  });

  it('50. runs left running by a dead holder are marked failed (orphaned); a heartbeat keeps live ones', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    await store.createSession({ id });
    const dead = await store.runs.create({ sessionId: id, input: 1, holder: 'dead-host' });
    const alive = await store.runs.create({ sessionId: id, input: 2, holder: 'live-host' });
    const done = await store.runs.create({ sessionId: id, input: 3, holder: 'dead-host' });
    await store.runs.update(dead.id, { status: 'running', startedAt: clock.now(), turnId: 'turn_x' });
    await store.runs.update(alive.id, { status: 'running', startedAt: clock.now() });
    await store.runs.update(done.id, { status: 'completed', result: { outcome: 'completed' }, endedAt: clock.now() });

    clock.advance(400_000);
    await store.runs.heartbeat('live-host');
    const marked = await store.runs.markOrphaned(clock.now() - 300_000);

    expect(marked).toBe(1);
    expect(await store.runs.get(dead.id)).toMatchObject({
      status: 'failed',
      error: { code: 'orphaned' },
      endedAt: clock.now(),
      turnId: 'turn_x',
    });
    expect((await store.runs.get(alive.id))?.status).toBe('running');
    expect((await store.runs.get(done.id))?.status).toBe('completed');

    expect((await store.runs.list({ status: ['failed'] })).map((run) => run.id)).toEqual([dead.id]);
    expect((await store.runs.list({ sessionId: id })).map((run) => run.id).sort()).toEqual(
      [dead.id, alive.id, done.id].sort(),
    );
    expect(await store.runs.list({ sessionId: id, limit: 1 })).toHaveLength(1);
    const error = await store.runs.update('run_missing', { status: 'failed' }).catch((caught: unknown) => caught);
    expect(HermesError.isInstance(error) && error.code).toBe('run_not_found');
  });

  it('a run update changes only the fields it names; JSON arrays, strings and nulls come back as written', async () => {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    await store.createSession({ id });
    const created = await store.runs.create({ sessionId: id, input: ['a', { b: [1, 2] }], holder: 'h' });
    expect(await store.runs.get(created.id)).toEqual({ ...created, existing: undefined, input: ['a', { b: [1, 2] }] });

    await store.runs.update(created.id, { status: 'running', turnId: 'turn_1', startedAt: 1_000 });
    await store.runs.update(created.id, { result: ['x', 2], error: 'text error', exitReason: 'steered' });
    clock.advance(5);
    await store.runs.update(created.id, { error: null, endedAt: 2_000 });
    const row = await store.runs.get(created.id);
    expect(row).toMatchObject({
      id: created.id,
      sessionId: id,
      status: 'running',
      turnId: 'turn_1',
      startedAt: 1_000,
      endedAt: 2_000,
      result: ['x', 2],
      error: null,
      exitReason: 'steered',
      holder: 'h',
      idempotencyKey: null,
      createdAt: created.createdAt,
      updatedAt: clock.now(),
    });
    expect(typeof row?.createdAt).toBe('number');

    await store.runs.update(created.id, { status: 'completed', result: null });
    expect(await store.runs.get(created.id)).toMatchObject({ status: 'completed', result: null, turnId: 'turn_1' });
    const settled = await store.runs.update(created.id, { status: 'failed' }).catch((caught: unknown) => caught);
    expect(HermesError.isInstance(settled) && settled.code).toBe('run_settled');
    expect((await store.runs.get(created.id))?.status).toBe('completed');
    expect(await store.runs.get('run_missing')).toBeNull();
  });
});

describe('lookups without side effects', () => {
  it('findByIdempotencyKey finds a recent run without creating one, and responses.count counts records', async () => {
    const { openSqliteStore } = await import('../../src/store/index.js');
    const store = await openSqliteStore({ path: ':memory:' });
    await store.createSession({ id: 'session_lookup' });
    expect(await store.runs.findByIdempotencyKey('key-1')).toBeNull();
    const created = await store.runs.create({
      sessionId: 'session_lookup',
      input: 'hi',
      idempotencyKey: 'key-1',
      holder: 'test',
    });
    expect((await store.runs.findByIdempotencyKey('key-1'))?.id).toBe(created.id);
    expect(await store.runs.list({ sessionId: 'session_lookup' })).toHaveLength(1);
    expect(await store.responses.count()).toBe(0);
    await store.close();
  });
});
