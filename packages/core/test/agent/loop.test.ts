import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EVENT_BUFFER_SIZE } from '../../src/agent/event-stream.js';
import type { AgentEvent } from '../../src/events.js';
import {
  collectTurn,
  createTestHost,
  delay,
  fail,
  hang,
  reasoning,
  step,
  type TestHost,
  text,
  toolCall,
} from '../../src/testing/index.js';
import type { ToolDefinition } from '../../src/tools/types.js';
import { assertTurnInvariants, heldReads, typesOf, until } from './helpers.js';

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

function workspace(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'hermes-ws-'));
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
}

describe('the turn loop', () => {
  it('1. with no model a host starts, the session has an id and no row, and the turn fails with no_model_configured writing nothing', async () => {
    host = await createTestHost({ config: { model: { default: undefined } } as never });
    const agent = await host.newSession();
    expect(agent.sessionId).toMatch(/^\d{8}_\d{6}_[0-9a-f]{6}$/);
    expect(await host.store.getSession(agent.sessionId)).toBeNull();
    const { events, result } = await collectTurn(agent.runTurn({ text: 'hello' }));
    expect(result.outcome).toBe('failed');
    expect(result.exitReason).toBe('provider_error(no_model_configured)');
    expect(result.error?.message).toMatch(/HERMES_MODEL/);
    expect(events[0]).toMatchObject({ type: 'turn.start', model: null });
    expect(await host.store.getSession(agent.sessionId)).toBeNull();
    expect((await host.store.listSessions({ includeHidden: true })).items).toHaveLength(0);
  });

  it('3. a plain text turn emits the events in order and the deltas make the final text', async () => {
    host = await createTestHost({ script: [step(text('Hello there, friend.'))] });
    const agent = await host.newSession();
    const { events, result } = await collectTurn(agent.runTurn({ text: 'hi' }));
    const types = typesOf(events);
    const deltas = types.filter((type) => type === 'message.delta').length;
    expect(deltas).toBeGreaterThan(1);
    expect(types).toEqual([
      'turn.start',
      'prompt.stored',
      'message.start',
      ...Array(deltas).fill('message.delta'),
      'message.end',
      'usage',
      'turn.end',
    ]);
    const joined = events.flatMap((event) => (event.type === 'message.delta' ? [event.text] : [])).join('');
    expect(joined).toBe(result.finalText);
    expect(result.outcome).toBe('completed');
    expect(result.exitReason).toBe('text_response(finish_reason=stop)');
    assertTurnInvariants(events);
  });

  it('4. result resolves even when nobody iterates the events', async () => {
    host = await createTestHost({ script: [step(toolCall('todo', {})), step(text('done'))] });
    const agent = await host.newSession();
    const run = agent.runTurn({ text: 'go' });
    const result = await run.result;
    expect(result.outcome).toBe('completed');
    const events = agent.eventsSince(0);
    assertTurnInvariants(events);
  });

  it('5. a tool round trip stores user, assistant with tool_calls, tool, assistant; the second request holds the result', async () => {
    const cwd = workspace({ 'notes.txt': 'alpha\nbeta\n' });
    host = await createTestHost({
      script: [step(toolCall('read_file', { path: 'notes.txt' }, 'call_a')), step(text('It says alpha and beta.'))],
    });
    const agent = await host.newSession({ cwd });
    const { events, result } = await collectTurn(agent.runTurn({ text: 'read notes' }));
    expect(result.outcome).toBe('completed');
    assertTurnInvariants(events);
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(rows[1]!.toolCalls?.[0]?.name).toBe('read_file');
    expect(rows[2]!.toolCallId).toBe(rows[1]!.toolCalls?.[0]?.id);
    const second = host.model.calls[1]!;
    expect(JSON.stringify(second.messages)).toContain('alpha');
    const toolMessage = (second.messages as { role: string }[]).find((message) => message.role === 'tool');
    expect(toolMessage).toBeDefined();
  });

  it('6. three read_file calls run concurrently and their rows are stored in call order even when completing in reverse', async () => {
    const cwd = workspace({ 'a.txt': 'A', 'b.txt': 'B', 'c.txt': 'C' });
    const windows: Record<string, { start: number; end: number }> = {};
    let clock = 0;
    const releases = new Map<string, () => void>();
    host = await createTestHost({
      script: [
        step(
          toolCall('read_file', { path: 'a.txt' }, 'r1'),
          toolCall('read_file', { path: 'b.txt' }, 'r2'),
          toolCall('read_file', { path: 'c.txt' }, 'r3'),
        ),
        step(text('ok')),
      ],
    });
    const agent = await host.newSession({
      cwd,
      fileAccess: {
        async readText({ path }) {
          const name = path.slice(-5);
          clock += 1;
          windows[name] = { start: clock, end: 0 };
          // Hold every read until all three have started, then release them in reverse order.
          await new Promise<void>((resolve) => releases.set(name, resolve));
          clock += 1;
          windows[name]!.end = clock;
          return name[0]!;
        },
        async writeText() {},
      },
    });
    const run = agent.runTurn({ text: 'read all' });
    await until(() => releases.size === 3);
    for (const name of ['c.txt', 'b.txt', 'a.txt']) {
      releases.get(name)!();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const { events, result } = await collectTurn(run);
    expect(result.outcome).toBe('completed');
    const starts = Object.values(windows).map((window) => window.start);
    const ends = Object.values(windows).map((window) => window.end);
    expect(Math.max(...starts)).toBeLessThan(Math.min(...ends));
    const ended = events.flatMap((event) => (event.type === 'tool.end' ? [event.callId] : []));
    expect(ended).toEqual(['r3', 'r2', 'r1']);
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.filter((row) => row.role === 'tool').map((row) => row.toolCallId)).toEqual(['r1', 'r2', 'r3']);
    assertTurnInvariants(events);
  });

  it('7. in a batch [read_file, terminal, read_file] the terminal call runs alone', async () => {
    const cwd = workspace({ 'a.txt': 'A' });
    host = await createTestHost({
      config: { approvals: { mode: 'off' } },
      script: [
        step(
          toolCall('read_file', { path: 'a.txt' }, 'r1'),
          toolCall('terminal', { command: 'echo hi' }, 't1'),
          toolCall('read_file', { path: 'a.txt' }, 'r2'),
        ),
        step(text('ok')),
      ],
    });
    const agent = await host.newSession({ cwd });
    const { events } = await collectTurn(agent.runTurn({ text: 'go' }));
    const order = events.flatMap((event) =>
      event.type === 'tool.start' || event.type === 'tool.end' ? [`${event.type}:${event.callId}`] : [],
    );
    expect(order).toEqual([
      'tool.start:r1',
      'tool.end:r1',
      'tool.start:t1',
      'tool.end:t1',
      'tool.start:r2',
      'tool.end:r2',
    ]);
  });

  it('8. with maxIterations 3 and a model that always calls a tool, one tool-less summary ends the turn failed and partial', async () => {
    host = await createTestHost({
      script: [
        step(toolCall('todo', {})),
        step(toolCall('todo', {})),
        step(toolCall('todo', {})),
        step(text('Summary: did three things.')),
      ],
    });
    const agent = await host.newSession({ maxIterations: 3 });
    const { events, result } = await collectTurn(agent.runTurn({ text: 'loop' }));
    expect(host.model.calls).toHaveLength(4);
    expect(host.model.calls[3]!.tools).toEqual([]);
    expect(host.model.calls[2]!.tools.length).toBeGreaterThan(0);
    expect(result.outcome).toBe('failed');
    expect(result.partial).toBe(true);
    expect(result.exitReason).toBe('max_iterations_reached(3/3)');
    expect(result.finalText).toBe('Summary: did three things.');
    assertTurnInvariants(events);
  });

  it('9. without configuration the budget is 90 per turn and a subagent turn gets 50', async () => {
    host = await createTestHost({ script: [step(text('hi'))] });
    const agent = await host.newSession();
    const { result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(result.maxIterations).toBe(90);
    expect(host.config.delegation.max_iterations).toBe(50);
  });

  it('10. a 503 then text gives one retry event (overloaded), completed, 2 api calls, 1 iteration', async () => {
    host = await createTestHost({ autoAdvance: true, script: [step(fail(503)), step(text('recovered'))] });
    const agent = await host.newSession();
    const { events, result } = await collectTurn(agent.runTurn({ text: 'x' }));
    const retries = events.filter((event) => event.type === 'retry');
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ reason: 'overloaded', attempt: 1 });
    expect(result.outcome).toBe('completed');
    expect(result.apiCalls).toBe(2);
    expect(result.iterations).toBe(1);
  });

  it('11. Retry-After 7 delays the retry by 7 s on the fake clock; Retry-After 600 by 60 s', async () => {
    host = await createTestHost({
      autoAdvance: true,
      script: [
        step(fail(429, { retryAfterSeconds: 7 })),
        step(fail(429, { retryAfterSeconds: 600 })),
        step(text('ok')),
      ],
    });
    const agent = await host.newSession();
    const { events } = await collectTurn(agent.runTurn({ text: 'x' }));
    const delays = events.flatMap((event) => (event.type === 'retry' ? [event.delayMs] : []));
    expect(delays).toEqual([7000, 60_000]);
    expect(host.clock.sleeps).toContain(7000);
    expect(host.clock.sleeps).toContain(60_000);
  });

  it('12. four 500s with no fallback fail with all_retries_exhausted_no_response after four calls', async () => {
    host = await createTestHost({
      autoAdvance: true,
      script: [step(fail(500)), step(fail(500)), step(fail(500)), step(fail(500))],
    });
    const agent = await host.newSession();
    const { result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(result.outcome).toBe('failed');
    expect(result.exitReason).toBe('all_retries_exhausted_no_response');
    expect(host.model.calls).toHaveLength(4);
  });

  it('a failed turn keeps its prompt for display, but the next request does not merge it into the new prompt', async () => {
    host = await createTestHost({
      autoAdvance: true,
      script: [step(fail(400)), step(text('fine')), step(text('again'))],
    });
    const agent = await host.newSession();
    const failed = await collectTurn(agent.runTurn({ text: 'first try' }));
    expect(failed.result.outcome).toBe('failed');
    expect(failed.result.partial).toBe(false);
    const next = await collectTurn(agent.runTurn({ text: 'second try' }));
    expect(next.result.outcome).toBe('completed');
    const userTexts = (messages: unknown[]) =>
      (messages as { role: string; content: unknown }[])
        .filter((message) => message.role === 'user')
        .map((message) => (message.content as { text?: string }[]).map((part) => part.text ?? '').join(''));
    expect(host.model.calls).toHaveLength(2);
    expect(userTexts(host.model.calls[0]?.messages ?? [])).toEqual(['first try']);
    expect(userTexts(host.model.calls[1]?.messages ?? [])).toEqual(['second try']);
    // The stored transcript still shows the failed prompt, marked, and a resumed agent leaves it out too.
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.map((row) => [row.role, row.content])).toEqual([
      ['user', 'first try'],
      ['user', 'second try'],
      ['assistant', 'fine'],
    ]);
    expect(rows[0]?.displayMetadata).toMatchObject({ turn_failed: true });
    const resumed = await host.resumeSession(agent.sessionId);
    await collectTurn(resumed.runTurn({ text: 'third' }));
    expect(userTexts(host.model.calls[2]?.messages ?? [])).toEqual(['second try', 'third']);
  });

  it('13. a 401 on the primary falls back to the backup; the next turn calls the primary first', async () => {
    host = await createTestHost({
      config: { model: { default: 'scripted:primary' }, fallback_models: ['scripted:backup'] },
      scripts: { primary: [step(fail(401)), step(text('primary again'))], backup: [step(text('from backup'))] },
    });
    const agent = await host.newSession();
    const first = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(first.events.some((event) => event.type === 'fallback')).toBe(true);
    expect(first.result.finalText).toBe('from backup');
    expect(first.result.route?.fallbackUsed).toBe(true);
    const second = await collectTurn(agent.runTurn({ text: 'y' }));
    expect(second.result.finalText).toBe('primary again');
    expect(second.result.route).toMatchObject({ spec: 'scripted:primary', fallbackUsed: false });
  });

  it('14. a stream that fails after text is discarded and retried; nothing from the failed attempt is stored', async () => {
    host = await createTestHost({
      autoAdvance: true,
      script: [step(text('partial answ'), fail()), step(text('full answer'))],
    });
    const agent = await host.newSession();
    const { events, result } = await collectTurn(agent.runTurn({ text: 'x' }));
    const ends = events.filter((event) => event.type === 'message.end');
    expect(ends[0]).toMatchObject({ discarded: true });
    const retry = events.find((event) => event.type === 'retry');
    expect(retry).toMatchObject({ discardMessageId: (ends[0] as { messageId: string }).messageId });
    expect(result.finalText).toBe('full answer');
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.map((row) => row.content)).toEqual(['x', 'full answer']);
  });

  it('15. interrupt during a hanging call cancels promptly, stores the streamed text as interrupted, and the call is aborted', async () => {
    host = await createTestHost({ script: [step(text('I was say'), hang())] });
    const agent = await host.newSession();
    const run = agent.runTurn({ text: 'x' });
    const seen: AgentEvent[] = [];
    for await (const event of run) {
      seen.push(event);
      if (event.type === 'message.delta' && seen.filter((item) => item.type === 'message.delta').length === 2)
        agent.interrupt();
    }
    const result = await run.result;
    expect(result.outcome).toBe('cancelled');
    expect(result.exitReason).toBe('interrupted_by_user');
    expect(result.finalText).toBe('I was say');
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows[1]).toMatchObject({ role: 'assistant', content: 'I was say', finishReason: 'interrupted' });
    expect(host.model.calls[0]!.aborted).toBe(true);
  });

  it('16. a system interrupt during a tool batch names the system in synthetic results and every call gets a row', async () => {
    const cwd = workspace();
    host = await createTestHost({
      config: { approvals: { mode: 'off' } },
      script: [step(toolCall('terminal', { command: 'sleep 30' }, 'slow'), toolCall('todo', {}, 'later'))],
    });
    const agent = await host.newSession({ cwd });
    const run = agent.runTurn({ text: 'x' });
    for await (const event of run) {
      if (event.type === 'tool.start' && event.callId === 'slow')
        agent.interrupt({ issuer: 'client_disconnect', reason: 'socket closed' });
    }
    const result = await run.result;
    expect(result.exitReason).toBe('interrupted_by_system(client_disconnect)');
    const rows = await host.store.loadConversation(agent.sessionId);
    const toolRows = rows.filter((row) => row.role === 'tool');
    expect(toolRows.map((row) => row.toolCallId).sort()).toEqual(['later', 'slow']);
    const later = toolRows.find((row) => row.toolCallId === 'later')!;
    expect(later.content).toContain('stopped by the system (client_disconnect)');
    expect(later.content).not.toContain('by the user');
  });

  it('18. interrupt while idle returns false and the next turn completes', async () => {
    host = await createTestHost({ script: [step(text('fine'))] });
    const agent = await host.newSession();
    expect(agent.interrupt()).toBe(false);
    const { result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(result.outcome).toBe('completed');
  });

  it('19. steer during a tool batch is queued, delivered after the tool rows, and reaches the next request after the results', async () => {
    const cwd = workspace({ 'x.txt': 'content' });
    const held = heldReads('content');
    host = await createTestHost({
      script: [step(toolCall('read_file', { path: 'x.txt' }, 'c1')), step(text('using tabs'))],
    });
    const agent = await host.newSession({
      cwd,
      fileAccess: held.fileAccess,
    });
    const run = agent.runTurn({ text: 'x' });
    await held.started();
    expect(agent.steer('use tabs')).toEqual({ status: 'queued' });
    held.release();
    const { events } = await collectTurn(run);
    const delivered = events.find((event) => event.type === 'steer.delivered');
    expect(delivered).toMatchObject({ text: 'use tabs', afterCallIds: ['c1'] });
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.map((row) => `${row.role}:${row.displayKind ?? ''}`)).toEqual([
      'user:',
      'assistant:',
      'tool:',
      'user:steer',
      'assistant:',
    ]);
    const messages = host.model.calls[1]!.messages as { role: string; content: unknown }[];
    const toolIndex = messages.findIndex((message) => message.role === 'tool');
    expect(JSON.stringify(messages.slice(toolIndex + 1))).toContain('use tabs');
  });

  it('21. a steer during a final-answer step is returned as pendingSteer; a steer with no turn is rejected', async () => {
    host = await createTestHost({ autoAdvance: true, script: [step(text('answer'), delay(50))] });
    const agent = await host.newSession();
    expect(agent.steer('late')).toEqual({ status: 'rejected', reason: 'no_active_turn' });
    const run = agent.runTurn({ text: 'x' });
    for await (const event of run) if (event.type === 'message.delta') agent.steer('also this');
    const result = await run.result;
    expect(result.pendingSteer).toBe('also this');
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.some((row) => row.displayKind === 'steer')).toBe(false);
  });

  it('22. redirect during a model call aborts only that call, stores the partial text and a redirect row, and refunds the iteration', async () => {
    host = await createTestHost({ script: [step(text('going left'), hang()), step(text('going right'))] });
    const agent = await host.newSession({ maxIterations: 1 });
    const run = agent.runTurn({ text: 'x' });
    let redirectResult: unknown = null;
    for await (const event of run)
      if (event.type === 'message.delta' && redirectResult === null) redirectResult = agent.redirect('go right');
    const result = await run.result;
    expect(redirectResult).toEqual({ status: 'redirected' });
    expect(result.outcome).toBe('completed');
    expect(result.finalText).toBe('going right');
    expect(result.iterations).toBe(1);
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.map((row) => `${row.role}:${row.finishReason ?? row.displayKind ?? ''}`)).toEqual([
      'user:',
      'assistant:redirected',
      'user:redirect',
      'assistant:stop',
    ]);
  });

  it('22. redirect during tool execution is queued and acts as a steer', async () => {
    const held = heldReads('x');
    host = await createTestHost({ script: [step(toolCall('read_file', { path: 'x' }, 'c1')), step(text('ok'))] });
    const agent = await host.newSession({
      cwd: workspace({ x: 'x' }),
      fileAccess: held.fileAccess,
    });
    const run = agent.runTurn({ text: 'x' });
    await held.started();
    expect(agent.redirect('different approach')).toEqual({ status: 'queued' });
    held.release();
    const { events } = await collectTurn(run);
    expect(events.find((event) => event.type === 'steer.delivered')).toMatchObject({ text: 'different approach' });
  });

  it('41. runTurn on a busy agent throws session_busy; two sessions run turns at the same time', async () => {
    host = await createTestHost({ autoAdvance: true, script: [step(text('one'), delay(20)), step(text('two'))] });
    const first = await host.newSession();
    const second = await host.newSession();
    const runA = first.runTurn({ text: 'a' });
    expect(() => first.runTurn({ text: 'again' })).toThrow(expect.objectContaining({ code: 'session_busy' }));
    const runB = second.runTurn({ text: 'b' });
    expect(first.busy && second.busy).toBe(true);
    const [a, b] = await Promise.all([runA.result, runB.result]);
    expect(a.outcome).toBe('completed');
    expect(b.outcome).toBe('completed');
  });

  it('53. eventsSince(n) returns exactly the buffered events after n, and a subscriber sees what the iterator sees', async () => {
    host = await createTestHost({ script: [step(toolCall('todo', {})), step(text('done'))] });
    const agent = await host.newSession();
    const observed: AgentEvent[] = [];
    agent.subscribe((event) => observed.push(event));
    const { events } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(observed.map((event) => event.seq)).toEqual(events.map((event) => event.seq));
    expect(observed).toEqual(events);
    const cut = events[3]!.seq;
    expect(agent.eventsSince(cut).map((event) => event.seq)).toEqual(
      events.filter((event) => event.seq > cut).map((event) => event.seq),
    );
  });

  it('eventsSince after a 3,000-delta answer returns each buffered delta as emitted, text and reasoning alike', async () => {
    const answer = Array.from({ length: 3_000 }, (_, index) => String.fromCharCode(97 + (index % 26))).join('');
    host = await createTestHost({ script: [step(reasoning('why', 1), text(answer, 1))] });
    const agent = await host.newSession();
    const observed: AgentEvent[] = [];
    agent.subscribe((event) => observed.push(event));
    const { result } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(result.outcome).toBe('completed');
    const streamed = observed.filter((event) => event.type === 'message.delta');
    expect(streamed.map((event) => (event as { text: string }).text).join('')).toBe(answer);
    expect((await host.store.loadConversation(agent.sessionId)).at(-1)?.content).toBe(answer);
    // The ring holds the newest EVENT_BUFFER_SIZE events: equal, field for field and in order, to those delivered.
    const buffered = agent.eventsSince(0);
    expect(buffered).toHaveLength(EVENT_BUFFER_SIZE);
    expect(buffered).toEqual(observed.slice(-EVENT_BUFFER_SIZE));
    const middle = observed[observed.length - 500]!.seq;
    expect(agent.eventsSince(middle)).toEqual(observed.slice(-499));
  });

  it('a disabled tool the model names anyway does not run: the call answers that the tool is unknown', async () => {
    const cwd = workspace();
    host = await createTestHost({
      script: [step(toolCall('write_file', { path: 'made.txt', content: 'x' }, 'call_w')), step(text('done'))],
    });
    const agent = await host.newSession({ cwd });
    agent.setToolEnabled('write_file', false);
    const { result } = await collectTurn(agent.runTurn({ text: 'write it' }));
    expect(result.outcome).toBe('completed');
    expect(existsSync(join(cwd, 'made.txt'))).toBe(false);
    const offered = (host.model.calls[0]!.tools ?? []) as { name: string }[];
    expect(offered.map((tool) => tool.name)).not.toContain('write_file');
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows[2]).toMatchObject({ role: 'tool', toolCallId: 'call_w' });
    expect(String(rows[2]!.content)).toContain('Unknown tool "write_file"');
  });

  it('a tool registered in a toolset that is not enabled is neither offered nor run when the model names it', async () => {
    let executed = 0;
    const secret: ToolDefinition<Record<string, never>> = {
      name: 'secret_tool',
      description: 'A tool of a toolset the user did not enable.',
      inputSchema: { type: 'object', properties: {} },
      toolset: 'extra',
      kind: 'other',
      readOnly: true,
      async execute() {
        executed += 1;
        return { content: 'secret ran' };
      },
    };
    host = await createTestHost({
      tools: [secret as ToolDefinition],
      script: [step(toolCall('secret_tool', {}, 'call_s')), step(text('done'))],
    });
    const agent = await host.newSession({ cwd: workspace() });
    const { events, result } = await collectTurn(agent.runTurn({ text: 'run the secret tool' }));
    expect(result.outcome).toBe('completed');
    expect(executed).toBe(0);
    const offered = (host.model.calls[0]!.tools ?? []) as { name: string }[];
    expect(offered.map((tool) => tool.name)).not.toContain('secret_tool');
    expect(events.find((event) => event.type === 'tool.end')).toMatchObject({ name: 'secret_tool', status: 'failed' });
    const answered = JSON.stringify(host.model.calls[1]!.messages);
    expect(answered).toContain('Unknown tool \\"secret_tool\\"');
    expect(answered).not.toContain('secret ran');
  });
});
