import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import { openTestStore, sessionId, temporaryDirectory, user } from './helpers.js';

async function twoStoresOnOneFile(options: Parameters<typeof openTestStore>[1] = {}) {
  const path = join(temporaryDirectory(), 'state.db');
  const first = await openTestStore(path, options);
  const second = await openTestStore(path, options);
  return { path, first, second };
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
}

describe('two stores on one file', () => {
  it('see each other’s committed writes through WAL', async () => {
    const { path, first, second } = await twoStoresOnOneFile();
    const id = sessionId();
    await first.createSession({ id, title: 'Shared' });
    const [rowId] = await first.appendMessages(id, [user('written by the first')]);
    expect((await second.loadConversation(id)).map((row) => row.rowId)).toEqual([rowId]);
    await second.appendMessages(id, [user('written by the second')]);
    expect((await first.loadConversation(id)).map((row) => row.content)).toEqual([
      'written by the first',
      'written by the second',
    ]);
    expect((await first.getSession(id))?.messageCount).toBe(2);
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('the second holder waits for the lease and gets it once the first releases it', async () => {
    const { first, second } = await twoStoresOnOneFile();
    const id = sessionId();
    await first.createSession({ id });
    const held = await first.acquireTurnLease(id, { holder: 'host-a', turnId: 'turn_a', ttlMs: 60_000, waitMs: 0 });
    const waits: { holder: string; waitedMs: number }[] = [];
    let acquired = false;
    const waiting = second
      .acquireTurnLease(id, {
        holder: 'host-b',
        turnId: 'turn_b',
        ttlMs: 60_000,
        waitMs: 10_000,
        onWait: (info) => waits.push(info),
      })
      .then((lease) => {
        acquired = true;
        return lease;
      });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(acquired).toBe(false);
    expect(waits[0]?.holder).toBe('host-a');

    await held.release();
    const lease = await waiting;
    expect(acquired).toBe(true);
    expect(await lease.refresh()).toBe(true);
    expect(lease.lost.aborted).toBe(false);
    // The first holder's stale handle can neither refresh nor release the new lease.
    expect(await held.refresh()).toBe(false);
    await held.release();
    const third = await errorOf(
      first.acquireTurnLease(id, { holder: 'host-c', turnId: 'turn_c', ttlMs: 1_000, waitMs: 50 }),
    );
    expect(HermesError.isInstance(third) && third.code).toBe('lease_timeout');
    await lease.release();
  });

  it('a lease wait that runs out fails with lease_timeout; an abort signal ends the wait with its reason', async () => {
    const { first, second } = await twoStoresOnOneFile();
    const id = sessionId();
    await first.createSession({ id });
    await first.acquireTurnLease(id, { holder: 'host-a', turnId: 't', ttlMs: 60_000, waitMs: 0 });

    const started = Date.now();
    const timeout = await errorOf(
      second.acquireTurnLease(id, { holder: 'host-b', turnId: 't', ttlMs: 60_000, waitMs: 300 }),
    );
    expect(HermesError.isInstance(timeout) && timeout.code).toBe('lease_timeout');
    expect(HermesError.isInstance(timeout) && timeout.details).toMatchObject({ sessionId: id, holder: 'host-a' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);

    const controller = new AbortController();
    const aborted = errorOf(
      second.acquireTurnLease(id, {
        holder: 'host-b',
        turnId: 't',
        ttlMs: 60_000,
        waitMs: 60_000,
        signal: controller.signal,
      }),
    );
    setTimeout(() => controller.abort(new Error('turn interrupted')), 50);
    expect(await aborted).toEqual(new Error('turn interrupted'));
  });

  it('an expired lease is taken over, and the old holder’s refresh reports it lost', async () => {
    const { first, second } = await twoStoresOnOneFile();
    const id = sessionId();
    await first.createSession({ id });
    const crashed = await first.acquireTurnLease(id, { holder: 'host-a', turnId: 't1', ttlMs: 150, waitMs: 0 });
    const lease = await second.acquireTurnLease(id, { holder: 'host-b', turnId: 't2', ttlMs: 60_000, waitMs: 5_000 });
    expect(await crashed.refresh()).toBe(false);
    expect(crashed.lost.aborted).toBe(true);
    expect(HermesError.isInstance(crashed.lost.reason) && crashed.lost.reason.code).toBe('lease_lost');
    expect(await lease.refresh()).toBe(true);
  });

  it('acquiring a lease of a session that does not exist fails with session_not_found', async () => {
    const { first } = await twoStoresOnOneFile();
    const error = await errorOf(first.acquireTurnLease('missing', { holder: 'h', turnId: 't', ttlMs: 1, waitMs: 0 }));
    expect(HermesError.isInstance(error) && error.code).toBe('session_not_found');
  });
});

describe('lock retries', () => {
  it('a write that meets a locked database waits, then succeeds once the lock is released', async () => {
    const path = join(temporaryDirectory(), 'state.db');
    const store = await openTestStore(path, { busyTimeoutMs: 20 });
    const id = sessionId();
    await store.createSession({ id });
    const blocker = new Database(path);
    blocker.exec('BEGIN IMMEDIATE');
    blocker.prepare('UPDATE sessions SET cwd = ? WHERE id = ?').run('/held', id);

    const started = Date.now();
    let settled = false;
    const append = store.appendMessages(id, [user('after the lock')]).finally(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    blocker.exec('COMMIT');
    const [rowId] = await append;
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect((await store.loadConversation(id)).map((row) => row.rowId)).toEqual([rowId]);
    // The blocker's committed change and the retried write are both there.
    expect(await store.getSession(id)).toMatchObject({ cwd: '/held', messageCount: 1 });
    blocker.close();
  });

  it('a write whose retry budget runs out fails with store_locked and writes nothing', async () => {
    const path = join(temporaryDirectory(), 'state.db');
    const store = await openTestStore(path, { busyTimeoutMs: 10, retryBudgetsMs: { transcript: 250, other: 150 } });
    const id = sessionId();
    await store.createSession({ id });
    const blocker = new Database(path);
    blocker.exec('BEGIN IMMEDIATE');

    const transcript = await errorOf(store.appendMessages(id, [user('never written')]));
    expect(HermesError.isInstance(transcript) && transcript.code).toBe('store_locked');
    expect(HermesError.isInstance(transcript) && (transcript.cause as { code?: string }).code).toMatch(/^SQLITE_BUSY/u);
    const other = await errorOf(store.setTitle(id, 'x', 'user'));
    expect(HermesError.isInstance(other) && other.code).toBe('store_locked');

    blocker.exec('ROLLBACK');
    blocker.close();
    expect(await store.loadConversation(id)).toEqual([]);
    expect((await store.getSession(id))?.title).toBeNull();
  });
});
