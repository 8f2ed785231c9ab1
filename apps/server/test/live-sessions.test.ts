import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { hang, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../../packages/core/test/support/postgres-global-setup.js';
import { connectGateway, type Frame } from './support/gateway-client.js';
import {
  runCleanups,
  type StartedServer,
  scriptedModel,
  scriptedServerEnv,
  startInstancePair,
  startServer,
  temp,
  until,
} from './support/server-process.js';

/**
 * Issue 35.4 against apps/server as a real child process: one live session across protocols. A turn on a stored
 * session started from any HTTP surface streams its events to the gateway clients attached to that session, its
 * approval can be answered from the gateway or the runs API, and its busy state is one; across two instances on one
 * PostgreSQL database through the run bus (ADR 0053).
 */

const KEY = 'test-key-0123456789abcdef';
const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
afterEach(runCleanups);

const post = (server: StartedServer, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { ...auth, ...headers }, body: JSON.stringify(body) });

/** A gateway client attached to a new persisted session; resolves with the client and the session's ids. */
async function attachedClient(server: StartedServer, cwd?: string) {
  const client = await connectGateway(server, KEY);
  await client.call('client.capabilities', { server_requests: true });
  const created = await client.call('session.create', { persist: true, ...(cwd ? { cwd } : {}) });
  expect(created.error).toBeUndefined();
  return {
    client,
    runtimeId: created.result?.session_id as string,
    storedId: created.result?.stored_session_id as string,
  };
}

/**
 * Starts a run with `input` on the stored session through `server`'s runs API, waits until the gateway client shows
 * its turn and the model has had `calls` calls in all (the run's included), and resolves with the run id.
 */
async function runSeen(
  server: StartedServer,
  client: Awaited<ReturnType<typeof connectGateway>>,
  model: { calls: unknown[] },
  run: { input: string; storedId: string; calls: number; label: string },
): Promise<string> {
  const created = await post(server, '/v1/runs', { input: run.input, session_id: run.storedId });
  const runId = ((await created.json()) as { run_id: string }).run_id;
  await client.waitFor(
    (frame) =>
      frame.params?.type === 'message.start' &&
      (frame.params.payload?.input as { text?: string } | null)?.text === run.input,
    run.label,
  );
  await until(
    () => model.calls.length,
    (count) => count === run.calls,
    `${run.label}: the run reaching the model`,
  );
  return runId;
}

/** The session's events of one turn on the client, from the `message.start` whose input is `input` to its end. */
async function turnSeen(client: Awaited<ReturnType<typeof connectGateway>>, runtimeId: string, input: string) {
  const ofSession = () =>
    client.frames.filter((frame) => frame.method === 'event' && frame.params?.session_id === runtimeId);
  const start = await client.waitFor(
    (frame) =>
      frame.params?.session_id === runtimeId &&
      frame.params?.type === 'message.start' &&
      (frame.params.payload?.input as { text?: string } | null)?.text === input,
    `message.start of "${input}"`,
  );
  const startSeq = start.params?.seq as number;
  await client.waitFor(
    (frame) =>
      frame.params?.session_id === runtimeId &&
      frame.params?.type === 'message.complete' &&
      (frame.params.seq as number) > startSeq,
    `message.complete after "${input}"`,
  );
  const events = ofSession().filter((frame) => (frame.params?.seq as number) >= startSeq);
  const end = events.findIndex((frame) => frame.params?.type === 'message.complete');
  return events.slice(0, end + 1);
}

const types = (events: Frame[]) => events.map((frame) => frame.params?.type);
const deltaText = (events: Frame[]) =>
  events
    .filter((frame) => frame.params?.type === 'message.delta')
    .map((frame) => frame.params?.payload?.text)
    .join('');

describe('one live session across protocols (35.4)', () => {
  it('a gateway client attached to S sees the turns that /api/sessions/S/chat, /v1/runs and chat completions run on S', async () => {
    const model = await scriptedModel();
    const server = await startServer(scriptedServerEnv(KEY, model));
    const { client, runtimeId, storedId } = await attachedClient(server);

    // Session chat, with a tool call: deltas, the tool's start and end, and the complete message.
    model.push(
      step(toolCall('terminal', { command: 'echo from-session-chat' })),
      step(text('session chat '), text('answer')),
    );
    const chat = await post(server, `/api/sessions/${storedId}/chat`, { message: 'via session chat' });
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as { message: { content: string } }).message.content).toBe('session chat answer');
    const first = await turnSeen(client, runtimeId, 'via session chat');
    expect(types(first)).toContain('tool.start');
    expect(types(first)).toContain('tool.complete');
    const tool = first.find((frame) => frame.params?.type === 'tool.complete');
    expect(tool?.params?.payload?.name).toBe('terminal');
    expect(deltaText(first)).toBe('session chat answer');
    expect(first.at(-1)?.params?.payload).toMatchObject({ text: 'session chat answer', status: 'complete' });

    // A run of the runs API on the same session.
    model.push(step(text('run '), text('answer')));
    const run = await post(server, '/v1/runs', { input: 'via runs', session_id: storedId });
    expect(run.status).toBe(202);
    const second = await turnSeen(client, runtimeId, 'via runs');
    expect(deltaText(second)).toBe('run answer');
    expect(second.at(-1)?.params?.payload).toMatchObject({ text: 'run answer', status: 'complete' });

    // A chat completion naming the session.
    model.push(step(text('completion '), text('answer')));
    const completion = await post(
      server,
      '/v1/chat/completions',
      { model: 'hermes-agent', messages: [{ role: 'user', content: 'via chat completions' }] },
      { 'X-Hermes-Session-Id': storedId },
    );
    expect(completion.status).toBe(200);
    const third = await turnSeen(client, runtimeId, 'via chat completions');
    expect(deltaText(third)).toBe('completion answer');
    expect(third.at(-1)?.params?.payload).toMatchObject({ text: 'completion answer', status: 'complete' });

    // The gateway's own next turn continues the same conversation: the HTTP turns are in its transcript.
    model.push(step(text('gateway answer')));
    await client.call('prompt.submit', { session_id: runtimeId, text: 'via the gateway' });
    await turnSeen(client, runtimeId, 'via the gateway');
    const history = await client.call('session.history', { session_id: runtimeId });
    const shown = JSON.stringify(history.result);
    for (const answer of ['session chat answer', 'run answer', 'completion answer', 'gateway answer'])
      expect(shown).toContain(answer);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 180_000);

  it('a Responses turn chained onto a session the gateway shows streams to the gateway client too', async () => {
    const model = await scriptedModel();
    const server = await startServer(scriptedServerEnv(KEY, model));
    model.push(step(text('first response')));
    const first = await post(server, '/v1/responses', { model: 'hermes-agent', input: 'start a conversation' });
    expect(first.status).toBe(200);
    const storedId = first.headers.get('X-Hermes-Session-Id') as string;
    const responseId = ((await first.json()) as { id: string }).id;

    // The gateway client resumes the session the response ran in; the next response in the chain runs there (§14.2).
    const client = await connectGateway(server, KEY);
    const resumed = await client.call('session.resume', { session_id: storedId });
    expect(resumed.error).toBeUndefined();
    const runtimeId = resumed.result?.session_id as string;
    model.push(step(text('chained '), text('answer')));
    const chained = await post(server, '/v1/responses', {
      model: 'hermes-agent',
      input: 'continue it',
      previous_response_id: responseId,
    });
    expect(chained.status).toBe(200);
    expect(chained.headers.get('X-Hermes-Session-Id')).toBe(storedId);
    const seen = await turnSeen(client, runtimeId, 'continue it');
    expect(deltaText(seen)).toBe('chained answer');
    expect(seen.at(-1)?.params?.payload).toMatchObject({ text: 'chained answer', status: 'complete' });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 180_000);

  it('an approval an HTTP run waits for is answered from the gateway, and one answered through the runs API is withdrawn from the gateway', async () => {
    const model = await scriptedModel();
    const server = await startServer(scriptedServerEnv(KEY, model));
    const workspace = temp('hermes-workspace-');
    mkdirSync(join(workspace, 'scratch-one'));
    mkdirSync(join(workspace, 'scratch-two'));
    const { client, runtimeId, storedId } = await attachedClient(server, workspace);

    // The run asks; the gateway client gets the approval as a server request and answers it.
    model.push(
      step(toolCall('terminal', { command: 'rm -rf ./scratch-one' })),
      step(text('removed after the gateway said yes')),
    );
    const created = await post(server, '/v1/runs', { input: 'clean scratch one', session_id: storedId });
    const runId = ((await created.json()) as { run_id: string }).run_id;
    const asked = await client.waitFor((frame) => frame.method === 'approval', 'the approval request on the gateway');
    expect(asked.params).toMatchObject({ session_id: runtimeId, command: 'rm -rf ./scratch-one' });
    const waiting = (await (await fetch(`${server.url}/v1/runs/${runId}`, { headers: auth })).json()) as {
      status: string;
      approval?: { request_id: string };
    };
    expect(waiting.status).toBe('waiting_for_approval');
    expect(waiting.approval?.request_id).toBe(asked.params?.request_id);
    // The HTTP run is the gateway session's running turn too, in its snapshot and its info.
    const during = await client.call('session.activate', { session_id: runtimeId, omit_messages: true });
    expect(during.result).toMatchObject({ running: true, status: 'waiting', info: { running: true } });
    client.send({ jsonrpc: '2.0', id: asked.id, result: { choice: 'once' } });
    const done = await until(
      async () =>
        (await (await fetch(`${server.url}/v1/runs/${runId}`, { headers: auth })).json()) as Record<string, unknown>,
      (status) => status.status === 'completed',
      'the run completing',
    );
    expect(done.output).toBe('removed after the gateway said yes');
    expect(existsSync(join(workspace, 'scratch-one'))).toBe(false);
    // The run's own event stream says the client answered it.
    const events = await (await fetch(`${server.url}/v1/runs/${runId}/events`, { headers: auth })).text();
    expect(events).toContain('"event":"approval.responded"');
    expect(events).toContain('"source":"client"');
    await turnSeen(client, runtimeId, 'clean scratch one');

    // The next run's approval is answered through the runs API: the gateway's copy is withdrawn as resolved.
    model.push(
      step(toolCall('terminal', { command: 'rm -rf ./scratch-two' })),
      step(text('removed after the runs API said yes')),
    );
    const again = await post(server, '/v1/runs', { input: 'clean scratch two', session_id: storedId });
    const againId = ((await again.json()) as { run_id: string }).run_id;
    const secondAsk = await client.waitFor(
      (frame) => frame.method === 'approval' && frame.id !== asked.id,
      'the second approval request on the gateway',
    );
    const answered = await post(server, `/v1/runs/${againId}/approval`, { choice: 'once' });
    expect(answered.status).toBe(200);
    await client.waitFor(
      (frame) =>
        frame.params?.type === 'request.cancel' &&
        frame.params.payload?.id === secondAsk.id &&
        frame.params.payload?.reason === 'resolved',
      'request.cancel of the second approval',
    );
    const secondTurn = await turnSeen(client, runtimeId, 'clean scratch two');
    expect(secondTurn.at(-1)?.params?.payload?.text).toBe('removed after the runs API said yes');
    expect(existsSync(join(workspace, 'scratch-two'))).toBe(false);

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 180_000);

  it('a gateway turn is a run of the runs API: active_run_id names it, its approval, events and a steer are served through /v1/runs, and a stop ends it', async () => {
    const model = await scriptedModel();
    const server = await startServer(scriptedServerEnv(KEY, model));
    const workspace = temp('hermes-workspace-');
    mkdirSync(join(workspace, 'scratch-gateway'));
    const { client, runtimeId, storedId } = await attachedClient(server, workspace);
    const get = async (path: string) =>
      (await fetch(`${server.url}${path}`, { headers: auth })).json() as Promise<Record<string, unknown>>;

    model.push(
      step(toolCall('terminal', { command: 'rm -rf ./scratch-gateway' })),
      step(text('gateway turn '), text('done')),
    );
    await client.call('prompt.submit', { session_id: runtimeId, text: 'clean the gateway scratch' });
    const asked = await client.waitFor((frame) => frame.method === 'approval', 'the gateway turn’s approval');
    const session = await get(`/api/sessions/${storedId}`);
    const runId = session.active_run_id as string;
    expect(runId).toMatch(/^run_turn_/);
    const waiting = await get(`/v1/runs/${runId}`);
    expect(waiting).toMatchObject({
      object: 'hermes.run',
      run_id: runId,
      session_id: storedId,
      status: 'waiting_for_approval',
      approval: { request_id: asked.params?.request_id, command: 'rm -rf ./scratch-gateway', pending: 1 },
    });
    // A reader of the run's events, opened while it waits: the pending request leads its stream.
    const stream = await fetch(`${server.url}/v1/runs/${runId}/events`, { headers: auth });
    expect(stream.status).toBe(200);
    const streamed = stream.text();
    // The rules of §19.7 and §19.8 hold for it: a choice the request does not know, a steer while it waits.
    const code = async (response: Response) => ((await response.json()) as { error: { code: string } }).error.code;
    const unknownChoice = await post(server, `/v1/runs/${runId}/approval`, { choice: 'maybe' });
    expect([unknownChoice.status, await code(unknownChoice)]).toEqual([400, 'invalid_approval_choice']);
    const steerWhileWaiting = await post(server, `/v1/runs/${runId}/steer`, { input: 'hurry' });
    expect([steerWhileWaiting.status, await code(steerWhileWaiting)]).toEqual([409, 'run_not_accepting_steer']);

    const answered = await post(server, `/v1/runs/${runId}/approval`, { choice: 'once' });
    expect(answered.status).toBe(200);
    expect(await answered.json()).toMatchObject({ run_id: runId, choice: 'once', resolved: 1 });
    await client.waitFor(
      (frame) =>
        frame.params?.type === 'request.cancel' &&
        frame.params.payload?.id === asked.id &&
        frame.params.payload?.reason === 'resolved',
      'the gateway’s approval withdrawn as resolved',
    );
    const turn = await turnSeen(client, runtimeId, 'clean the gateway scratch');
    expect(turn.at(-1)?.params?.payload).toMatchObject({ text: 'gateway turn done', status: 'complete' });
    expect(existsSync(join(workspace, 'scratch-gateway'))).toBe(false);

    const events = (await streamed)
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    // The stream began while the approval waited (the tool's start came before it): the request, its answer, the
    // tool's end, the reply and the terminal event, numbered from 0.
    const names = events.map((event) => event.event);
    expect(names.slice(0, 3)).toEqual(['approval.request', 'approval.responded', 'tool.completed']);
    expect(names.at(-1)).toBe('run.completed');
    expect(new Set(names.slice(3, -1))).toEqual(new Set(['message.delta']));
    expect(events.map((event) => event.delta ?? '').join('')).toBe('gateway turn done');
    expect(events.map((event) => event.seq)).toEqual(events.map((_event, index) => index));
    expect(events[0]).toMatchObject({ run_id: runId, request_id: asked.params?.request_id });
    expect(events[1]).toMatchObject({ choice: 'once', source: 'client' });
    expect(events.at(-1)).toMatchObject({ output: 'gateway turn done', completed: true });
    expect(await get(`/v1/runs/${runId}`)).toMatchObject({ status: 'completed', output: 'gateway turn done' });
    expect((await get(`/api/sessions/${storedId}`)).active_run_id).toBeNull();
    const late = await post(server, `/v1/runs/${runId}/approval`, { choice: 'once' });
    expect([late.status, await code(late)]).toEqual([409, 'approval_not_active']);
    const stopAfterEnd = await post(server, `/v1/runs/${runId}/stop`, {});
    expect(await stopAfterEnd.json()).toMatchObject({ run_id: runId, status: 'completed' });

    // A steer through the runs API reaches the next gateway turn at its tool boundary.
    model.push(step(toolCall('terminal', { command: 'sleep 3' })), step(text('steer answered')));
    await client.call('prompt.submit', { session_id: runtimeId, text: 'take your time' });
    await client.waitFor(
      (frame) =>
        frame.params?.type === 'tool.start' &&
        (frame.params.payload?.args as { command?: string } | undefined)?.command === 'sleep 3',
      'the gateway turn’s tool call',
    );
    const steerId = (await get(`/api/sessions/${storedId}`)).active_run_id as string;
    expect(steerId).toMatch(/^run_turn_/);
    const steered = await post(server, `/v1/runs/${steerId}/steer`, { input: 'prefer brevity' });
    expect(steered.status).toBe(200);
    expect(await steered.json()).toEqual({ object: 'hermes.run.steer', run_id: steerId, accepted: true });
    const steeredTurn = await turnSeen(client, runtimeId, 'take your time');
    expect(steeredTurn.at(-1)?.params?.payload).toMatchObject({ text: 'steer answered', status: 'complete' });
    expect(JSON.stringify(model.calls.at(-1))).toContain('prefer brevity');

    // A stop through the runs API ends the next gateway turn, which the gateway shows interrupted.
    model.push(step(text('holding '), hang()));
    await client.call('prompt.submit', { session_id: runtimeId, text: 'hold on' });
    const holding = await until(
      () => get(`/api/sessions/${storedId}`),
      (current) => typeof current.active_run_id === 'string' && current.active_run_id !== steerId,
      'the fourth gateway turn as the active run',
    );
    const stopId = holding.active_run_id as string;
    await until(
      () => model.calls.length,
      (count) => count === 5,
      'the fourth gateway turn reaching the model',
    );
    const stopped = await post(server, `/v1/runs/${stopId}/stop`, {});
    expect(stopped.status).toBe(200);
    expect(await stopped.json()).toEqual({ object: 'hermes.run', run_id: stopId, status: 'stopping' });
    const interrupted = await turnSeen(client, runtimeId, 'hold on');
    expect(interrupted.at(-1)?.params?.payload?.status).toBe('interrupted');
    expect(await get(`/v1/runs/${stopId}`)).toMatchObject({
      status: 'cancelled',
      interrupted: true,
      turn_exit_reason: 'interrupted_by_user',
    });
    const unknown = await fetch(`${server.url}/v1/runs/run_turn_unknown`, { headers: auth });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('run_not_found');
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 180_000);

  it('a session busy on one surface is busy on every other: 409 session_busy over HTTP, 4009 or the busy-input policy on the gateway', async () => {
    const model = await scriptedModel();
    const server = await startServer(scriptedServerEnv(KEY, model, 'display:\n  busy_input_mode: queue\n'));
    const { client, runtimeId, storedId } = await attachedClient(server);

    // A gateway turn holds the session: every HTTP surface refuses a second turn on it.
    model.push(step(text('gateway holding '), hang()));
    await client.call('prompt.submit', { session_id: runtimeId, text: 'hold on' });
    await until(
      () => model.calls.length,
      (count) => count === 1,
      'the gateway turn reaching the model',
    );
    const refusals = [
      await post(server, `/api/sessions/${storedId}/chat`, { message: 'second' }),
      await post(server, '/v1/runs', { input: 'second', session_id: storedId }),
      await post(
        server,
        '/v1/chat/completions',
        { model: 'hermes-agent', messages: [{ role: 'user', content: 'second' }] },
        { 'X-Hermes-Session-Id': storedId },
      ),
    ];
    for (const refused of refusals) {
      expect(refused.status).toBe(409);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('session_busy');
    }
    await client.call('session.interrupt', { session_id: runtimeId });
    await client.waitFor(
      (frame) => frame.params?.type === 'message.complete' && frame.params.session_id === runtimeId,
      'the interrupted gateway turn',
    );

    // An HTTP run holds the session: the gateway refuses what needs an idle session and queues new input.
    model.push(step(text('run holding '), hang()), step(text('queued input answered')));
    const runId = await runSeen(server, client, model, {
      input: 'run holds',
      storedId,
      calls: 2,
      label: 'the run’s turn on the gateway',
    });
    const undo = await client.call('session.undo', { session_id: runtimeId });
    expect(undo.error?.code).toBe(4009);
    const queued = await client.call('prompt.submit', { session_id: runtimeId, text: 'after the run' });
    expect(queued.result).toEqual({ status: 'queued' });
    await post(server, `/v1/runs/${runId}/stop`, {});
    const stopped = await turnSeen(client, runtimeId, 'run holds');
    expect(stopped.at(-1)?.params?.payload?.status).toBe('interrupted');
    const queuedTurn = await turnSeen(client, runtimeId, 'after the run');
    expect(queuedTurn.at(-1)?.params?.payload?.text).toBe('queued input answered');
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 180_000);
});

describe('one live session across instances on one PostgreSQL database (35.4)', () => {
  it('a turn run on B through its HTTP API is seen by a gateway client attached on A, which answers its approval', async () => {
    const workspace = temp('hermes-workspace-');
    mkdirSync(join(workspace, 'remote-scratch'));
    const { a, b } = await startInstancePair(
      [
        step(text('answered '), text('on B')),
        step(toolCall('terminal', { command: 'rm -rf ./remote-scratch' })),
        step(text('removed on B after A said yes')),
        step(text('A continues')),
      ],
      { key: KEY, configYaml: 'session:\n  auto_title: false\n' },
    );
    const { client, runtimeId, storedId } = await attachedClient(a, workspace);

    const chat = await post(b, `/api/sessions/${storedId}/chat`, { message: 'a turn on B' });
    expect(chat.status).toBe(200);
    const seen = await turnSeen(client, runtimeId, 'a turn on B');
    expect(deltaText(seen)).toBe('answered on B');
    expect(seen.at(-1)?.params?.payload).toMatchObject({ text: 'answered on B', status: 'complete' });

    const created = await post(b, '/v1/runs', { input: 'clean up on B', session_id: storedId });
    expect(created.status).toBe(202);
    const runId = ((await created.json()) as { run_id: string }).run_id;
    const asked = await client.waitFor((frame) => frame.method === 'approval', 'B’s approval on A’s client');
    expect(asked.params).toMatchObject({ session_id: runtimeId, command: 'rm -rf ./remote-scratch' });
    client.send({ jsonrpc: '2.0', id: asked.id, result: { choice: 'once' } });
    const done = await until(
      async () =>
        (await (await fetch(`${b.url}/v1/runs/${runId}`, { headers: auth })).json()) as Record<string, unknown>,
      (status) => status.status === 'completed',
      'the run on B completing',
    );
    expect(done.output).toBe('removed on B after A said yes');
    expect(existsSync(join(workspace, 'remote-scratch'))).toBe(false);
    const remoteTurn = await turnSeen(client, runtimeId, 'clean up on B');
    expect(types(remoteTurn)).toContain('tool.complete');

    // A's own next turn continues the conversation with B's turns in it: the turn reloads the changed transcript.
    await client.call('prompt.submit', { session_id: runtimeId, text: 'and on A' });
    const own = await turnSeen(client, runtimeId, 'and on A');
    expect(own.at(-1)?.params?.payload?.text).toBe('A continues');
    const history = JSON.stringify((await client.call('session.history', { session_id: runtimeId })).result);
    for (const answer of ['answered on B', 'removed on B after A said yes', 'A continues'])
      expect(history).toContain(answer);
  }, 180_000);

  it('a gateway turn on A is read, answered and stopped through the runs API of B; a client on A interrupts and steers turns running on B', async () => {
    const workspace = temp('hermes-workspace-');
    mkdirSync(join(workspace, 'cross-scratch'));
    const { a, b, model } = await startInstancePair(
      [
        step(toolCall('terminal', { command: 'rm -rf ./cross-scratch' })),
        step(text('removed after B said yes')),
        step(text('A holding '), hang()),
        step(text('B holding '), hang()),
        step(toolCall('terminal', { command: 'sleep 6' })),
        step(text('steered on B')),
      ],
      { key: KEY, configYaml: 'session:\n  auto_title: false\n' },
    );
    const { client, runtimeId, storedId } = await attachedClient(a, workspace);
    const getFrom = async (server: StartedServer, path: string) =>
      (await fetch(`${server.url}${path}`, { headers: auth })).json() as Promise<Record<string, unknown>>;

    // A's gateway turn waits for an approval; B, which does not show the session, finds the turn through the hub.
    await client.call('prompt.submit', { session_id: runtimeId, text: 'clean up on A' });
    const asked = await client.waitFor((frame) => frame.method === 'approval', 'the approval on A');
    const runId = (await getFrom(a, `/api/sessions/${storedId}`)).active_run_id as string;
    expect(runId).toMatch(/^run_turn_/);
    expect(await getFrom(b, `/v1/runs/${runId}`)).toMatchObject({
      status: 'waiting_for_approval',
      session_id: storedId,
      approval: { request_id: asked.params?.request_id },
    });
    // B's reader of the turn's events: B watches the session from now on, and A sends it the turn from its start.
    const stream = await fetch(`${b.url}/v1/runs/${runId}/events`, { headers: auth });
    expect(stream.status).toBe(200);
    const streamed = stream.text();
    const answered = await post(b, `/v1/runs/${runId}/approval`, { choice: 'once' });
    expect(answered.status).toBe(200);
    await client.waitFor(
      (frame) =>
        frame.params?.type === 'request.cancel' &&
        frame.params.payload?.id === asked.id &&
        frame.params.payload?.reason === 'resolved',
      'A’s approval withdrawn as resolved',
    );
    const first = await turnSeen(client, runtimeId, 'clean up on A');
    expect(first.at(-1)?.params?.payload).toMatchObject({ text: 'removed after B said yes', status: 'complete' });
    expect(existsSync(join(workspace, 'cross-scratch'))).toBe(false);
    expect(await getFrom(b, `/v1/runs/${runId}`)).toMatchObject({
      status: 'completed',
      output: 'removed after B said yes',
    });
    const events = (await streamed)
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    const names = events.map((event) => event.event);
    for (const name of ['approval.request', 'tool.started', 'approval.responded', 'tool.completed'])
      expect(names.filter((seen) => seen === name)).toHaveLength(1);
    expect(names.at(-1)).toBe('run.completed');
    expect(events.at(-1)).toMatchObject({ run_id: runId, output: 'removed after B said yes' });
    expect(events.map((event) => event.delta ?? '').join('')).toBe('removed after B said yes');
    expect(events.map((event) => event.seq)).toEqual(events.map((_event, index) => index));

    // A stop through B's runs API ends A's next gateway turn.
    await client.call('prompt.submit', { session_id: runtimeId, text: 'hold on A' });
    const holding = await until(
      () => getFrom(a, `/api/sessions/${storedId}`),
      (current) => typeof current.active_run_id === 'string' && current.active_run_id !== runId,
      'A’s second turn as the active run',
    );
    await until(
      () => model.calls.length,
      (count) => count === 3,
      'A’s second turn reaching the model',
    );
    const stopId = holding.active_run_id as string;
    const stopped = await post(b, `/v1/runs/${stopId}/stop`, {});
    expect(stopped.status).toBe(200);
    expect(await stopped.json()).toMatchObject({ run_id: stopId, status: 'stopping' });
    const second = await turnSeen(client, runtimeId, 'hold on A');
    expect(second.at(-1)?.params?.payload?.status).toBe('interrupted');

    // A run on B holds the session: A's client interrupts it, on B.
    const heldRun = await runSeen(b, client, model, {
      input: 'hold on B',
      storedId,
      calls: 4,
      label: 'B’s run on A’s client',
    });
    const interrupt = await client.call('session.interrupt', { session_id: runtimeId });
    expect(interrupt.result).toEqual({ status: 'interrupted' });
    const third = await turnSeen(client, runtimeId, 'hold on B');
    expect(third.at(-1)?.params?.payload?.status).toBe('interrupted');
    expect(
      await until(
        () => getFrom(b, `/v1/runs/${heldRun}`),
        (status) => status.status === 'cancelled',
        'B’s run cancelled',
      ),
    ).toMatchObject({ turn_exit_reason: 'interrupted_by_user' });

    // Another run on B, in a tool call: A's client steers it, and B's model reads the steer.
    const steered = await post(b, '/v1/runs', { input: 'steer me on B', session_id: storedId });
    const steeredRun = ((await steered.json()) as { run_id: string }).run_id;
    await client.waitFor(
      (frame) =>
        frame.params?.type === 'tool.start' &&
        frame.params.session_id === runtimeId &&
        (frame.params.payload?.args as { command?: string } | undefined)?.command === 'sleep 6',
      'B’s tool call on A’s client',
    );
    const steer = await client.call('session.steer', { session_id: runtimeId, text: 'prefer the left door' });
    expect(steer.result).toEqual({ status: 'queued', text: 'prefer the left door' });
    const done = await until(
      () => getFrom(b, `/v1/runs/${steeredRun}`),
      (status) => status.status === 'completed',
      'the steered run on B completing',
    );
    expect(done.output).toBe('steered on B');
    expect(JSON.stringify(model.calls.at(-1))).toContain('prefer the left door');
    // A turn id no instance knows: every instance says so, and the answer is 404.
    const unknown = await fetch(`${b.url}/v1/runs/run_turn_nowhere`, { headers: auth });
    expect(unknown.status).toBe(404);
  }, 240_000);

  it('an interrupt from a client on A of a turn on a frozen B is an error, then goes through; busy input redirects a run streaming on B', async () => {
    const { a, b, model } = await startInstancePair(
      [step(text('B holding '), hang()), step(text('B streaming '), hang()), step(text('plan b it is'))],
      {
        key: KEY,
        configYaml: 'session:\n  auto_title: false\n',
      },
    );
    const { client, runtimeId, storedId } = await attachedClient(a);
    const runId = await runSeen(b, client, model, {
      input: 'hold on B',
      storedId,
      calls: 1,
      label: 'B’s run on A’s client',
    });
    b.child.kill('SIGSTOP');
    let refused: Awaited<ReturnType<typeof client.call>>;
    try {
      refused = await client.call('session.interrupt', { session_id: runtimeId });
    } finally {
      b.child.kill('SIGCONT');
    }
    expect(refused.error).toMatchObject({
      code: 5000,
      message: 'interrupt failed: the instance running this turn did not answer; retry',
    });
    const retried = await client.call('session.interrupt', { session_id: runtimeId });
    expect(retried.result).toEqual({ status: 'interrupted' });
    const seen = await turnSeen(client, runtimeId, 'hold on B');
    expect(seen.at(-1)?.params?.payload?.status).toBe('interrupted');
    const status = await until(
      async () =>
        (await (await fetch(`${b.url}/v1/runs/${runId}`, { headers: auth })).json()) as Record<string, unknown>,
      (current) => current.status === 'cancelled',
      'B’s run cancelled',
    );
    expect(status.turn_exit_reason).toBe('interrupted_by_user');

    // Input sent while a run on B streams (busy mode `interrupt`, the default) redirects that run, on B.
    const next = await post(b, '/v1/runs', { input: 'stream on B', session_id: storedId });
    const nextId = ((await next.json()) as { run_id: string }).run_id;
    await until(
      () => model.calls.length,
      (count) => count === 2,
      'the second run on B reaching the model',
    );
    const streamStart = await client.waitFor(
      (frame) =>
        frame.params?.type === 'message.start' &&
        (frame.params.payload?.input as { text?: string } | null)?.text === 'stream on B',
      'the second run on A’s client',
    );
    await client.waitFor(
      (frame) =>
        frame.params?.type === 'message.delta' && (frame.params.seq as number) > (streamStart.params?.seq as number),
      'the second run streaming on A’s client',
    );
    const redirected = await client.call('prompt.submit', { session_id: runtimeId, text: 'switch to plan b' });
    expect(redirected.result).toEqual({ status: 'redirected' });
    const finished = await until(
      async () =>
        (await (await fetch(`${b.url}/v1/runs/${nextId}`, { headers: auth })).json()) as Record<string, unknown>,
      (current) => current.status === 'completed',
      'the redirected run on B completing',
    );
    expect(finished.output).toBe('plan b it is');
    expect(JSON.stringify(model.calls.at(-1))).toContain('switch to plan b');
  }, 180_000);
});
