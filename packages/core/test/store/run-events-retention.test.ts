import { describe, expect, it } from 'vitest';
import { createRunBus, type RunBus } from '../../src/store/run-bus.js';
import type { SessionStore } from '../../src/store/types.js';
import { onCleanup, openTestStore, sessionId } from './helpers.js';

/**
 * The shared run events of PostgreSQL (ADR 0018) do not grow without bound: a run keeps its newest events only,
 * as the runs API's in-memory backlog does, and the events of runs settled before a cut-off are pruned
 * (spec/openai-api.md §19.3: newest 1,000 events, until 3,600 s after the run turns terminal).
 */
async function runWithBus(
  store: SessionStore,
  keepEvents?: number,
): Promise<{ bus: RunBus; runId: string; session: string }> {
  const bus = createRunBus(store, 'instance-a', keepEvents === undefined ? {} : { keepEvents });
  onCleanup(() => bus.close());
  const id = sessionId();
  await store.createSession({ id });
  const run = await store.runs.create({ sessionId: id, input: 'hello', holder: 'instance-a' });
  return { bus, runId: run.id, session: id };
}

const event = (runId: string, seq: number) => ({ seq, payload: { event: 'message.delta', run_id: runId, seq } });

describe('run events retention on PostgreSQL', () => {
  it("keeps a run's newest events (trimmed every 100 seqs), in order, and reads start at the oldest kept one", async () => {
    const store = await openTestStore('postgres');
    const { bus, runId } = await runWithBus(store, 50);
    expect(bus.shared).toBe(true);
    // One by one, and in batches that cross a multiple of 100 without landing on it.
    for (let seq = 0; seq < 130; seq += 1) await bus.append(runId, [event(runId, seq)]);
    await bus.append(
      runId,
      Array.from({ length: 75 }, (_, index) => event(runId, 130 + index)),
    );
    const kept = await bus.read(runId, -1, 1_000);
    // The last trim ran at the append ending on seq 204 (crossing 200): everything at or below 154 went.
    expect(kept[0]?.seq).toBe(155);
    expect(kept.at(-1)?.seq).toBe(204);
    expect(kept.map((record) => record.seq)).toEqual(Array.from({ length: 50 }, (_, index) => 155 + index));
    expect((await bus.latest(runId))?.seq).toBe(204);
  });

  it('keeps 1,000 events by default', async () => {
    const store = await openTestStore('postgres');
    const { bus, runId } = await runWithBus(store);
    await bus.append(
      runId,
      Array.from({ length: 1_100 }, (_, index) => event(runId, index)),
    );
    const kept = await bus.read(runId, -1, 2_000);
    expect(kept).toHaveLength(1_000);
    expect(kept[0]?.seq).toBe(100);
  });

  it('prunes the events of runs settled before the cut-off only, never those of unfinished or recent runs', async () => {
    const store = await openTestStore('postgres');
    const { bus, runId: old, session } = await runWithBus(store);
    const recent = (await store.runs.create({ sessionId: session, input: 'x', holder: 'instance-a' })).id;
    const unfinished = (await store.runs.create({ sessionId: session, input: 'y', holder: 'instance-a' })).id;
    for (const runId of [old, recent, unfinished]) await bus.append(runId, [event(runId, 0), event(runId, 1)]);
    await store.runs.update(old, { status: 'completed', endedAt: 1_000 });
    await store.runs.update(recent, { status: 'failed', endedAt: 5_000 });
    await store.runs.update(unfinished, { status: 'running', startedAt: 500 });

    expect(await bus.prune(2_000)).toBe(2);
    expect(await bus.read(old, -1)).toEqual([]);
    expect(await bus.latest(old)).toBeNull();
    expect(await bus.read(recent, -1)).toHaveLength(2);
    expect(await bus.read(unfinished, -1)).toHaveLength(2);
    expect(await bus.prune(2_000)).toBe(0);
  });

  it('the in-process bus (SQLite) prunes the same way', async () => {
    const store = await openTestStore('memory');
    const { bus, runId } = await runWithBus(store);
    expect(bus.shared).toBe(false);
    await bus.append(runId, [event(runId, 0)]);
    expect(await bus.prune(Date.now())).toBe(0);
    await store.runs.update(runId, { status: 'cancelled', endedAt: 10 });
    expect(await bus.prune(11)).toBe(1);
    expect(await bus.read(runId, -1)).toEqual([]);
  });
});
