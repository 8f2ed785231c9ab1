import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events.js';
import {
  collectTurn,
  createTestHost,
  delay,
  hang,
  step,
  type TestHost,
  text,
  toolCall,
} from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';
import { until } from './helpers.js';

const { cleanups, temp } = useCleanups();

async function fileHost(homeDir: string, options: Parameters<typeof createTestHost>[0] = {}): Promise<TestHost> {
  const host = await createTestHost({
    homeDir,
    storage: 'file',
    ...options,
    config: { session: { auto_title: false }, ...(options.config ?? {}) },
  });
  cleanups.push(() => host.dispose());
  return host;
}

describe('two hosts on one state.db', () => {
  it("40. host B's turn waits on A's lease with lease_wait, starts after A ends, and sees A's rows", async () => {
    const homeDir = temp('hermes-home-');
    const a = await fileHost(homeDir, { script: [step(text('first')), step(text('from A'), delay(150))] });
    const agentA = await a.newSession();
    await collectTurn(agentA.runTurn({ text: 'create' }));
    const runA = agentA.runTurn({ text: 'A runs' });
    await until(() => agentA.status().phase === 'model');
    // B is created while A holds the lease, so B's auto-advancing clock cannot outrun it.
    const b = await fileHost(homeDir, { autoAdvance: true, script: [step(text('from B'))] });
    const agentB = await b.resumeSession(agentA.sessionId);
    const runB = agentB.runTurn({ text: 'B runs' });
    await until(() => agentB.status().phase === 'lease_wait');
    await a.clock.advance(150);
    const resultA = await runA.result;
    const { events, result } = await collectTurn(runB);
    expect(resultA.outcome).toBe('completed');
    expect(events.some((event) => event.type === 'status' && event.phase === 'lease_wait')).toBe(true);
    expect(result.outcome).toBe('completed');
    const prompt = JSON.stringify(b.model.calls[0]!.messages);
    expect(prompt).toContain('A runs');
    expect(prompt).toContain('from A');
  });

  it('40. with lease_wait 1 s the waiting turn fails with session_locked; an expired lease is taken over', async () => {
    const homeDir = temp('hermes-home-');
    const a = await fileHost(homeDir, { script: [step(text('first')), step(text('holding'), hang())] });
    const agentA = await a.newSession();
    await collectTurn(agentA.runTurn({ text: 'create' }));
    const runA = agentA.runTurn({ text: 'hold the lease' });
    await until(() => agentA.status().phase === 'model');
    const b = await fileHost(homeDir, {
      autoAdvance: true,
      config: { session: { lease_wait: 1, auto_title: false } },
      script: [step(text('never'))],
    });
    const agentB = await b.resumeSession(agentA.sessionId);
    const { result } = await collectTurn(agentB.runTurn({ text: 'blocked' }));
    expect(result).toMatchObject({ outcome: 'failed', exitReason: 'session_locked' });
    agentA.interrupt();
    await runA.result;

    // A lease whose holder died expires and is taken over.
    const c = await fileHost(homeDir, {
      autoAdvance: true,
      config: { session: { lease_ttl: 1, auto_title: false } },
      script: [step(text('took over'))],
    });
    const lease = await c.store.acquireTurnLease(agentA.sessionId, {
      holder: 'dead-process',
      turnId: 'turn_dead',
      ttlMs: 1,
      waitMs: 0,
    });
    void lease;
    await new Promise((resolve) => setTimeout(resolve, 10));
    const agentC = await c.resumeSession(agentA.sessionId);
    const taken = await collectTurn(agentC.runTurn({ text: 'after expiry' }));
    expect(taken.result.outcome).toBe('completed');
  });

  it('52. host.close() during a turn cancels it with shutdown, releases the lease at once, and kills background processes', async () => {
    const homeDir = temp('hermes-home-');
    const a = await fileHost(homeDir, {
      config: { approvals: { mode: 'off' }, session: { auto_title: false } },
      script: [step(toolCall('terminal', { command: 'sleep 300', background: true })), step(text('started'), hang())],
    });
    const agentA = await a.newSession({ cwd: homeDir });
    const seen: AgentEvent[] = [];
    agentA.subscribe((event) => seen.push(event));
    const run = agentA.runTurn({ text: 'go' });
    await until(() => seen.some((event) => event.type === 'message.delta'));
    const pid = a.processes.list(agentA.sessionId)[0]!.pid!;
    await a.close();
    const result = await run.result;
    expect(result).toMatchObject({ outcome: 'cancelled', exitReason: 'interrupted_by_system(shutdown)' });
    expect(() => process.kill(pid, 0)).toThrow();
    const b = await fileHost(homeDir, {
      config: { session: { lease_wait: 1, auto_title: false } },
      autoAdvance: true,
      script: [step(text('mine now'))],
    });
    const agentB = await b.resumeSession(agentA.sessionId);
    const next = await collectTurn(agentB.runTurn({ text: 'next' }));
    expect(next.result.outcome).toBe('completed');
    expect(next.events.some((event) => event.type === 'status' && event.phase === 'lease_wait')).toBe(false);
  });
});

describe('subagents', () => {
  it('47. delegate_task with two tasks runs two hidden children at once and returns both summaries in task order', async () => {
    const host = await createTestHost({
      autoAdvance: true,
      config: { session: { auto_title: false } },
      script: [
        step(toolCall('delegate_task', { tasks: [{ goal: 'count apples' }, { goal: 'count pears' }] })),
        step(text('apples: 3'), delay(40)),
        step(text('pears: 5')),
        step(text('Both counted.')),
      ],
    });
    cleanups.push(() => host.dispose());
    const agent = await host.newSession();
    const { events, result } = await collectTurn(agent.runTurn({ text: 'count fruit' }));
    expect(result.outcome).toBe('completed');
    const starts = events.filter((event) => event.type === 'subagent.start');
    const ends = events.filter((event) => event.type === 'subagent.end');
    expect(starts).toHaveLength(2);
    // Both children started before either ended: they ran at once.
    const firstEnd = events.findIndex((event) => event.type === 'subagent.end');
    expect(events.filter((event, index) => event.type === 'subagent.start' && index < firstEnd)).toHaveLength(2);
    expect(ends).toHaveLength(2);
    const toolEnd = events.find((event) => event.type === 'tool.end' && event.name === 'delegate_task') as {
      result: string;
    };
    const parsed = JSON.parse(toolEnd.result) as {
      results: { task_index: number; summary: string; status: string; child_session_id: string }[];
    };
    expect(parsed.results.map((entry) => entry.task_index)).toEqual([0, 1]);
    expect(parsed.results.map((entry) => entry.status)).toEqual(['completed', 'completed']);
    const children = await host.store.listSessions({ kinds: ['subagent'], includeHidden: true });
    expect(children.items).toHaveLength(2);
    for (const child of children.items)
      expect(child).toMatchObject({ kind: 'subagent', hidden: true, parentSessionId: agent.sessionId });
  });

  it('47. four tasks give an error result; interrupting the parent marks running children interrupted', async () => {
    const host = await createTestHost({
      config: { session: { auto_title: false } },
      script: [
        step(toolCall('delegate_task', { tasks: [{ goal: 'a' }, { goal: 'b' }, { goal: 'c' }, { goal: 'd' }] })),
        step(toolCall('delegate_task', { goal: 'wait forever' })),
        step(text('child working'), hang()),
      ],
    });
    cleanups.push(() => host.dispose());
    const agent = await host.newSession();
    const run = agent.runTurn({ text: 'x' });
    const events: AgentEvent[] = [];
    for await (const event of run) {
      events.push(event);
      if (event.type === 'subagent.start') setTimeout(() => agent.interrupt(), 20);
    }
    const firstEnd = events.find((event) => event.type === 'tool.end') as { status: string; result: string };
    expect(firstEnd.status).toBe('failed');
    const ends = events.filter((event) => event.type === 'subagent.end');
    expect(ends[0]).toMatchObject({ status: 'interrupted' });
    expect(agent.subagents()[0]?.status).toBe('interrupted');
    expect((await run.result).outcome).toBe('cancelled');
  });
});

describe('fencing a turn whose lease was taken over (issue 33.3, ADR 0049)', () => {
  it('a turn frozen past its lease while another host takes the session over stops at its first refused write with interrupted_by_system(session_turn_lease_lost); only the new turn’s answer is stored', async () => {
    const homeDir = temp('hermes-home-');
    const a = await fileHost(homeDir, {
      config: { session: { lease_ttl: 5, auto_title: false } },
      script: [step(text('first')), step(text('late answer from A'), delay(150))],
    });
    const agentA = await a.newSession();
    await collectTurn(agentA.runTurn({ text: 'create' }));
    const runA = agentA.runTurn({ text: 'A runs' });
    await until(() => agentA.status().phase === 'model');
    // B's clock runs ahead of A's lease: its turn waits, takes the expired lease over and completes.
    const b = await fileHost(homeDir, {
      autoAdvance: true,
      config: { session: { lease_ttl: 5, auto_title: false } },
      script: [step(text('answer from B'))],
    });
    const agentB = await b.resumeSession(agentA.sessionId);
    const resultB = (await collectTurn(agentB.runTurn({ text: 'B runs' }))).result;
    expect(resultB.outcome).toBe('completed');
    // A wakes: its answer is refused by the fence.
    await a.clock.advance(150);
    const resultA = await runA.result;
    expect(resultA).toMatchObject({
      outcome: 'cancelled',
      exitReason: 'interrupted_by_system(session_turn_lease_lost)',
      interruptedBy: { issuer: 'session_turn_lease_lost' },
    });
    const stored = await b.store.loadConversation(agentA.sessionId);
    const contents = stored.map((row) => row.content);
    expect(contents).toContain('answer from B');
    expect(contents).not.toContain('late answer from A');
    expect(contents.filter((content) => content === 'answer from B')).toHaveLength(1);
  });
});
