import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import { openPostgresStore } from '../../src/store/index.js';
import { startEmbeddedPostgres } from '../support/embedded-postgres.js';
import { assistant, onCleanup, sessionId, user } from './helpers.js';

/** The error a promise rejects with, or `null` when it resolves. */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => null,
    (error: unknown) => error,
  );
}

function codeOf(error: unknown): string | null {
  return HermesError.isInstance(error) ? error.code : null;
}

/** A client of its own, outside the store; a server stop ends it, which is expected here. */
async function sideClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  onCleanup(() => client.end().catch(() => {}));
  return client;
}

describe('PostgreSQL restarted under a live store', () => {
  it('17.4: restart PostgreSQL mid-stream; the operation in flight fails with store_unavailable, the pool reconnects, and nothing committed is lost', async () => {
    // A server of this test's own (own port, own data folder), so stopping it disturbs no other test.
    const server = await startEmbeddedPostgres();
    onCleanup(() => server.dispose());
    const store = await openPostgresStore({ url: server.url, poolSize: 3 });
    onCleanup(() => store.close());
    const id = sessionId();
    await store.createSession({ id, title: 'before the restart' });
    const committed = await store.appendMessages(id, [user('hello'), assistant('hi there')]);

    // Another client holds the session's row lock, so the next append is in flight on the server,
    // waiting for it, when the server goes down.
    const holder = await sideClient(server.url);
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM sessions WHERE id = $1 FOR UPDATE', [id]);
    const inFlight = rejectionOf(store.appendMessages(id, [user('sent during the outage')]));
    const monitor = await sideClient(server.url);
    for (;;) {
      const waiting = await monitor.query<{ count: number }>(
        "SELECT count(*)::int AS count FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
      );
      if ((waiting.rows[0]?.count ?? 0) > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    await server.stop();
    const failure = await inFlight;
    expect(codeOf(failure), String(failure)).toBe('store_unavailable');
    expect((failure as Error).message).not.toContain('hermes-test');
    // While the server is down, a new operation fails the same way instead of hanging.
    const whileDown = await rejectionOf(store.getSession(id));
    expect(codeOf(whileDown), String(whileDown)).toBe('store_unavailable');

    await server.start();
    // The same store serves again: its pool opens new connections.
    const rows = await store.loadConversation(id);
    expect(rows.map((row) => [row.rowId, row.role, row.content])).toEqual([
      [committed[0], 'user', 'hello'],
      [committed[1], 'assistant', 'hi there'],
    ]);
    const session = await store.getSession(id);
    expect(session).toMatchObject({ title: 'before the restart', messageCount: 2 });
    const [after] = await store.appendMessages(id, [user('after the restart')]);
    expect(after).toBeGreaterThan(committed[1] as number);
    expect((await store.loadConversation(id)).map((row) => row.content)).toEqual([
      'hello',
      'hi there',
      'after the restart',
    ]);
    expect(await store.getSession(id)).toMatchObject({ messageCount: 3 });
  }, 120_000);
});
