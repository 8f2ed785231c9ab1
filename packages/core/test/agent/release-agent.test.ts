import { afterEach, describe, expect, it } from 'vitest';
import { collectTurn, createTestHost, hang, step, type TestHost, text } from '../../src/testing/index.js';

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

/** AgentHost.releaseAgent: a surface that brings agents to life per request lets go of them after the turn (ADR 0038). */
describe('AgentHost.releaseAgent', () => {
  it('forgets an idle agent without ending its session, and the next resume reads the session again', async () => {
    host = await createTestHost({
      script: [step(text('first answer')), step(text('second answer'))],
      config: { session: { auto_title: false } },
    });
    const opened = await host.newSession();
    await collectTurn(opened.runTurn({ text: 'one' }));
    const sessionId = opened.sessionId;
    expect(host.releaseAgent(sessionId)).toBe(true);
    expect(host.getAgent(sessionId)).toBeUndefined();
    expect(host.liveAgents()).toHaveLength(0);
    // Released, not closed: the stored session is still open.
    expect((await host.store.getSession(sessionId))?.endedAt).toBeNull();
    const resumed = await host.resumeSession(sessionId);
    expect(resumed).not.toBe(opened);
    const { result } = await collectTurn(resumed.runTurn({ text: 'two' }));
    expect(result.finalText).toBe('second answer');
    const history = await resumed.history();
    expect(history.map((row) => row.content)).toEqual(['one', 'first answer', 'two', 'second answer']);
    // The resumed agent is let go of the same way; what is not live is not released.
    expect(host.releaseAgent(sessionId)).toBe(true);
    expect(host.releaseAgent(sessionId)).toBe(false);
    expect(host.releaseAgent('no-such-session')).toBe(false);
  });

  it('keeps an agent while its turn runs, while someone subscribes to it, or when it was opened with callbacks', async () => {
    host = await createTestHost({
      script: [step(text('partial'), hang()), step(text('done'))],
      config: { session: { auto_title: false } },
    });
    const busy = await host.newSession();
    const run = busy.runTurn({ text: 'hi' });
    expect(host.releaseAgent(busy.sessionId)).toBe(false);
    busy.interrupt();
    await run.result;
    expect(host.releaseAgent(busy.sessionId)).toBe(true);

    // A gateway or ACP session subscribes to its agent's events for as long as it is open.
    const watched = await host.newSession();
    await watched.persist();
    const unsubscribe = watched.subscribe(() => undefined);
    expect(host.releaseAgent(watched.sessionId)).toBe(false);
    expect(host.getAgent(watched.sessionId)).toBe(watched);
    unsubscribe();
    expect(host.releaseAgent(watched.sessionId)).toBe(true);

    // Resumed with the surface's seams: released only when closed, by its owner.
    const stored = await host.newSession();
    await stored.persist();
    expect(host.releaseAgent(stored.sessionId)).toBe(true);
    const seamed = await host.resumeSession(stored.sessionId, { callbacks: { approve: async () => 'deny' } });
    expect(host.releaseAgent(stored.sessionId)).toBe(false);
    expect(host.getAgent(stored.sessionId)).toBe(seamed);
  });
});
