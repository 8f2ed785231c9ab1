import { describe, expect, it } from 'vitest';
import { createRunBus, openPostgresStore, RunEventOutbox } from '../../src/store/index.js';
import type { RunEventRecord } from '../../src/store/run-bus.js';
import { startEmbeddedPostgres } from '../support/embedded-postgres.js';
import { onCleanup, sessionId } from './helpers.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function event(runId: string, seq: number, name = 'message.delta'): RunEventRecord {
  return { seq, payload: { event: name, run_id: runId, seq, delta: `part ${seq}` } };
}

/** A store and its run bus on a PostgreSQL server of this test's own, so stopping it disturbs no other test. */
async function setup() {
  const server = await startEmbeddedPostgres();
  onCleanup(() => server.dispose());
  const store = await openPostgresStore({ url: server.url, poolSize: 3 });
  onCleanup(() => store.close());
  const bus = createRunBus(store, 'owner');
  onCleanup(() => bus.close());
  const id = sessionId();
  await store.createSession({ id });
  const run = await store.runs.create({ sessionId: id, input: null, holder: 'owner' });
  return { server, store, bus, runId: run.id };
}

// Issue 33.2 (ADR 0050): the owner keeps the events it cannot write and writes them, in order, once the store is back.
describe('the run event outbox across a PostgreSQL outage', () => {
  it('events added while PostgreSQL is stopped wait and are written in order once it is back: the stored seqs are 0..N with no gap', async () => {
    const { server, bus, runId } = await setup();
    const warnings: string[] = [];
    const outbox = new RunEventOutbox(bus, { onWarning: (message) => warnings.push(message) });
    onCleanup(() => outbox.close());
    for (let seq = 0; seq < 10; seq += 1) expect(outbox.add(runId, event(runId, seq))).toBe(true);
    await outbox.drained(runId);
    await server.stop();
    for (let seq = 10; seq < 40; seq += 1) expect(outbox.add(runId, event(runId, seq))).toBe(true);
    // Several failed appends and retries while the server is down.
    await sleep(2_000);
    expect(outbox.pending(runId)).toBe(30);
    await server.start();
    expect(outbox.add(runId, event(runId, 40, 'run.completed'), true)).toBe(true);
    await outbox.drained(runId);
    const stored = await bus.read(runId, -1, 1_000);
    expect(stored.map((record) => record.seq)).toEqual(Array.from({ length: 41 }, (_, seq) => seq));
    expect(stored.at(-1)?.payload.event).toBe('run.completed');
    expect(warnings).toContain('run events waiting for the store; retrying');
    expect(warnings).toContain('run events written after the store returned');
  }, 120_000);

  it('past its bound the outbox keeps nothing but the terminal event: the stored events are the first ones and the terminal one', async () => {
    const { server, bus, runId } = await setup();
    const outbox = new RunEventOutbox(bus, { maxEvents: 5 });
    onCleanup(() => outbox.close());
    await server.stop();
    const kept = Array.from({ length: 9 }, (_, seq) => outbox.add(runId, event(runId, seq)));
    expect(kept).toEqual([true, true, true, true, true, false, false, false, false]);
    expect(outbox.overflowed(runId)).toBe(true);
    expect(outbox.add(runId, event(runId, 9, 'run.interrupted'), true)).toBe(true);
    // Once the terminal event is in, nothing more of the run is taken.
    expect(outbox.add(runId, event(runId, 10))).toBe(false);
    await server.start();
    await outbox.drained(runId);
    const stored = await bus.read(runId, -1, 1_000);
    expect(stored.map((record) => record.seq)).toEqual([0, 1, 2, 3, 4, 9]);
    expect(stored.at(-1)?.payload.event).toBe('run.interrupted');
  }, 120_000);

  it('a settled run takes no event past its terminal one: a stale owner that wakes after another instance settled its run appends nothing behind that end', async () => {
    const { store, bus, runId } = await setup();
    await bus.append(runId, [event(runId, 0), event(runId, 1)]);
    // Another instance settles the run at seq 2 while its owner is frozen.
    expect(
      await bus.settleIfUnfinished(runId, {
        status: 'failed',
        result: { wire_status: 'interrupted', wire_seq: 2 },
        exitReason: 'interrupted_by_system(session_turn_lease_lost)',
        error: { code: 'orphaned' },
        endedAt: Date.now(),
      }),
    ).toBe(true);
    await bus.append(runId, [event(runId, 2, 'run.interrupted')]);
    // The owner wakes and sends what it had: seq 2 is taken, 3 and 4 are past the end.
    await bus.append(runId, [event(runId, 2), event(runId, 3), event(runId, 4, 'run.completed')]);
    const stored = await bus.read(runId, -1, 1_000);
    expect(stored.map((record) => [record.seq, record.payload.event])).toEqual([
      [0, 'message.delta'],
      [1, 'message.delta'],
      [2, 'run.interrupted'],
    ]);
    expect((await store.runs.get(runId))?.status).toBe('failed');
  }, 120_000);

  it("marks the append that carries a run's terminal event as its last, and only that one (ADR 0096)", async () => {
    const { bus, runId } = await setup();
    const appends: { seqs: number[]; last: boolean }[] = [];
    const append = bus.append.bind(bus);
    bus.append = (id, events, options) => {
      appends.push({ seqs: events.map((record) => record.seq), last: options?.last === true });
      return append(id, events, options);
    };
    const outbox = new RunEventOutbox(bus);
    onCleanup(() => outbox.close());
    // The first event goes at once; the others are added while it is in flight and go in the next append.
    for (let seq = 0; seq < 3; seq += 1) expect(outbox.add(runId, event(runId, seq))).toBe(true);
    expect(outbox.add(runId, event(runId, 3, 'run.completed'), true)).toBe(true);
    await outbox.drained(runId);
    expect(appends).toEqual([
      { seqs: [0], last: false },
      { seqs: [1, 2, 3], last: true },
    ]);
    expect((await bus.read(runId, -1)).map((record) => record.seq)).toEqual([0, 1, 2, 3]);
  }, 120_000);
});
