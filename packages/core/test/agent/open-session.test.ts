import { afterEach, describe, expect, it } from 'vitest';
import { collectTurn, createTestHost, step, type TestHost, text } from '../../src/testing/index.js';

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

/** AgentHost.openSession: a session named by id on every request (the HTTP API's X-Hermes-Session-Id, issue 34.3). */
describe('AgentHost.openSession', () => {
  it('creates a missing session with its source, and a later open resumes its rows and usage', async () => {
    host = await createTestHost({
      script: [step(text('first answer')), step(text('second answer'))],
      config: { session: { auto_title: false } },
    });
    expect(await host.openSession('named-session')).toBeNull();
    expect(await host.store.getSession('named-session')).toBeNull();

    const created = await host.openSession('named-session', { create: { source: 'api_server' } });
    if (!created) throw new Error('expected an agent');
    expect(created.sessionId).toBe('named-session');
    expect((await host.store.getSession('named-session'))?.source).toBe('api_server');
    expect(await created.history()).toEqual([]);
    const first = await collectTurn(created.runTurn({ text: 'one' }));
    expect(first.result.finalText).toBe('first answer');
    // The live agent is the one an open finds.
    expect(await host.openSession('named-session', { create: { source: 'api_server' } })).toBe(created);

    const before = created.usage();
    expect(before.byModel.length).toBeGreaterThan(0);
    expect(host.releaseAgent('named-session')).toBe(true);
    const resumed = await host.openSession('named-session', { create: { source: 'api_server' } });
    if (!resumed) throw new Error('expected an agent');
    expect(resumed).not.toBe(created);
    expect((await resumed.history()).map((row) => row.content)).toEqual(['one', 'first answer']);
    expect(resumed.usage().byModel).toEqual(before.byModel);
    const second = await collectTurn(resumed.runTurn({ text: 'two' }));
    expect(second.result.finalText).toBe('second answer');
    expect((await resumed.history()).map((row) => row.content)).toEqual([
      'one',
      'first answer',
      'two',
      'second answer',
    ]);
  });

  it('opens by id only, and reopens an ended session as resumeSession does', async () => {
    host = await createTestHost({ script: [step(text('answer'))], config: { session: { auto_title: false } } });
    await host.store.createSession({ id: 'titled-session', source: 'cli', title: 'A Title' });
    expect(await host.openSession('A Title')).toBeNull();
    await host.store.endSession('titled-session', 'user_exit');
    const opened = await host.openSession('titled-session');
    expect(opened?.sessionId).toBe('titled-session');
    expect((await host.store.getSession('titled-session'))?.endedAt).toBeNull();
  });

  it("a created session is born with its first turn's lease; let go without a turn, the agent gives it back", async () => {
    host = await createTestHost({
      script: [step(text('answer'))],
      config: { session: { auto_title: false, lease_wait: 0 } },
    });
    const other = { holder: 'other-host', turnId: 'turn_other', ttlMs: 60_000, waitMs: 0 };
    const created = await host.openSession('born-session', { create: { source: 'api_server' } });
    expect(created).not.toBeNull();
    const refused = await host.store.acquireTurnLease('born-session', other).then(
      () => null,
      (error: { code?: string }) => error.code,
    );
    expect(refused).toBe('lease_timeout');
    expect(host.releaseAgent('born-session')).toBe(true);
    // The release is not awaited by releaseAgent: poll until another holder takes the lease.
    let taken = null;
    for (let attempt = 0; attempt < 200 && taken === null; attempt += 1) {
      taken = await host.store.acquireTurnLease('born-session', other).catch(() => null);
      if (taken === null) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(taken?.fence.epoch).toBe(2);
    await taken?.release();
    // The next open finds the session and runs its turn with a lease of its own.
    const again = await host.openSession('born-session', { create: { source: 'api_server' } });
    const { result } = await collectTurn((again as NonNullable<typeof again>).runTurn({ text: 'hi' }));
    expect(result.outcome).toBe('completed');
  });

  it('two opens that both create the same new session end on one session, without an error', async () => {
    host = await createTestHost({ script: [step(text('answer'))], config: { session: { auto_title: false } } });
    const [one, two] = await Promise.all([
      host.openSession('raced-session', { create: { source: 'api_server' } }),
      host.openSession('raced-session', { create: { source: 'api_server' } }),
    ]);
    expect(one?.sessionId).toBe('raced-session');
    expect(two?.sessionId).toBe('raced-session');
    expect((await host.store.listSessions({})).items.filter((item) => item.id === 'raced-session')).toHaveLength(1);
  });

  it('resumeSession with the session its caller just read (ResumeOptions.stored) keeps the active rows and the usage', async () => {
    host = await createTestHost({
      script: [step(text('first answer')), step(text('kept answer')), step(text('after resume'))],
      config: { session: { auto_title: false } },
    });
    const agent = await host.newSession();
    await collectTurn(agent.runTurn({ text: 'undone question' }));
    await agent.undo();
    await collectTurn(agent.runTurn({ text: 'kept question' }));
    const usage = agent.usage().byModel;
    await agent.close();

    const stored = await host.store.readSession(agent.sessionId);
    if (!stored) throw new Error('expected the stored session');
    // The read holds the undone rows too; the resumed agent keeps the active ones only, as a plain resume does.
    expect(stored.rows.some((row) => !row.active)).toBe(true);
    const resumed = await host.resumeSession(agent.sessionId, { stored });
    expect((await host.store.getSession(agent.sessionId))?.endedAt).toBeNull();
    expect(resumed.usage().byModel).toEqual(usage);
    await collectTurn(resumed.runTurn({ text: 'next question' }));
    const sent = JSON.stringify(host.model.calls.at(-1)?.messages);
    expect(sent).toContain('kept question');
    expect(sent).toContain('kept answer');
    expect(sent).not.toContain('undone question');
  });
});
