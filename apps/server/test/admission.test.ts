import { fail, hang, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { connectGateway } from './support/gateway-client.js';
import {
  runCleanups,
  type StartedServer,
  scriptedModel,
  scriptedServerEnv,
  sleep,
  startServer,
  until,
} from './support/server-process.js';

/**
 * Issue 37.1 and 32.7 against apps/server as a real child process: every turn-starting route gives its concurrency
 * slot back on every path out (a failed turn, a busy refusal, a client gone mid-turn), and a session with a turn in
 * flight on any surface is busy on every other one: 409 `session_busy` on HTTP, the busy-input policy on the gateway.
 */

const KEY = 'test-key-0123456789abcdef';
const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
afterEach(runCleanups);

/** A raw WebSocket client of the gateway, keeping every frame it receives. */
const gatewayClient = (server: StartedServer) => connectGateway(server, KEY);

/** Runs `count` tasks, `width` at a time. */
async function pool(count: number, width: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const index = next;
        next += 1;
        await task(index);
      }
    }),
  );
}

describe('admission on every turn-starting route (37.1, 32.7)', () => {
  it('50 failed, 50 refused and 50 aborted requests per route leave no slot taken; SIGTERM then drains and exits 0', async () => {
    const model = await scriptedModel();
    const server = await startServer(scriptedServerEnv(KEY, model));
    const post = async (
      path: string,
      body: unknown,
      init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
    ) => {
      // A 429 only means the slots of turns that just ended are not all back yet: the turn is retried after a moment.
      for (let attempt = 0; ; attempt += 1) {
        const response = await fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { ...auth, ...init.headers },
          body: JSON.stringify(body),
          ...(init.signal ? { signal: init.signal } : {}),
        });
        if (response.status !== 429 || attempt > 400) return response;
        await response.arrayBuffer();
        await sleep(50);
      }
    };
    const health = async () => {
      const response = await fetch(`${server.url}/health/detailed`, { headers: auth });
      const body = (await response.json()) as { api_server: { active_turns: number; busy_sessions: number } };
      return body.api_server;
    };
    const newSession = async () => {
      const created = await post('/api/sessions', {});
      expect(created.status).toBe(201);
      return ((await created.json()) as { id: string }).id;
    };
    const waitRun = (runId: string) =>
      until(
        async () => {
          const polled = await fetch(`${server.url}/v1/runs/${runId}`, { headers: auth });
          return ((await polled.json()) as { status: string }).status;
        },
        (status) => ['completed', 'failed', 'cancelled', 'interrupted'].includes(status),
        `run ${runId} settled`,
      );
    /** Reads a streamed body until `marker` arrives, then lets the connection go. */
    const readUntil = async (response: Response, marker: string, controller: AbortController) => {
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let seen = '';
      while (!seen.includes(marker)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${marker}: ${seen.slice(-500)}`);
        seen += decoder.decode(value, { stream: true });
      }
      controller.abort();
      await reader.cancel().catch(() => undefined);
    };
    const modelSaw = (marker: string) =>
      until(
        () => model.calls.some((call) => JSON.stringify(call.messages).includes(marker)),
        (seen) => seen,
        `the model call of ${marker}`,
      );
    const routes = [
      'chat',
      'chat_stream',
      'responses',
      'responses_stream',
      'runs',
      'session_chat',
      'session_chat_stream',
    ] as const;
    type Route = (typeof routes)[number];

    // Phase 1: failed turns (the model answers 400), through every route.
    const failing = async (route: Route, marker: string) => {
      const message = `fail ${marker}`;
      if (route === 'chat' || route === 'chat_stream') {
        const stream = route === 'chat_stream';
        const response = await post('/v1/chat/completions', {
          model: 'hermes-agent',
          stream,
          messages: [{ role: 'user', content: message }],
        });
        const body = await response.text();
        if (stream) expect(body).toContain('"finish_reason":"error"');
        else expect(response.status, body).toBe(502);
      } else if (route === 'responses' || route === 'responses_stream') {
        const stream = route === 'responses_stream';
        const response = await post('/v1/responses', { model: 'hermes-agent', stream, input: message });
        const body = await response.text();
        expect(body).toContain('"failed"');
      } else if (route === 'runs') {
        const created = await post('/v1/runs', { input: message });
        expect(created.status).toBe(202);
        expect(await waitRun(((await created.json()) as { run_id: string }).run_id)).toBe('failed');
      } else {
        const sessionId = await newSession();
        const path = route === 'session_chat' ? 'chat' : 'chat/stream';
        const response = await post(`/api/sessions/${sessionId}/${path}`, { message });
        expect(response.status).toBe(200);
        expect(await response.text()).toContain('"completed":false');
      }
    };
    model.push(...Array.from({ length: 50 * routes.length }, () => step(fail(400))));
    for (const route of routes) await pool(50, 4, (index) => failing(route, `${route}-${index}`));
    expect(model.remaining).toBe(0);
    expect(await until(health, (state) => state.active_turns === 0, 'slots back after failed turns')).toMatchObject({
      active_turns: 0,
      busy_sessions: 0,
    });

    // Phase 2: busy refusals. A gateway turn holds session S; a streamed Responses turn holds conversation C.
    model.push(step(text('gateway holding '), hang()), step(text('responses holding '), hang()));
    const gateway = await gatewayClient(server);
    const created = await gateway.call('session.create', {});
    const runtimeId = created.result?.session_id as string;
    const storedId = created.result?.stored_session_id as string;
    await gateway.call('prompt.submit', { session_id: runtimeId, text: 'hold the session' });
    await gateway.waitFor(
      (frame) => frame.params?.type === 'message.delta' && frame.params.session_id === runtimeId,
      'the gateway turn streaming',
    );
    const holderController = new AbortController();
    const holder = await post(
      '/v1/responses',
      { model: 'hermes-agent', stream: true, input: 'hold the conversation', conversation: 'busy-conversation' },
      { signal: holderController.signal },
    );
    const holderReader = (holder.body as ReadableStream<Uint8Array>).getReader();
    let holderSeen = '';
    while (!holderSeen.includes('responses holding')) {
      const { value } = await holderReader.read();
      holderSeen += new TextDecoder().decode(value);
    }
    expect(await health()).toMatchObject({ active_turns: 1, busy_sessions: 2 });
    const refused = async (route: Route, index: number) => {
      let response: Response;
      if (route === 'chat' || route === 'chat_stream')
        response = await post(
          '/v1/chat/completions',
          {
            model: 'hermes-agent',
            stream: route === 'chat_stream',
            messages: [{ role: 'user', content: `r${index}` }],
          },
          { headers: { 'X-Hermes-Session-Id': storedId } },
        );
      else if (route === 'responses' || route === 'responses_stream')
        response = await post('/v1/responses', {
          model: 'hermes-agent',
          stream: route === 'responses_stream',
          input: `r${index}`,
          conversation: 'busy-conversation',
        });
      else if (route === 'runs') response = await post('/v1/runs', { input: `r${index}`, session_id: storedId });
      else
        response = await post(`/api/sessions/${storedId}/${route === 'session_chat' ? 'chat' : 'chat/stream'}`, {
          message: `r${index}`,
        });
      const body = (await response.json()) as { error?: { code: string } };
      expect(response.status, `${route}: ${JSON.stringify(body)}`).toBe(409);
      expect(body.error?.code).toBe('session_busy');
    };
    for (const route of routes) await pool(50, 4, (index) => refused(route, index));
    expect(await health()).toMatchObject({ active_turns: 1, busy_sessions: 2 });
    // Both holders end; the sessions are free again.
    await gateway.call('session.interrupt', { session_id: runtimeId });
    holderController.abort();
    await holderReader.cancel().catch(() => undefined);
    expect(
      await until(health, (state) => state.active_turns === 0 && state.busy_sessions === 0, 'holders settled'),
    ).toMatchObject({ active_turns: 0, busy_sessions: 0 });

    // Phase 3: clients gone mid-turn. The model streams a little and then waits, so only the disconnect ends a turn.
    const aborted = async (route: Route, marker: string) => {
      const message = `abort ${marker}`;
      const controller = new AbortController();
      const options = { signal: controller.signal };
      if (route === 'chat_stream' || route === 'responses_stream' || route === 'session_chat_stream') {
        const path =
          route === 'chat_stream'
            ? '/v1/chat/completions'
            : route === 'responses_stream'
              ? '/v1/responses'
              : `/api/sessions/${await newSession()}/chat/stream`;
        const body =
          route === 'chat_stream'
            ? { model: 'hermes-agent', stream: true, messages: [{ role: 'user', content: message }] }
            : route === 'responses_stream'
              ? { model: 'hermes-agent', stream: true, input: message }
              : { message };
        await readUntil(await post(path, body, options), 'partial', controller);
      } else if (route === 'runs') {
        const createdRun = await post('/v1/runs', { input: message });
        const runId = ((await createdRun.json()) as { run_id: string }).run_id;
        // A run outlives its readers (spec §19): its reader leaves mid-stream, then the client stops it.
        const reader = await fetch(`${server.url}/v1/runs/${runId}/events`, { headers: auth, ...options });
        await readUntil(reader, 'partial', controller);
        const stopped = await post(`/v1/runs/${runId}/stop`, {});
        expect(stopped.status).toBeLessThan(300);
        expect(['cancelled', 'interrupted']).toContain(await waitRun(runId));
      } else {
        const path =
          route === 'chat'
            ? '/v1/chat/completions'
            : route === 'responses'
              ? '/v1/responses'
              : `/api/sessions/${await newSession()}/chat`;
        const body =
          route === 'chat'
            ? { model: 'hermes-agent', messages: [{ role: 'user', content: message }] }
            : route === 'responses'
              ? { model: 'hermes-agent', input: message }
              : { message };
        const pending = post(path, body, options).catch((error: unknown) => error);
        await modelSaw(message);
        controller.abort();
        await pending;
      }
    };
    model.push(...Array.from({ length: 50 * routes.length }, () => step(text('partial answer '), hang())));
    for (const route of routes) await pool(50, 4, (index) => aborted(route, `${route}-${index}`));
    expect(model.remaining).toBe(0);
    expect(
      await until(health, (state) => state.active_turns === 0 && state.busy_sessions === 0, 'slots back after aborts'),
    ).toMatchObject({ active_turns: 0, busy_sessions: 0 });

    // A normal turn is admitted and answered, on a route that shares the cap with all of the above.
    model.push(step(text('still serving')));
    const normal = await post('/v1/chat/completions', {
      model: 'hermes-agent',
      messages: [{ role: 'user', content: 'are you still there?' }],
    });
    expect(normal.status).toBe(200);
    expect(((await normal.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe(
      'still serving',
    );
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 600_000);

  it('the gateway queues input behind a turn the HTTP API runs on its session, and runs it when that turn ends', async () => {
    const model = await scriptedModel();
    const server = await startServer(scriptedServerEnv(KEY, model, 'display:\n  busy_input_mode: queue\n'));
    model.push(step(text('first')));
    const gateway = await gatewayClient(server);
    const created = await gateway.call('session.create', {});
    const runtimeId = created.result?.session_id as string;
    const storedId = created.result?.stored_session_id as string;
    await gateway.call('prompt.submit', { session_id: runtimeId, text: 'hello' });
    await gateway.waitFor(
      (frame) => frame.params?.type === 'message.complete' && frame.params.session_id === runtimeId,
      'the first gateway turn',
    );

    // A run on the same stored session, held by the model until the gateway input is in.
    model.push(step(text('run answer '), hang()), step(text('the queued gateway answer')));
    const createdRun = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ input: 'from HTTP', session_id: storedId }),
    });
    const runId = ((await createdRun.json()) as { run_id: string }).run_id;
    await until(
      () => model.calls.length,
      (count) => count === 2,
      'the run reaching the model',
    );
    const queued = await gateway.call('prompt.submit', { session_id: runtimeId, text: 'after the run' });
    expect(queued.result).toEqual({ status: 'queued' });
    // The gateway shows the run's turn on its session too (ADR 0053).
    const shownStarts = gateway.events(runtimeId, 'message.start');
    expect(shownStarts.map((frame) => frame.params?.payload?.input)).toEqual([
      { role: 'user', text: 'hello' },
      { role: 'user', text: 'from HTTP' },
    ]);

    // The run ends; the queued input starts as the gateway's next turn, on the same stored session.
    await fetch(`${server.url}/v1/runs/${runId}/stop`, { method: 'POST', headers: auth });
    const second = await gateway.waitFor(
      (frame) =>
        frame.params?.type === 'message.complete' &&
        frame.params.session_id === runtimeId &&
        frame.params.payload?.text === 'the queued gateway answer',
      'the queued gateway turn',
    );
    expect(second.params?.payload?.status).toBe('complete');
    const starts = gateway.events(runtimeId, 'message.start');
    expect(starts.at(-1)?.params?.payload?.input).toEqual({ role: 'user', text: 'after the run' });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 180_000);
});
