import { describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/index.js';
import type { PgRunBus } from '../../src/store/pg-bus.js';
import { createRunBus, type RunEventRecord } from '../../src/store/run-bus.js';
import { createTestDatabase } from '../support/postgres.js';
import { onCleanup, sessionId, twoPostgresInstances } from './helpers.js';

/** Two instances' buses on one fresh database; a run created through the first. */
async function twoBuses() {
  const { url, stores, buses } = await twoPostgresInstances();
  const [first] = stores;
  const id = sessionId();
  await first?.createSession({ id });
  const run = await first?.runs.create({ sessionId: id, input: 'hi', holder: 'instance-0' });
  const createRun = async () =>
    (await first?.runs.create({ sessionId: id, input: 'hi', holder: 'instance-0' }))?.id as string;
  return {
    owner: buses[0] as PgRunBus,
    reader: buses[1] as PgRunBus,
    runId: run?.id as string,
    createRun,
    url,
  };
}

function nextWakeUp(bus: PgRunBus, runId: string): Promise<{ seq: number; events?: RunEventRecord[] }> {
  return new Promise((resolve) => {
    const stop = bus.watch(runId, (seq, events) => {
      stop();
      resolve(events ? { seq, events } : { seq });
    });
  });
}

describe('the PostgreSQL run bus wake-ups (ADR 0018)', () => {
  it('come again after the server drops the listening connections: each bus re-opens its own and says so', async () => {
    const { owner, reader, runId, url } = await twoBuses();
    const reconnected = [owner, reader].map(
      (bus) =>
        new Promise<void>((resolve) => {
          const stop = bus.onReconnect(() => {
            stop();
            resolve();
          });
        }),
    );
    const { default: pg } = await import('pg');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      // A listening connection's last statement is its LISTEN; the pools' connections ran others since.
      const terminated = await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN%'",
      );
      expect(terminated.rowCount).toBe(2);
    } finally {
      await admin.end();
    }
    await Promise.all(reconnected);
    const woken = nextWakeUp(reader, runId);
    const events = [{ seq: 0, payload: { event: 'message.delta', run_id: runId, seq: 0, delta: 'after' } }];
    await owner.append(runId, events);
    expect(await woken).toEqual({ seq: 0, events });
  });

  it('carry the appended events to the other instance when they fit, so the reader need not fetch them', async () => {
    const { owner, reader, runId } = await twoBuses();
    const woken = nextWakeUp(reader, runId);
    const events = [0, 1].map((seq) => ({ seq, payload: { event: 'message.delta', run_id: runId, seq, delta: 'ab' } }));
    await owner.append(runId, events);
    expect(await woken).toEqual({ seq: 1, events });
  });

  it('name only the run and its newest seq when the events are too large for a notification; a read has them', async () => {
    const { owner, reader, runId } = await twoBuses();
    const woken = nextWakeUp(reader, runId);
    const big = 'x'.repeat(9_000);
    await owner.append(runId, [{ seq: 0, payload: { event: 'message.delta', run_id: runId, seq: 0, delta: big } }]);
    expect(await woken).toEqual({ seq: 0 });
    const [stored] = await reader.read(runId, -1);
    expect(stored?.payload.delta).toBe(big);
  });

  it('appends of many runs made while one statement is in flight go out together, each run in order with its own wake-ups', async () => {
    const { owner, reader, runId: firstRun, createRun } = await twoBuses();
    const runs = [firstRun];
    for (let index = 1; index < 20; index += 1) runs.push(await createRun());
    const seen = new Map<string, number[]>(runs.map((id) => [id, []]));
    const stops = runs.map((id) =>
      reader.watch(id, (_seq, events) => {
        for (const event of events ?? []) {
          expect(event.payload.run_id).toBe(id);
          seen.get(id)?.push(event.seq);
        }
      }),
    );
    // Count the statements the owner sends (the real pool, observed).
    const pool = (owner as unknown as { pool: { query: (...args: unknown[]) => Promise<unknown> } }).pool;
    const query = pool.query.bind(pool);
    let statements = 0;
    pool.query = (...args: unknown[]) => {
      statements += 1;
      return query(...args);
    };
    await Promise.all(
      runs.map(async (id) => {
        for (let seq = 0; seq < 5; seq += 1)
          await owner.append(id, [{ seq, payload: { event: 'message.delta', run_id: id, seq } }]);
      }),
    );
    pool.query = query;
    // 100 appends: the first of each round goes alone, the other runs' wait for it and go together.
    expect(statements).toBeLessThanOrEqual(20);
    for (const id of runs) expect((await reader.read(id, -1)).map((event) => event.seq)).toEqual([0, 1, 2, 3, 4]);
    await expect.poll(() => [...seen.values()].every((seqs) => seqs.length === 5)).toBe(true);
    for (const seqs of seen.values()) expect(seqs).toEqual([0, 1, 2, 3, 4]);
    for (const stop of stops) stop();
  });

  it("a run's last append goes at once beside a statement in flight, with the appends waiting; others still wait (ADR 0096)", async () => {
    const { owner, reader, runId: held, createRun } = await twoBuses();
    const waiting = await createRun();
    const last = await createRun();
    const later = await createRun();
    // Hold the owner's first statement until released, and count the statements it sends (the real pool, observed).
    const pool = (owner as unknown as { pool: { query: (...args: unknown[]) => Promise<unknown> } }).pool;
    const query = pool.query.bind(pool);
    let statements = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    pool.query = async (...args: unknown[]) => {
      statements += 1;
      if (statements === 1) await gate;
      return query(...args);
    };
    const settled = new Set<string>();
    const track = (id: string, appended: Promise<void>) => appended.then(() => settled.add(id));
    const delta = (id: string) => [{ seq: 0, payload: { event: 'message.delta', run_id: id, seq: 0 } }];
    const first = track(held, owner.append(held, delta(held)));
    expect(statements).toBe(1);
    // An ordinary append waits for the statement in flight, as before.
    const second = track(waiting, owner.append(waiting, delta(waiting)));
    expect(statements).toBe(1);
    // A run's last events do not wait: they go now, and the waiting append goes with them.
    const terminal = [{ seq: 0, payload: { event: 'run.completed', run_id: last, seq: 0 } }];
    const third = track(last, owner.append(last, terminal, { last: true }));
    expect(statements).toBe(2);
    await Promise.all([second, third]);
    expect([...settled].sort()).toEqual([last, waiting].sort());
    expect((await reader.read(last, -1)).map((event) => event.payload.event)).toEqual(['run.completed']);
    expect((await reader.read(waiting, -1)).map((event) => event.seq)).toEqual([0]);
    // Appends made while both are in flight wait for the first to come back, as before.
    const fourth = track(later, owner.append(later, delta(later)));
    expect(statements).toBe(2);
    release();
    await Promise.all([first, fourth]);
    pool.query = query;
    expect(settled.has(held) && settled.has(later)).toBe(true);
    expect((await reader.read(held, -1)).map((event) => event.seq)).toEqual([0]);
    expect((await reader.read(later, -1)).map((event) => event.seq)).toEqual([0]);
  });

  it('relay messages reach the instance named (or every other one), in order, whole at any size', async () => {
    const { owner, reader } = await twoBuses();
    const received: { from: string; message: Record<string, unknown> }[] = [];
    const stop = reader.onRelay((from, message) => received.push({ from, message }));
    const echoed: Record<string, unknown>[] = [];
    owner.onRelay((_from, message) => echoed.push(message));
    // Larger than a notification, with characters of every UTF-8 width (a surrogate pair at a part boundary too).
    const big = `${'a'.repeat(2_499)}😀${'é€😀'.repeat(4_000)}`;
    const sent = [
      owner.relay('instance-1', { n: 0, text: 'small' }),
      owner.relay('instance-1', { n: 1, text: big }),
      ...Array.from({ length: 30 }, (_, index) => owner.relay('*', { n: index + 2 })),
      owner.relay('instance-9', { n: 'not for the reader' }),
    ];
    await Promise.all(sent);
    await expect.poll(() => received.length).toBe(32);
    expect(received.map((entry) => entry.message.n)).toEqual(Array.from({ length: 32 }, (_, index) => index));
    expect(received[1]?.message.text).toBe(big);
    expect(new Set(received.map((entry) => entry.from))).toEqual(new Set(['instance-0']));
    // A sender never hears its own messages.
    expect(echoed).toEqual([]);
    stop();
  });

  it('lists the other instances listening right now, by their listening connection, whatever the holder id', async () => {
    const { owner, reader, url } = await twoBuses();
    const listedByOwner = await owner.listening();
    expect(listedByOwner?.size).toBe(1);
    expect(listedByOwner?.covers([])).toBe(false);
    expect(listedByOwner?.covers(['someone-else', 'instance-0'])).toBe(false);
    expect(listedByOwner?.covers(['instance-1'])).toBe(true);
    expect((await reader.listening())?.covers(['instance-0'])).toBe(true);

    // A holder id longer than an application_name, and not ASCII, is listed too.
    const store = await openPostgresStore({ url, poolSize: 1 });
    const holder = `höst-${'x'.repeat(80)}:4242:abcdefgh`;
    const third = createRunBus(store, holder) as PgRunBus;
    onCleanup(async () => {
      await third.close();
      await store.close();
    });
    await third.ready();
    const listed = await owner.listening();
    expect(listed?.size).toBe(2);
    expect(listed?.covers(['instance-1'])).toBe(false);
    expect(listed?.covers(['instance-1', holder])).toBe(true);

    // A bus that stopped listening is no longer listed once its connection is gone.
    await third.close();
    await expect.poll(async () => (await owner.listening())?.size, { timeout: 30_000 }).toBe(1);
  });

  it('drops a relay message whose parts stopped arriving, with a warning, instead of holding it', async () => {
    const database = await createTestDatabase();
    onCleanup(database.drop);
    const stores = await Promise.all([1, 2].map(() => openPostgresStore({ url: database.url, poolSize: 2 })));
    const warnings: { message: string; details: Record<string, unknown> }[] = [];
    const reader = createRunBus(stores[0] as never, 'instance-0', {
      relayPartsTimeoutMs: 50,
      onWarning: (message, details) => warnings.push({ message, details }),
    }) as PgRunBus;
    const sender = createRunBus(stores[1] as never, 'instance-1') as PgRunBus;
    onCleanup(async () => {
      await reader.close();
      await sender.close();
      for (const store of stores) await store.close();
    });
    await Promise.all([reader.ready(), sender.ready()]);
    const received: Record<string, unknown>[] = [];
    reader.onRelay((_from, message) => received.push(message));
    // The first of two parts, as a sender that died before its second statement leaves it.
    await stores[1]?.pool.query("SELECT pg_notify('hermes_relay', $1)", ['instance-0 instance-1 999 0 2\n{"n":']);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The next message cut into parts finds the stale one and drops it; a late last part then completes nothing.
    await sender.relay('instance-0', { n: 'whole', text: 'é'.repeat(6_000) });
    await expect.poll(() => received.length).toBe(1);
    expect(received[0]?.n).toBe('whole');
    expect(warnings).toEqual([
      { message: 'relay message incomplete, dropped', details: { from: 'instance-1', received: 1 } },
    ]);
    await stores[1]?.pool.query("SELECT pg_notify('hermes_relay', $1)", ['instance-0 instance-1 999 1 2\n1}']);
    await sender.relay('instance-0', { n: 'after' });
    await expect.poll(() => received.length).toBe(2);
    expect(received.map((message) => message.n)).toEqual(['whole', 'after']);
  });
});
