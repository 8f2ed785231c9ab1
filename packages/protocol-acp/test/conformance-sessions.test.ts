import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SessionUpdate } from '@agentclientprotocol/sdk/unstable';
import { createAgentHost, silentLogger } from '@hermes/core';
import { hang, reasoning, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { initialize, SCRIPTED_KEY } from './agent-harness.js';
import {
  agentOn,
  agentRequests,
  eventually,
  expectError,
  fixtureFor,
  openRun,
  prompt,
  requestText,
  teardown,
  updateLines,
  updatesOf,
} from './conformance-helpers.js';

afterEach(async (context) => {
  await teardown(context.task.result?.state === 'fail');
});

function libraryHost(home: string) {
  return createAgentHost({
    homeDir: home,
    env: { ...process.env, HERMES_HOME: home, SCRIPTED_API_KEY: SCRIPTED_KEY },
    connectMcp: false,
    logger: silentLogger,
  });
}

describe('ACP conformance: sessions (spec/acp.md §19)', () => {
  it('a session created over ACP is in the shared store and resumable by the core library', async () => {
    const run = await openRun({ script: [step(text('stored answer'))] });
    await prompt(run, 'SHARED-STORE-PROMPT');
    const host = await libraryHost(run.fixture.home);
    try {
      const agent = await host.resumeSession(run.sessionId);
      const history = await agent.history();
      expect(history.map((row) => row.content)).toEqual(
        expect.arrayContaining(['SHARED-STORE-PROMPT', 'stored answer']),
      );
      const row = await host.store.getSession(run.sessionId);
      expect(row?.source).toBe('acp');
      expect(row?.cwd).toBe(run.fixture.project);
    } finally {
      await host.close();
    }
  });

  it('22. ACP sessions offer no clarify tool; clarify calls of other front ends replay as completed other calls', async () => {
    const run = await openRun({ script: [step(text('no questions'))] });
    await prompt(run, 'hello');
    const tools = run.fixture.server.calls[0]?.tools.map((tool) => tool.name) ?? [];
    expect(tools.length).toBeGreaterThan(0);
    expect(tools).not.toContain('clarify');
    run.fixture.server.push(
      step(toolCall('clarify', { question: 'Which one?', choices: ['a', 'b'] })),
      step(text('thanks')),
    );
    const host = await libraryHost(run.fixture.home);
    let sessionId: string;
    try {
      const agent = await host.newSession({ cwd: run.fixture.project, callbacks: { clarify: async () => 'a' } });
      sessionId = agent.sessionId;
      const turn = agent.runTurn({ text: 'ask me' });
      for await (const _event of turn) void _event;
      expect((await turn.result).outcome).toBe('completed');
      await agent.close();
    } finally {
      await host.close();
    }
    await run.agent.agent.request('session/load', { sessionId, cwd: run.fixture.project, mcpServers: [] });
    const replayed = updatesOf(run.agent, sessionId, 'tool_call');
    expect(replayed.map((line) => [line.update.name, line.update.kind, line.update.status])).toEqual([
      ['clarify', 'other', 'completed'],
    ]);
    expect(agentRequests(run.agent, 'elicitation/create')).toEqual([]);
  });

  it('25. allow_session and reject_always are remembered for the session and forgotten after close and load', async () => {
    const run = await openRun({ script: [] });
    const project = run.fixture.project;
    for (const name of ['b1', 'b2', 'b3']) await mkdir(join(project, name));
    await writeFile(join(project, 'f.txt'), 'x');
    const answers: string[] = [];
    run.agent.answerPermission = async () => ({
      outcome: { outcome: 'selected', optionId: answers.shift() ?? 'reject_once' },
    });
    const turn = async (command: string) => {
      run.fixture.server.push(step(toolCall('terminal', { command })), step(text('ok')));
      await prompt(run, command);
    };
    answers.push('allow_session');
    await turn('rm -r b1');
    expect(agentRequests(run.agent, 'session/request_permission')).toHaveLength(1);
    await turn('rm -r b2');
    expect(agentRequests(run.agent, 'session/request_permission')).toHaveLength(1);
    await expect(stat(join(project, 'b2'))).rejects.toThrow();
    answers.push('reject_always');
    await turn('chmod 777 f.txt');
    expect(agentRequests(run.agent, 'session/request_permission')).toHaveLength(2);
    await turn('chmod 777 f.txt');
    expect(agentRequests(run.agent, 'session/request_permission')).toHaveLength(2);
    const completions = updatesOf(run.agent, run.sessionId, 'tool_call_update').filter((line) => line.update.status);
    expect(completions.at(-1)?.update.status).toBe('failed');
    expect(((await stat(join(project, 'f.txt'))).mode & 0o777).toString(8)).not.toBe('777');
    await run.agent.agent.request('session/close', { sessionId: run.sessionId });
    await run.agent.agent.request('session/load', { sessionId: run.sessionId, cwd: project, mcpServers: [] });
    answers.push('allow_once');
    await turn('rm -r b3');
    expect(agentRequests(run.agent, 'session/request_permission')).toHaveLength(3);
  });

  it('26. subagent approvals are announced as pending calls and asked one at a time', async () => {
    const run = await openRun({ script: [] });
    const project = run.fixture.project;
    await mkdir(join(project, 'x1'));
    await mkdir(join(project, 'x2'));
    run.fixture.server.push(
      step(toolCall('delegate_task', { tasks: [{ goal: 'remove x1' }, { goal: 'remove x2' }] })),
      step(toolCall('terminal', { command: 'rm -r x1' })),
      step(toolCall('terminal', { command: 'rm -r x2' })),
      step(text('child finished')),
      step(text('child finished')),
      step(text('parent finished')),
    );
    let answered = 0;
    run.agent.answerPermission = async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      answered++;
      return { outcome: { outcome: 'selected', optionId: 'allow_once' } };
    };
    expect((await prompt(run, 'delegate')).stopReason).toBe('end_turn');
    expect(answered).toBe(2);
    const requests = agentRequests(run.agent, 'session/request_permission');
    expect(requests).toHaveLength(2);
    const calls = updatesOf(run.agent, run.sessionId, 'tool_call');
    for (const request of requests) {
      const id = (request.message.params as { toolCall: { toolCallId: string } }).toolCall.toolCallId;
      const announcement = calls.find((call) => call.update.toolCallId === id);
      expect(announcement?.update.title.startsWith('[subagent] ')).toBe(true);
      expect(announcement?.update.status).toBe('pending');
      expect(announcement?.seq).toBeLessThan(request.seq);
      const closed = updatesOf(run.agent, run.sessionId, 'tool_call_update').find(
        (line) => line.update.toolCallId === id && line.update.status === 'completed',
      );
      expect(closed?.seq).toBeGreaterThan(request.seq);
    }
    const firstAnswer = run.agent.lines.find(
      (line) => line.from === 'client' && line.message.id === requests[0]?.message.id && !line.message.method,
    );
    expect(requests[1]?.seq).toBeGreaterThan(firstAnswer?.seq ?? Number.POSITIVE_INFINITY);
  });

  it('32. cancelling a turn kills and releases its running client terminal before the cancelled response', async () => {
    const run = await openRun({
      script: [step(toolCall('terminal', { command: 'sleep 30' })), step(text('never'))],
      capabilities: { terminal: true },
      mode: 'yolo',
    });
    const pending = prompt(run, 'sleep');
    const created = await run.agent.waitFor(
      (line) => line.from === 'agent' && line.message.method === 'terminal/create',
    );
    const answer = await run.agent.waitFor(
      (line) => line.from === 'client' && line.message.id === created.message.id && !line.message.method,
    );
    const terminalId = (answer.message.result as { terminalId: string }).terminalId;
    await run.agent.agent.notify('session/cancel', { sessionId: run.sessionId });
    expect((await pending).stopReason).toBe('cancelled');
    const responseSeq = run.agent.responseTo('session/prompt')?.seq ?? 0;
    for (const method of ['terminal/kill', 'terminal/release']) {
      const request = agentRequests(run.agent, method).find(
        (line) => (line.message.params as { terminalId: string }).terminalId === terminalId,
      );
      expect(request, method).toBeDefined();
      expect(request?.seq).toBeLessThan(responseSeq);
    }
  });

  it('34. session/load replays prompt, thoughts, text, tool calls with diffs and the plan before responding, identically twice', async () => {
    const fixture = await fixtureFor({
      script: [
        step(
          reasoning('pondering'),
          text('Intro text'),
          toolCall('write_file', { path: 'out.txt', content: 'written\n' }),
        ),
        step(toolCall('terminal', { command: 'echo replayed' })),
        step(toolCall('todo', { todos: [{ id: '1', content: 'ship it', status: 'in_progress' }] })),
        step(text('Finished')),
      ],
    });
    const live = await agentOn(fixture, { capabilities: { terminal: true } });
    await initialize(live, { terminal: true });
    const { sessionId } = await live.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });
    await live.agent.request('session/set_mode', { sessionId, modeId: 'yolo' });
    await live.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'REPLAY-PROMPT' }] });
    const liveCalls = updatesOf(live, sessionId, 'tool_call');
    const liveFinal = new Map<string, SessionUpdate & { sessionUpdate: 'tool_call_update' }>();
    for (const line of updatesOf(live, sessionId, 'tool_call_update'))
      if (line.update.status) liveFinal.set(line.update.toolCallId, line.update);
    expect(await live.close()).toBe(0);

    const fresh = await agentOn(fixture);
    await initialize(fresh);
    fixture.server.push(step(text('follow-up answer')));
    const loads: SessionUpdate[][] = [];
    for (let index = 0; index < 2; index++) {
      const before = fresh.lines.length;
      const response = await fresh.agent.request('session/load', { sessionId, cwd: fixture.project, mcpServers: [] });
      expect(response).toMatchObject({ modes: expect.any(Object), configOptions: expect.any(Array) });
      const responseSeq = fresh.responseTo('session/load', index)?.seq ?? 0;
      await eventually(() =>
        updateLines(fresh, sessionId).some(
          (line) => line.seq > responseSeq && line.update.sessionUpdate === 'available_commands_update',
        ),
      );
      const lines = updateLines(fresh, sessionId).filter((line) => line.seq > (fresh.lines[before - 1]?.seq ?? 0));
      const replay = lines.filter((line) => line.seq < responseSeq);
      const after = lines.filter((line) => line.seq > responseSeq);
      expect(after[0]?.update.sessionUpdate).toBe('available_commands_update');
      loads.push(replay.map((line) => line.update));
    }
    const [first, second] = loads as [SessionUpdate[], SessionUpdate[]];
    expect(second).toEqual(first);
    expect(first.map((update) => update.sessionUpdate)).toEqual([
      'user_message_chunk',
      'agent_thought_chunk',
      'agent_message_chunk',
      'tool_call',
      'tool_call',
      'tool_call',
      'plan',
      'agent_message_chunk',
    ]);
    expect(first[0]).toMatchObject({ content: { type: 'text', text: 'REPLAY-PROMPT' } });
    const replayCalls = first.filter((update) => update.sessionUpdate === 'tool_call') as (SessionUpdate & {
      sessionUpdate: 'tool_call';
    })[];
    expect(replayCalls.map((call) => call.toolCallId)).toEqual(liveCalls.map((call) => call.update.toolCallId));
    for (const [index, call] of replayCalls.entries()) {
      const liveCall = liveCalls[index]?.update;
      const final = liveFinal.get(call.toolCallId);
      expect(call.name).toBe(liveCall?.name);
      expect(call.title).toBe(liveCall?.title);
      expect(call.kind).toBe(liveCall?.kind);
      expect(call.rawInput).toEqual(liveCall?.rawInput);
      expect(call.locations).toEqual(final?.locations ?? liveCall?.locations);
      expect(call.status).toBe(final?.status);
      if (call.name === 'terminal') {
        const textContent = JSON.stringify(call.content);
        expect(textContent).toContain('$ echo replayed');
        expect(textContent).toContain('replayed');
      } else {
        expect(call.content).toEqual(final?.content);
      }
    }
    expect(replayCalls[0]?.content).toEqual([
      { type: 'diff', path: join(fixture.project, 'out.txt'), oldText: null, newText: 'written\n' },
    ]);
    const follow = await fresh.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'and then?' }],
    });
    expect(follow.stopReason).toBe('end_turn');
    const body = requestText(fixture.server.calls.at(-1) ?? { messages: [] });
    expect(body).toContain('REPLAY-PROMPT');
    expect(body).toContain('Finished');
  });

  it('35. load with a relative cwd or of a session with a running prompt is answered -32602', async () => {
    const run = await openRun({ script: [step(hang())] });
    await expectError(
      run.agent.agent.request('session/load', { sessionId: run.sessionId, cwd: 'project', mcpServers: [] }),
      -32602,
    );
    const pending = prompt(run, 'hang');
    await eventually(() => run.fixture.server.requests.length > 0);
    await expectError(
      run.agent.agent.request('session/load', { sessionId: run.sessionId, cwd: run.fixture.project, mcpServers: [] }),
      -32602,
    );
    await run.agent.agent.notify('session/cancel', { sessionId: run.sessionId });
    expect((await pending).stopReason).toBe('cancelled');
  });

  it('36. resume sends no update before its response and the next prompt sees the history', async () => {
    const fixture = await fixtureFor({ script: [step(text('EARLIER-ANSWER'))] });
    const first = await agentOn(fixture);
    await initialize(first);
    const { sessionId } = await first.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });
    await first.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'EARLIER-PROMPT' }] });
    expect(await first.close()).toBe(0);
    const fresh = await agentOn(fixture);
    await initialize(fresh);
    const response = await fresh.agent.request('session/resume', { sessionId, cwd: fixture.project });
    expect(response).toMatchObject({ modes: expect.any(Object), configOptions: expect.any(Array) });
    const responseSeq = fresh.responseTo('session/resume')?.seq ?? 0;
    expect(updateLines(fresh, sessionId).filter((line) => line.seq < responseSeq)).toEqual([]);
    fixture.server.push(step(text('later')));
    await fresh.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'more' }] });
    const body = requestText(fixture.server.calls.at(-1) ?? { messages: [] });
    expect(body).toContain('EARLIER-PROMPT');
    expect(body).toContain('EARLIER-ANSWER');
  });

  it('37. session/list lists prompted sessions, filters by exact cwd, rejects bad input and pages by 50', async () => {
    const run = await openRun({ script: [] });
    const client = run.agent.agent;
    const otherDirectory = join(run.fixture.project, '..', 'other');
    await mkdir(otherDirectory);
    const make = async (cwd: string, prompted: boolean) => {
      const { sessionId } = await client.request('session/new', { cwd, mcpServers: [] });
      if (prompted) {
        run.fixture.server.push(step(text('ok')));
        await client.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hi' }] });
      }
      return sessionId;
    };
    await client.request('session/close', { sessionId: run.sessionId });
    const inA = [
      await make(run.fixture.project, true),
      await make(run.fixture.project, true),
      await make(run.fixture.project, true),
    ];
    const inB = await make(otherDirectory, true);
    const empty = await make(run.fixture.project, false);
    const all = await client.request('session/list', {});
    expect(all.sessions.map((session) => session.sessionId).sort()).toEqual([...inA, inB].sort());
    expect(all.sessions.map((session) => session.sessionId)).not.toContain(empty);
    for (const session of all.sessions) {
      expect(session.cwd.startsWith('/')).toBe(true);
      expect(new Date(session.updatedAt ?? '').toISOString()).toBe(session.updatedAt);
    }
    const filtered = await client.request('session/list', { cwd: run.fixture.project });
    expect(filtered.sessions.map((session) => session.sessionId).sort()).toEqual([...inA].sort());
    await expectError(client.request('session/list', { cwd: 'relative' }), -32602);
    await expectError(client.request('session/list', { cursor: 'garbage' }), -32602);
    for (let index = 0; index < 60; index++) await make(run.fixture.project, true);
    const seen: string[] = [];
    const times: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await client.request('session/list', cursor ? { cursor } : {});
      pages++;
      expect(page.sessions.length).toBeLessThanOrEqual(50);
      if (page.nextCursor) expect(page.sessions).toHaveLength(50);
      seen.push(...page.sessions.map((session) => session.sessionId));
      times.push(...page.sessions.map((session) => session.updatedAt ?? ''));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(pages).toBe(2);
    expect(new Set(seen).size).toBe(64);
    expect([...times].sort().reverse()).toEqual(times);
  }, 60000);

  it('38. close cancels the running prompt first, deactivates the session, and the session can be loaded again', async () => {
    const run = await openRun({ script: [step(hang())] });
    const pending = prompt(run, 'hang');
    await eventually(() => run.fixture.server.requests.length > 0);
    await run.agent.agent.request('session/close', { sessionId: run.sessionId });
    expect((await pending).stopReason).toBe('cancelled');
    expect(run.agent.responseTo('session/prompt')?.seq).toBeLessThan(run.agent.responseTo('session/close')?.seq ?? 0);
    expect(run.agent.responseTo('session/close')?.message.result).toEqual({});
    await expectError(prompt(run, 'again'), -32002);
    const loaded = await run.agent.agent.request('session/load', {
      sessionId: run.sessionId,
      cwd: run.fixture.project,
      mcpServers: [],
    });
    expect(loaded.modes).toBeDefined();
  });

  it('39. fork copies the history into a new session without replay, and the two histories stay apart', async () => {
    const run = await openRun({ script: [step(text('ORIGINAL-ANSWER'))] });
    await prompt(run, 'ORIGINAL-PROMPT');
    const before = run.agent.lines.length;
    const fork = await run.agent.agent.request('session/fork', { sessionId: run.sessionId, cwd: run.fixture.project });
    expect(fork.sessionId).not.toBe(run.sessionId);
    expect(fork.modes).toBeDefined();
    expect(fork.configOptions).toBeDefined();
    const forkResponseSeq = run.agent.responseTo('session/fork')?.seq ?? 0;
    expect(
      updateLines(run.agent, fork.sessionId).filter((line) => line.seq < forkResponseSeq && line.seq > before),
    ).toEqual([]);
    run.fixture.server.push(step(text('fork answer')));
    await prompt(run, 'FORK-ONLY-PROMPT', fork.sessionId);
    const body = requestText(run.fixture.server.calls.at(-1) ?? { messages: [] });
    expect(body).toContain('ORIGINAL-PROMPT');
    const loadStart = run.agent.lines.length;
    await run.agent.agent.request('session/load', {
      sessionId: run.sessionId,
      cwd: run.fixture.project,
      mcpServers: [],
    });
    const replay = updateLines(run.agent, run.sessionId).filter(
      (line) => line.seq > (run.agent.lines[loadStart - 1]?.seq ?? 0),
    );
    expect(JSON.stringify(replay)).toContain('ORIGINAL-PROMPT');
    expect(JSON.stringify(replay)).not.toContain('FORK-ONLY-PROMPT');
    await expectError(
      run.agent.agent.request('session/fork', { sessionId: 'unknown-session', cwd: run.fixture.project }),
      -32002,
    );
  });
});
