import { afterEach, describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import { collectTurn, createTestHost, hang, step, type TestHost, text } from '../../src/testing/index.js';
import { TurnsInFlight } from '../../src/turns-in-flight.js';

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

describe('TurnsInFlight', () => {
  it('lets one holder claim a session until it releases, and tells listeners once it is free', () => {
    const turns = new TurnsInFlight();
    const released: string[] = [];
    turns.onRelease(({ sessionId, holder }) => released.push(`${sessionId}:${holder.surface}:${turns.size}`));
    const first = turns.claim('s1', { surface: 'gateway', id: 'g1' });
    expect(first).not.toBeNull();
    expect(turns.claim('s1', { surface: 'chat', id: 'c1' })).toBeNull();
    expect(turns.holder('s1')).toEqual({ surface: 'gateway', id: 'g1' });
    expect(turns.size).toBe(1);
    first?.release();
    first?.release();
    expect(released).toEqual(['s1:gateway:0']);
    expect(turns.holder('s1')).toBeUndefined();
    const second = turns.claim('s1', { surface: 'chat', id: 'c1' });
    expect(second && turns.holds(second)).toBe(true);
    // A stale claim released late never frees the session for its newer holder.
    first?.release();
    expect(turns.holder('s1')?.id).toBe('c1');
  });

  it('a session claimed by one surface refuses a turn started on its agent by another with session_busy', async () => {
    host = await createTestHost({ script: [step(text('mine'))], config: { session: { auto_title: false } } });
    const agent = await host.newSession();
    const claim = host.turns.claim(agent.sessionId, { surface: 'gateway', id: 'runtime-1' });
    if (!claim) throw new Error('not claimed');
    let refused: unknown = null;
    try {
      agent.runTurn({ text: 'hi' });
    } catch (error) {
      refused = error;
    }
    expect(HermesError.isInstance(refused) && refused.code).toBe('session_busy');
    // With its own claim the holder runs the turn; the claim stays its to release.
    const { result } = await collectTurn(agent.runTurn({ text: 'hi' }, { claim }));
    expect(result.finalText).toBe('mine');
    expect(host.turns.holds(claim)).toBe(true);
    claim.release();
    expect(host.turns.size).toBe(0);
  });

  it('a turn started directly on an agent holds the session until its result is out', async () => {
    host = await createTestHost({
      script: [step(text('partial'), hang())],
      config: { session: { auto_title: false } },
    });
    const agent = await host.newSession();
    const run = agent.runTurn({ text: 'hi' });
    expect(host.turns.holder(agent.sessionId)).toEqual({ surface: 'core', id: run.turnId });
    expect(host.turns.claim(agent.sessionId, { surface: 'chat', id: 'c' })).toBeNull();
    agent.interrupt({ issuer: 'user' });
    await run.result;
    await Promise.resolve();
    expect(host.turns.holder(agent.sessionId)).toBeUndefined();
  });
});
