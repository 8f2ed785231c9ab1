import { afterEach, describe, expect, it } from 'vitest';
import { HermesError } from '../../src/errors.js';
import { collectTurn, createTestHost, hang, step, type TestHost, text } from '../../src/testing/index.js';
import { until } from './helpers.js';

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

/** An id source that answers `ids` in order, then the last one for ever, and counts its draws. */
function idsInOrder(...ids: string[]): { generate: (now: number) => string; draws: () => number } {
  let drawn = 0;
  return {
    generate: () => ids[Math.min(drawn++, ids.length - 1)] as string,
    draws: () => drawn,
  };
}

/**
 * Issue 34: the spec's session id has 24 random bits per second, so a burst of a thousand header-less chat completions
 * (an ephemeral agent each) drew one id twice now and then; the second agent's turn found its session busy with the
 * first's and the request ended in a 500. The host now never hands out an id a live session of its own holds.
 */
describe('new session ids', () => {
  it('an id a running ephemeral session holds is drawn again, and both turns complete', async () => {
    const ids = idsInOrder('20261205_055206_26ab0f', '20261205_055206_26ab0f', '20261205_055206_9c41d2');
    host = await createTestHost({
      script: [step(text('first, still running'), hang()), step(text('second answer'))],
      config: { session: { auto_title: false } },
      generateSessionId: ids.generate,
    });
    const first = await host.newSession({ ephemeral: true });
    const running = first.runTurn({ text: 'one' });
    await until(() => first.status().phase === 'model');
    const second = await host.newSession({ ephemeral: true });
    expect(first.sessionId).toBe('20261205_055206_26ab0f');
    expect(second.sessionId).toBe('20261205_055206_9c41d2');
    expect(ids.draws()).toBe(3);
    // Before, this turn threw HermesError session_busy (the other agent's turn held the id).
    const { result } = await collectTurn(second.runTurn({ text: 'two' }));
    expect(result.outcome).toBe('completed');
    expect(result.finalText).toBe('second answer');
    // Each id names its own agent: the first is still the live session under its id.
    expect(host.getAgent(first.sessionId)).toBe(first);
    expect(host.getAgent(second.sessionId)).toBe(second);
    first.interrupt({ issuer: 'test', reason: 'done' });
    expect((await running.result).outcome).toBe('cancelled');
  });

  it('an id a turn in flight holds is drawn again even when no live agent has it', async () => {
    const ids = idsInOrder('20261205_055206_000001', '20261205_055206_000002');
    host = await createTestHost({ config: { session: { auto_title: false } }, generateSessionId: ids.generate });
    const claim = host.turns.claim('20261205_055206_000001', { surface: 'test', id: 'held' });
    const agent = await host.newSession({ ephemeral: true });
    expect(agent.sessionId).toBe('20261205_055206_000002');
    claim?.release();
  });

  it('an id whose agent was closed may be handed out again', async () => {
    const ids = idsInOrder('20261205_055206_aaaaaa');
    host = await createTestHost({ config: { session: { auto_title: false } }, generateSessionId: ids.generate });
    const first = await host.newSession({ ephemeral: true });
    await first.close();
    const second = await host.newSession({ ephemeral: true });
    expect(second.sessionId).toBe(first.sessionId);
    expect(ids.draws()).toBe(2);
  });

  it('a generator that only answers ids in use is refused with session_id_exhausted, not looped on', async () => {
    host = await createTestHost({
      config: { session: { auto_title: false } },
      generateSessionId: () => '20261205_055206_ffffff',
    });
    await host.newSession({ ephemeral: true });
    const refused = await host.newSession({ ephemeral: true }).catch((error: unknown) => error);
    expect(HermesError.isInstance(refused) && refused.code).toBe('session_id_exhausted');
  });

  it('the default ids keep the spec format and differ within one second', async () => {
    host = await createTestHost({ config: { session: { auto_title: false } } });
    const agents = await Promise.all(Array.from({ length: 50 }, () => host!.newSession({ ephemeral: true })));
    for (const agent of agents) expect(agent.sessionId).toMatch(/^\d{8}_\d{6}_[0-9a-f]{6}$/);
    expect(new Set(agents.map((agent) => agent.sessionId)).size).toBe(50);
  });
  it("a new stored session never takes a stored session's id, so its first turn never continues that conversation", async () => {
    const ids = idsInOrder('20261205_061800_aa00aa', '20261205_061800_aa00aa', '20261205_061800_bb11bb');
    host = await createTestHost({
      script: [step(text('first answer')), step(text('second answer'))],
      config: { session: { auto_title: false } },
      generateSessionId: ids.generate,
    });
    const first = await host.newSession();
    await collectTurn(first.runTurn({ text: 'secret of client one' }));
    await first.close();
    // The same second's draw repeats the closed session's id: drawn again, not taken as new.
    const second = await host.newSession();
    expect(second.sessionId).toBe('20261205_061800_bb11bb');
    const { result } = await collectTurn(second.runTurn({ text: 'question of client two' }));
    expect(result.finalText).toBe('second answer');
    expect(JSON.stringify(host.model.calls[1]?.messages ?? [])).not.toContain('secret of client one');
    const firstRows = await host.store.loadConversation('20261205_061800_aa00aa');
    expect(JSON.stringify(firstRows)).not.toContain('question of client two');
  });
});
