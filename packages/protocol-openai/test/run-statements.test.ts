import type { SessionStore, SqliteSessionStore } from '@hermes/core';
import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../core/test/support/postgres.js';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../core/test/support/postgres-global-setup.js';
import { type Rig, startRig, until } from './harness.js';

/**
 * Issue 34 (scale), ADR 0088: the PostgreSQL statements of a run through `POST /v1/runs` without `session_id`, counted
 * on a real database as the instance's pool sends them. node-postgres does not pipeline, so every statement is one
 * round trip.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

/** What a run's events append to the shared table sends (the outbox's one statement per batch, ADR 0050). */
const EVENTS_APPEND = 'run events append';

/**
 * Records every statement a store's pool sends, by its prepared name, or for an unnamed one by what it does. The
 * pruning of long-settled runs' events is a timer of every instance (first run at start), not a run's work.
 */
function recordStatements(store: SessionStore): string[] {
  const sent: string[] = [];
  const wrapped = new WeakSet<object>();
  // The PostgreSQL store's pool (internal to the core: not in its published types).
  const { pool } = store as unknown as {
    pool: { on(event: 'acquire', listener: (client: { query: (...args: unknown[]) => unknown }) => void): void };
  };
  pool.on('acquire', (client) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0] as string | { name?: string; text?: string };
      const name = typeof first === 'string' ? undefined : first.name;
      const statement = (typeof first === 'string' ? first : (first.text ?? '')).trim().replace(/\s+/gu, ' ');
      if (!/^DELETE FROM run_events WHERE run_id IN/iu.test(statement))
        sent.push(
          name ?? (/^WITH inserted AS \( INSERT INTO run_events\b/iu.test(statement) ? EVENTS_APPEND : statement),
        );
      return query(...args);
    };
  });
  return sent;
}

describe('the store work of a run in a session named after it (issue 34, ADR 0088)', () => {
  it('the session is born with its lease and its run in one statement and opened once: no reservation, no reads of it', async () => {
    const database = await createTestDatabase();
    cleanups.push(database.drop);
    const owner: Rig = await startRig({
      database: database.url,
      script: [step(text('First.')), step(text('Second.'))],
    });
    cleanups.push(() => owner.close());
    // A second instance of the deployment reads the run, as the bench's scale section does: the bus is shared.
    const reader: Rig = await startRig({ database: database.url, script: [] });
    cleanups.push(() => reader.close());
    const sent = recordStatements(owner.host.store);

    const run = async (body: Record<string, unknown>) => {
      sent.length = 0;
      const created = await owner.raw('/v1/runs', { method: 'POST', body: JSON.stringify(body) });
      expect(created.status).toBe(202);
      const { run_id: runId, session_id: sessionId } = (await created.json()) as { run_id: string; session_id: string };
      const events = await (await reader.raw(`/v1/runs/${runId}/events`)).text();
      expect(events).toContain('run.completed');
      // Settled here too: the end written, the terminal event shared, the slot and the agent let go.
      await until(() => owner.api.activeTurns() === 0 && owner.host.liveAgents().length === 0, 30_000);
      const appends = sent.filter((statement) => statement === EVENTS_APPEND).length;
      return { sessionId, statements: sent.filter((statement) => statement !== EVENTS_APPEND), appends };
    };

    const first = await run({ input: 'hello' });
    // The session's row with its first turn's lease and the run's row (one statement), `running`, the prompt commit,
    // the answer's commit with the lease's release, the run's end. Before ADR 0088 the route also created the session
    // on its own, took the lease as a reservation, wrote the run's row apart, opened the session again, read its empty
    // transcript and usage, the turn took the lease over and the reservation was released at the end: 12 statements
    // besides the events.
    expect(first.statements).toEqual([
      'hermes_open_or_create_session_v3',
      'hermes_run_update_v1',
      'hermes_commit_turn_v2',
      'hermes_commit_turn_v2',
      'hermes_run_update_v1',
    ]);
    expect(first.appends).toBeGreaterThanOrEqual(1);

    // The born lease was the turn's own (epoch 1) and its end commit released it: another holder takes it at once,
    // one epoch on (ADR 0049).
    const store = owner.host.store;
    const lease = await store.acquireTurnLease(first.sessionId, {
      holder: 'another-instance',
      turnId: 'turn_other',
      ttlMs: 60_000,
      waitMs: 0,
    });
    expect(lease.fence.epoch).toBe(2);
    await lease.release();

    // The session goes on as any stored one: a run naming it takes its lease itself and finds the first turn's rows.
    const second = await run({ input: 'again', session_id: first.sessionId });
    expect(second.statements).toContain('hermes_take_lease_v1');
    expect((await store.loadConversation(first.sessionId)).map((row) => row.content)).toEqual([
      'hello',
      'First.',
      'again',
      'Second.',
    ]);
  }, 120_000);

  it("on SQLite, the run's new session, its lease and its run are one write transaction: five per run", async () => {
    const rig = await startRig({ script: [step(text('Only.'))] });
    cleanups.push(() => rig.close());
    const store = rig.host.store as SqliteSessionStore;
    const before = store.committedWrites;
    const created = await rig.raw('/v1/runs', { method: 'POST', body: JSON.stringify({ input: 'hello' }) });
    expect(created.status).toBe(202);
    const { run_id: runId } = (await created.json()) as { run_id: string };
    expect(await (await rig.raw(`/v1/runs/${runId}/events`)).text()).toContain('run.completed');
    await until(() => rig.api.activeTurns() === 0 && rig.host.liveAgents().length === 0, 30_000);
    // The session with its lease and its run, `running`, the prompt, the answer with the lease's release, the run's
    // end. Before ADR 0088: the session, the run, the turn's lease take, then the same four (7).
    expect(store.committedWrites - before).toBe(5);
  }, 60_000);

  it("the other instance's stream asks for the run's row and its first events together: one round trip, not two (ADR 0096)", async () => {
    const database = await createTestDatabase();
    cleanups.push(database.drop);
    const owner: Rig = await startRig({ database: database.url, script: [step(text('Only.'))] });
    cleanups.push(() => owner.close());
    const reader: Rig = await startRig({ database: database.url, script: [] });
    cleanups.push(() => reader.close());
    const created = await owner.raw('/v1/runs', { method: 'POST', body: JSON.stringify({ input: 'hello' }) });
    expect(created.status).toBe(202);
    const { run_id: runId } = (await created.json()) as { run_id: string };
    // Each statement the reader's pool sends, and when its answer comes, in the order they happen.
    const order: string[] = [];
    const { pool } = reader.host.store as unknown as {
      pool: {
        on(event: 'acquire', listener: (client: { query: (...args: unknown[]) => unknown }) => void): void;
        query(text: string): Promise<unknown>;
      };
    };
    // Two connections open and idle, so that neither statement waits for a connection to be made.
    await Promise.all([pool.query('SELECT pg_sleep(0.05)'), pool.query('SELECT pg_sleep(0.05)')]);
    const wrapped = new WeakSet<object>();
    pool.on('acquire', (client) => {
      if (wrapped.has(client)) return;
      wrapped.add(client);
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown> | undefined;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const first = args[0] as string | { name?: string; text?: string };
        const label =
          typeof first !== 'string' && first.name
            ? first.name
            : /FROM run_events WHERE run_id = \$1 AND seq > \$2/u.test(
                  typeof first === 'string' ? first : (first.text ?? ''),
                )
              ? 'events read'
              : 'other';
        order.push(`sent ${label}`);
        // The pool's own `query` passes a callback; the bus's and the store's go through it.
        const callback = args.at(-1);
        if (typeof callback === 'function')
          args[args.length - 1] = (...results: unknown[]) => {
            order.push(`answered ${label}`);
            return (callback as (...results: unknown[]) => unknown)(...results);
          };
        const answer = query(...args);
        void answer?.then(
          () => order.push(`answered ${label}`),
          () => order.push(`answered ${label}`),
        );
        return answer;
      };
    });
    const events = await (await reader.raw(`/v1/runs/${runId}/events`)).text();
    expect(events).toContain('run.completed');
    // The watch's events read goes first, then the route's row read, before the first answer comes back (a timer's
    // statement of the instance, such as the pruning of old runs' events, is left out).
    const stream = order.filter((entry) => !entry.endsWith(' other'));
    expect(stream.slice(0, 2)).toEqual(['sent events read', 'sent hermes_run_by_id_v1']);
    expect(stream).toContain('answered events read');
  }, 120_000);
});
