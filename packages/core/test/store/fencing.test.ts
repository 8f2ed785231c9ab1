import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import type { SessionStore } from '../../src/store/types.js';
import { assistant, openTestStore, STORE_LOCATIONS, scriptedUsage, sessionId, steppingClock, user } from './helpers.js';

async function errorCode(promise: Promise<unknown>): Promise<string | null> {
  return promise.then(
    () => null,
    (caught: unknown) => (HermesError.isInstance(caught) ? caught.code : String(caught)),
  );
}

// Issue 33.3 (ADR 0049): every acquire moves a session's epoch on; writes that carry an older epoch are refused.
describe.each(STORE_LOCATIONS)('fencing tokens of the turn lease (%s)', (location) => {
  async function setup(): Promise<{ store: SessionStore; id: string; clock: ReturnType<typeof steppingClock> }> {
    const clock = steppingClock();
    const store = await openTestStore(location, { clock });
    const id = sessionId();
    await store.createSession({ id });
    return { store, id, clock };
  }

  it('each acquire and takeover gets a higher epoch; a stale holder’s appends, usage, session and run writes are refused with lease_lost and write nothing', async () => {
    const { store, id, clock } = await setup();
    const first = await store.acquireTurnLease(id, { holder: 'a', turnId: 't1', ttlMs: 1_000, waitMs: 0 });
    await store.appendMessages(id, [user('first turn')], { fence: first.fence });
    const run = await store.runs.create({ sessionId: id, input: null, holder: 'a' });
    // The first holder is frozen past its lease; another takes the session over.
    clock.advance(1_001);
    const second = await store.acquireTurnLease(id, { holder: 'b', turnId: 't2', ttlMs: 1_000, waitMs: 0 });
    expect(second.fence.epoch).toBeGreaterThan(first.fence.epoch);
    expect(second.fence.sessionId).toBe(id);

    const stale = { fence: first.fence };
    expect(await errorCode(store.appendMessages(id, [assistant('late answer')], stale))).toBe('lease_lost');
    expect(await errorCode(store.recordUsage(id, scriptedUsage, stale))).toBe('lease_lost');
    expect(await errorCode(store.recordTurn(id, { rows: [assistant('late')], usage: scriptedUsage }, stale))).toBe(
      'lease_lost',
    );
    expect(await errorCode(store.updateSession(id, { title: 'stale title' }, stale))).toBe('lease_lost');
    expect(await errorCode(store.touchSession(id, stale))).toBe('lease_lost');
    expect(await errorCode(store.runs.update(run.id, { status: 'running' }, stale))).toBe('lease_lost');

    // The new holder writes; the transcript holds one turn's output after the takeover.
    await store.appendMessages(id, [user('second turn'), assistant('second answer')], { fence: second.fence });
    const rows = await store.loadConversation(id);
    expect(rows.map((row) => row.content)).toEqual(['first turn', 'second turn', 'second answer']);
    const session = await store.getSession(id);
    expect(session?.title).toBeNull();
    expect(session?.inputTokens).toBe(0);
    expect((await store.runs.get(run.id))?.status).toBe('queued');
    await second.release();
  });

  it('a release keeps the epoch: the turn’s epilogue after its release still writes until someone else acquires', async () => {
    const { store, id } = await setup();
    const lease = await store.acquireTurnLease(id, { holder: 'a', turnId: 't1', ttlMs: 30_000, waitMs: 0 });
    await lease.release();
    await store.touchSession(id, { fence: lease.fence });
    await store.appendMessages(id, [user('after release')], { fence: lease.fence });
    const next = await store.acquireTurnLease(id, { holder: 'a', turnId: 't2', ttlMs: 30_000, waitMs: 0 });
    expect(next.fence.epoch).toBe(lease.fence.epoch + 1);
    expect(await errorCode(store.touchSession(id, { fence: lease.fence }))).toBe('lease_lost');
    await next.release();
  });

  it('a terminal run status never changes: updates of a completed, cancelled or failed run write nothing and fail run_settled', async () => {
    const { store, id } = await setup();
    for (const status of ['completed', 'cancelled', 'failed'] as const) {
      const run = await store.runs.create({ sessionId: id, input: null, holder: 'a' });
      await store.runs.update(run.id, { status: 'running', startedAt: 1 });
      await store.runs.update(run.id, { status, endedAt: 2, result: { wire_status: status } });
      expect(await errorCode(store.runs.update(run.id, { status: 'completed', result: { rewritten: true } }))).toBe(
        'run_settled',
      );
      expect(await errorCode(store.runs.update(run.id, { status: 'running' }))).toBe('run_settled');
      const row = await store.runs.get(run.id);
      expect(row?.status).toBe(status);
      expect(row?.result).toEqual({ wire_status: status });
    }
    expect(await errorCode(store.runs.update('run_missing', { status: 'running' }))).toBe('run_not_found');
  });
});

describe('a PostgreSQL store connection frozen inside a transaction (ADR 0049)', () => {
  it('the server ends the idle transaction, so its row locks stop blocking another instance taking the session over', async () => {
    const store = (await openTestStore('postgres')) as SessionStore & { pool: import('pg').Pool };
    const id = sessionId();
    await store.createSession({ id });
    // A connection of the store's own pool that stops mid-transaction holding the session's row lock, as a frozen
    // process would.
    const frozen = await store.pool.connect();
    frozen.on('error', () => {});
    await frozen.query('BEGIN');
    await frozen.query('SELECT id FROM sessions WHERE id = $1 FOR UPDATE', [id]);
    const lease = await store.acquireTurnLease(id, { holder: 'b', turnId: 't', ttlMs: 30_000, waitMs: 0 });
    expect(lease.fence.epoch).toBe(1);
    expect(await errorCode(frozen.query('COMMIT'))).not.toBeNull();
    frozen.release(true);
    await lease.release();
  }, 120_000);
});
