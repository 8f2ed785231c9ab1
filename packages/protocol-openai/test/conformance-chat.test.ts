// biome-ignore-all lint/suspicious/noExplicitAny: assertions dig into untyped JSON payloads of the wire.
import { request as httpRequest } from 'node:http';
import { fail, hang, step, text, toolCall } from '@hermes/core/testing';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { SECURITY_HEADERS } from '../src/index.js';
import { ChatCompletionChunkSchema } from '../src/wire/index.js';
import { dataOf, KEY, type Rig, readFrames, scopesSeen, startRig, until } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

type Call = { messages: unknown[]; aborted: boolean };

function transcript(call: Call | undefined): string[] {
  return ((call?.messages ?? []) as { role: string; content: unknown }[])
    .filter((message) => message.role === 'user' || message.role === 'assistant')
    .map((message) => {
      const content = message.content;
      if (typeof content === 'string') return `${message.role}:${content}`;
      const parts = (content as { type: string; text?: string }[]).filter((part) => part.type === 'text');
      return `${message.role}:${parts.map((part) => part.text).join('')}`;
    });
}

function systemOf(call: Call | undefined): string {
  return ((call?.messages ?? []) as { role: string; content: unknown }[])
    .filter((message) => message.role === 'system')
    .map((message) => String(message.content))
    .join('\n');
}

const user = (content: string) => ({ role: 'user' as const, content });

function post(_path: string, body: unknown, headers: Record<string, string> = {}) {
  return { method: 'POST', body: JSON.stringify(body), headers } as RequestInit & { headers: Record<string, string> };
}

describe('chat completions', () => {
  it('7. session-header continuity', async () => {
    rig = await startRig({
      script: [
        step(text('Nice to meet you, Ada.')),
        step(text('Ada.')),
        step(text('ok')),
        step(toolCall('test_sleep', { seconds: 30 })),
        step(text('late')),
      ],
    });
    const headers = { 'X-Hermes-Session-Id': 'conf-s1' };
    const one = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [user('My name is Ada.')] }, { headers })
      .withResponse();
    const two = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [user('What is my name?')] }, { headers })
      .withResponse();
    expect(transcript(rig.host.model.calls[1])).toEqual([
      'user:My name is Ada.',
      'assistant:Nice to meet you, Ada.',
      'user:What is my name?',
    ]);
    const three = await rig.client.chat.completions
      .create(
        {
          model: 'hermes-agent',
          messages: [user('fake'), { role: 'assistant', content: 'fake' }, user('q')],
        },
        { headers },
      )
      .withResponse();
    expect(JSON.stringify(rig.host.model.calls[2]?.messages)).not.toContain('fake');
    for (const answer of [one, two, three]) expect(answer.response.headers.get('x-hermes-session-id')).toBe('conf-s1');
    const controller = new AbortController();
    const streamed = await rig.client.chat.completions.create(
      { model: 'hermes-agent', messages: [user('sleep')], stream: true },
      { headers, signal: controller.signal },
    );
    const iterator = streamed[Symbol.asyncIterator]();
    await iterator.next();
    await until(() => rig?.host.model.calls.length === 4);

    const before = rig.requests.length;
    const busy = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [user('again')] }, { headers })
      .catch((error: unknown) => error);
    expect(busy).toBeInstanceOf(OpenAI.ConflictError);
    const conflict = busy as InstanceType<typeof OpenAI.ConflictError>;
    expect(conflict.code).toBe('session_busy');
    expect(conflict.headers?.get('x-should-retry')).toBe('false');
    expect(rig.requests.length - before).toBe(1);
    controller.abort();
  });

  it('8. session-header validation and echo', async () => {
    rig = await startRig({ script: [step(text('ok'))] });
    for (const value of ['a/b', 'a'.repeat(257)]) {
      const error = await rig.client.chat.completions
        .create({ model: 'hermes-agent', messages: [user('hi')] }, { headers: { 'X-Hermes-Session-Id': value } })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('invalid_session_id');
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('X-Hermes-Session-Id');
    }
    const { response } = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [user('hi')] }, { headers: { 'X-Hermes-Session-Key': 'mem-ada' } })
      .withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get('x-hermes-session-key')).toBe('mem-ada');
  });

  it('8. the turn sees memory scope mem-ada, on chat completions and on runs', async () => {
    rig = await startRig({
      script: [
        step(toolCall('test_scope', {})),
        step(text('ok')),
        step(toolCall('test_scope', {})),
        step(text('ok')),
        step(toolCall('test_scope', {})),
        step(text('ok')),
      ],
    });
    scopesSeen.length = 0;
    const headers = { 'X-Hermes-Session-Key': 'mem-ada' };
    const scoped = await rig.client.chat.completions.create(
      { model: 'hermes-agent', messages: [user('who am I')] },
      { headers },
    );
    expect(scoped.choices[0]?.message.content).toBe('ok');
    await rig.client.chat.completions.create({ model: 'hermes-agent', messages: [user('and without a key')] });
    const started = await rig.raw('/v1/runs', {
      method: 'POST',
      headers: { 'X-Hermes-Session-Key': 'mem-bob' },
      body: JSON.stringify({ input: 'who am I' }),
    });
    expect(started.status).toBe(202);
    const { run_id } = (await started.json()) as { run_id: string };
    await until(async () => {
      const status = (await (await rig!.raw(`/v1/runs/${run_id}`)).json()) as { status: string };
      return status.status === 'completed' || null;
    });
    expect(scopesSeen).toEqual(['mem-ada', null, 'mem-bob']);
  });

  it('9. request validation', async () => {
    rig = await startRig();
    const bad = await rig.raw('/v1/chat/completions', { method: 'POST', body: '{"messages":' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
    const empty = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [] })
      .catch((caught: unknown) => caught);
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError);
    expect((empty as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('missing_required_field');
    expect((empty as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('messages');
    const cases: [unknown, string, string | null][] = [
      [
        { messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'f' } }] }] },
        'unsupported_content_type',
        'messages[0].content',
      ],
      [
        { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }] },
        'invalid_image_url',
        null,
      ],
      [{ messages: [user('hi'), { role: 'assistant', content: 'yo' }] }, 'no_user_message', null],
      [{ messages: [user('hi')], stream: 'maybe' }, 'invalid_field', 'stream'],
    ];
    for (const [body, code, param] of cases) {
      const response = await rig.raw('/v1/chat/completions', post('', body));
      expect(response.status).toBe(400);
      const error = ((await response.json()) as { error: { code: string; param: string | null } }).error;
      expect(error.code).toBe(code);
      if (param) expect(error.param).toBe(param);
    }
    expect(rig.host.model.calls).toHaveLength(0);
  });

  it('10. body limits and content caps', async () => {
    rig = await startRig({ script: [step(text('ok'))] });
    const url = new URL(rig.base);
    const send = (headers: Record<string, string>, write?: (request: import('node:http').ClientRequest) => void) =>
      new Promise<{ status: number; body: string; headers: import('node:http').IncomingHttpHeaders }>(
        (resolve, reject) => {
          const request = httpRequest(
            {
              host: url.hostname,
              port: url.port,
              path: '/v1/chat/completions',
              method: 'POST',
              headers: { authorization: `Bearer ${KEY}`, ...headers },
            },
            (response) => {
              let body = '';
              response.on('data', (chunk) => {
                body += chunk;
              });
              response.on('end', () => resolve({ status: response.statusCode ?? 0, body, headers: response.headers }));
            },
          );
          request.on('error', reject);
          if (write) write(request);
          else request.flushHeaders();
        },
      );
    const declared = await send({ 'content-length': '10000001' });
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body).error.code).toBe('body_too_large');
    for (const [name, value] of Object.entries(SECURITY_HEADERS))
      expect(declared.headers[name.toLowerCase()]).toBe(value);
    const invalid = await send({ 'content-length': 'abc' }, (request) => request.end());
    expect(invalid.status).toBe(400);
    expect(JSON.parse(invalid.body).error.code).toBe('invalid_content_length');
    const chunked = await send({ 'transfer-encoding': 'chunked' }, (request) => {
      const piece = Buffer.alloc(1_000_000, 'a');
      let sent = 0;
      const pump = () => {
        while (sent < 10_000_001) {
          const size = Math.min(piece.length, 10_000_001 - sent);
          sent += size;
          if (!request.write(piece.subarray(0, size))) {
            request.once('drain', pump);
            return;
          }
        }
        request.end();
      };
      request.on('error', () => undefined);
      pump();
    }).catch(() => null);
    expect(chunked?.status).toBe(413);
    expect(JSON.parse(chunked?.body ?? '{}').error.code).toBe('body_too_large');
    const completion = await rig.client.chat.completions.create({
      model: 'hermes-agent',
      messages: [user('a'.repeat(70_000))],
    });
    expect(completion.choices[0]?.message.content).toBe('ok');
    expect(transcript(rig.host.model.calls[0])).toEqual([`user:${'a'.repeat(65_536)}`]);
  });

  it('11. developer role', async () => {
    rig = await startRig({ script: [step(text('Bonjour.'))] });
    const { response } = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [{ role: 'developer', content: 'Answer in French.' }, user('hi')] })
      .withResponse();
    expect(response.status).toBe(200);
    const call = rig.host.model.calls[0];
    const system = systemOf(call);
    expect(system).toContain('Answer in French.');
    expect(system.length).toBeGreaterThan('Answer in French.'.length);
    expect(((call?.messages ?? []) as { role: string }[]).some((message) => message.role === 'developer')).toBe(false);
  });

  it('13. chat stream wire format (raw)', async () => {
    rig = await startRig({ script: [step(text('Hel'), text('lo'))] });
    const response = await rig.raw('/v1/chat/completions', post('', { messages: [user('hi')], stream: true }));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('x-accel-buffering')).toBe('no');
    expect(response.headers.get('x-hermes-session-id')).toBeTruthy();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(response.headers.get(name)).toBe(value);
    const frames = await readFrames(response);
    expect(
      frames
        .join('\n')
        .split('\n')
        .some((line) => line.startsWith('event:') || line.startsWith('id:')),
    ).toBe(false);
    expect(frames.at(-1)).toBe('data: [DONE]');
    const chunks = frames.slice(0, -1).map(dataOf) as {
      id: string;
      object: string;
      created: number;
      model: string;
      choices: { delta: Record<string, unknown>; finish_reason: string | null }[];
    }[];
    for (const chunk of chunks) {
      expect(ChatCompletionChunkSchema.safeParse(chunk).success).toBe(true);
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.choices).toHaveLength(1);
      expect([chunk.id, chunk.created, chunk.model]).toEqual([chunks[0]?.id, chunks[0]?.created, chunks[0]?.model]);
      expect('usage' in chunk).toBe(false);
    }
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Hello');
    const finished = chunks.filter((chunk) => chunk.choices[0]?.finish_reason !== null);
    expect(finished).toHaveLength(1);
    expect(finished[0]).toBe(chunks.at(-1));
    expect(finished[0]?.choices[0]).toMatchObject({ finish_reason: 'stop', delta: {} });
  });

  it('14. chat stream through the official client', async () => {
    rig = await startRig({ script: [step(text('Hel'), text('lo')), step(text('Hel'), text('lo'))] });
    const streamed = await rig.client.chat.completions.create({
      model: 'hermes-agent',
      messages: [user('hi')],
      stream: true,
    });
    let content = '';
    for await (const chunk of streamed) {
      const delta = chunk.choices[0]!.delta;
      content += delta.content ?? '';
    }
    expect(content).toBe('Hello');
    const final = await rig.client.chat.completions
      .stream({ model: 'hermes-agent', messages: [user('hi')] })
      .finalChatCompletion();
    expect(final.choices[0]?.message.role).toBe('assistant');
    expect(final.choices[0]?.message.content).toBe('Hello');
    expect(final.choices[0]?.finish_reason).toBe('stop');
  });

  it('15. include_usage', async () => {
    rig = await startRig({ script: [step(text('Hello')), step(text('Hello'))] });
    const response = await rig.raw(
      '/v1/chat/completions',
      post('', { messages: [user('hi')], stream: true, stream_options: { include_usage: true } }),
    );
    const frames = await readFrames(response);
    expect(frames.at(-1)).toBe('data: [DONE]');
    const chunks = frames.slice(0, -1).map(dataOf) as { choices: unknown[]; usage: Record<string, number> | null }[];
    for (const chunk of chunks.slice(0, -1)) expect(chunk.usage).toBeNull();
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(Number.isInteger(last?.usage?.total_tokens)).toBe(true);
    expect(last?.usage?.total_tokens).toBe((last?.usage?.prompt_tokens ?? 0) + (last?.usage?.completion_tokens ?? 0));
    const final = await rig.client.chat.completions
      .stream({ model: 'hermes-agent', messages: [user('hi')], stream_options: { include_usage: true } })
      .finalChatCompletion();
    expect(final.usage).toEqual(last?.usage);
  });

  it('16. keepalive frames keep an idle stream alive', async () => {
    // The 10 s interval is a setting of the app factory; a shorter one keeps the test fast.
    rig = await startRig({
      script: [step(text('Working'), toolCall('test_sleep', { seconds: 1.2 })), step(text(' done'))],
      keepaliveMs: 400,
    });
    const response = await rig.raw('/v1/chat/completions', post('', { messages: [user('hi')], stream: true }));
    const frames = await readFrames(response);
    expect(frames.filter((frame) => frame === ': keepalive').length).toBeGreaterThanOrEqual(2);
    const content = frames
      .filter((frame) => frame.startsWith('data: {'))
      .map((frame) => (dataOf(frame) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '')
      .join('');
    expect(content).toBe('Working done');
    expect(frames.at(-1)).toBe('data: [DONE]');
  });

  it('17. custom frames are opt-in (raw)', async () => {
    const script = () => [step(toolCall('test_echo', { text: 'x' })), step(text('done'))];
    rig = await startRig({ script: [...script(), ...script(), ...script()], settings: { chatStreamEvents: ['tool'] } });
    const read = async (headers: Record<string, string>) =>
      readFrames(await rig!.raw('/v1/chat/completions', post('', { messages: [user('hi')], stream: true }, headers)));
    const none = await read({ 'X-Hermes-Events': 'none' });
    expect(none.some((frame) => frame.startsWith('event:'))).toBe(false);
    const tool = await read({ 'X-Hermes-Events': 'tool' });
    const custom = tool.filter((frame) => frame.startsWith('event:'));
    expect(custom).toHaveLength(2);
    expect(custom.every((frame) => frame.startsWith('event: hermes.tool.progress\n'))).toBe(true);
    const [running, completed] = custom.map(dataOf) as Record<string, unknown>[];
    expect(running).toMatchObject({ tool: 'test_echo', status: 'running' });
    expect(typeof running?.emoji).toBe('string');
    expect(typeof running?.label).toBe('string');
    expect(completed).toEqual({ tool: 'test_echo', status: 'completed', toolCallId: running?.toolCallId });
    for (const frame of tool.filter((entry) => !entry.startsWith('event:')))
      expect(frame === 'data: [DONE]' || (dataOf(frame) as { object: string }).object === 'chat.completion.chunk').toBe(
        true,
      );
    const settingOnly = await read({});
    expect(settingOnly.filter((frame) => frame.startsWith('event:'))).toHaveLength(2);
  });

  it('18. agent failure is not retried', async () => {
    rig = await startRig({ script: [step(fail(400))] });
    const before = rig.requests.length;
    const error = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [user('hi')] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    const failure = error as InstanceType<typeof OpenAI.InternalServerError>;
    expect(failure.status).toBe(502);
    expect(failure.code).toBe('agent_incomplete');
    expect(failure.type).toBe('server_error');
    expect(failure.headers?.get('x-should-retry')).toBe('false');
    expect((failure.error as { hermes: { completed: boolean } }).hermes.completed).toBe(false);
    expect(rig.requests.length - before).toBe(1);
    expect(rig.host.model.calls).toHaveLength(1);
  });

  it('19. length-cut and iteration-limited answers', async () => {
    rig = await startRig({ script: [{ ...step(text('Part')), finishReason: 'length' }] });
    const cut = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [user('hi')] })
      .withResponse();
    expect(cut.data.choices[0]?.finish_reason).toBe('length');
    expect(cut.data.choices[0]?.message.content).toBe('Part');
    expect('hermes' in cut.data).toBe(false);
    expect(cut.response.headers.get('x-hermes-completed')).toBeNull();
    await rig.close();
    rig = await startRig({
      script: [step(toolCall('test_sleep', { seconds: 0 })), step(text('Summary.'))],
      config: { agent: { max_iterations: 1 } } as never,
    });
    const limited = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [user('hi')] })
      .withResponse();
    expect(limited.data.choices[0]?.finish_reason).toBe('length');
    expect(limited.data.choices[0]?.message.content).toBe('Summary.');
    expect((limited.data as unknown as { hermes: Record<string, unknown> }).hermes).toMatchObject({
      completed: false,
      error_code: 'iteration_limit',
      turn_exit_reason: 'max_iterations_reached(1/1)',
    });
    expect(limited.response.headers.get('x-hermes-completed')).toBe('false');
    expect(limited.response.headers.get('x-hermes-partial')).toBe('true');
    expect(limited.response.headers.get('x-hermes-error')).toBe('iteration_limit');
  });

  it('20. stream failure', async () => {
    rig = await startRig({ script: [step(text('Par'), fail(400)), step(text('Par'), fail(400))] });
    const frames = await readFrames(
      await rig.raw('/v1/chat/completions', post('', { messages: [user('hi')], stream: true })),
    );
    expect(frames).toHaveLength(4);
    const [role, content, finish] = frames.map(dataOf) as Record<string, any>[];
    expect(role?.choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(content?.choices[0].delta).toEqual({ content: 'Par' });
    expect(finish?.choices[0]).toMatchObject({ finish_reason: 'error', delta: {} });
    expect(finish?.error).toMatchObject({ code: 'agent_error', type: 'server_error' });
    expect(typeof finish?.hermes).toBe('object');
    expect(frames[3]).toBe('data: [DONE]');
    const before = rig.requests.length;
    const streamed = await rig.client.chat.completions.create({
      model: 'hermes-agent',
      messages: [user('hi')],
      stream: true,
    });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const chunk of streamed) seen.push(chunk.choices[0]?.delta.content ?? '');
    })().catch((caught: unknown) => caught);
    expect(seen.join('')).toBe('Par');
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(rig.requests.length - before).toBe(1);
  });

  it('21. concurrency cap', async () => {
    rig = await startRig({
      script: [step(toolCall('test_sleep', { seconds: 1 })), step(text('first')), step(text('second'))],
      settings: { maxConcurrentRuns: 1 },
    });
    const first = rig
      .raw('/v1/chat/completions', post('', { messages: [user('sleep')], stream: true }))
      .then(readFrames);
    await until(() => rig?.api.activeTurns() === 1);
    const error = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [user('other')] }, { maxRetries: 0 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const limited = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(limited.status).toBe(429);
    expect(limited.code).toBe('rate_limit_exceeded');
    expect(limited.headers?.get('retry-after')).toBe('1');
    expect(limited.headers?.get('x-should-retry')).toBeNull();
    const run = await rig.native
      .post('/v1/runs', { body: { input: 'x' }, maxRetries: 0 })
      .catch((caught: unknown) => caught);
    expect(run).toBeInstanceOf(OpenAI.RateLimitError);
    await first;
    await until(() => rig?.api.activeTurns() === 0);
    const after = await rig.client.chat.completions.create(
      { model: 'hermes-agent', messages: [user('other')] },
      { maxRetries: 0 },
    );
    expect(after.choices[0]?.message.content).toBe('second');
  });

  it('22. client disconnect interrupts the turn', async () => {
    rig = await startRig({
      script: [step(text('Start'), hang()), step(text('never'))],
      settings: { maxConcurrentRuns: 1 },
    });
    const exitReasons: string[] = [];
    const newSession = rig.host.newSession.bind(rig.host);
    // Observes the ephemeral agent the server creates, to read the turn's exit reason as the harness must.
    (rig.host as { newSession: typeof newSession }).newSession = async (options) => {
      const agent = await newSession(options);
      agent.subscribe((event) => {
        if (event.type === 'turn.end') exitReasons.push(event.result.exitReason);
      });
      return agent;
    };
    const controller = new AbortController();
    const streamed = await rig.client.chat.completions.create(
      { model: 'hermes-agent', messages: [user('hi')], stream: true },
      { signal: controller.signal },
    );
    const error = await (async () => {
      for await (const chunk of streamed) {
        if (chunk.choices[0]?.delta.content) streamed.controller.abort();
      }
    })().catch((caught: unknown) => caught);
    void error;
    await until(() => rig?.host.model.calls[0]?.aborted === true);
    await until(() => rig?.api.activeTurns() === 0);
    expect(exitReasons).toHaveLength(1);
    expect(exitReasons[0]).toMatch(/^interrupted_/);
    expect(exitReasons[0]).toContain('client_disconnect');
    expect(rig.host.model.calls).toHaveLength(1);
    const sessions = await rig.host.store.listSessions({});
    const derived = sessions.items.find((session) => session.id.startsWith('api-'));
    const rows = derived ? await rig.host.store.loadConversation(derived.id) : [];
    expect(rows.some((row) => row.finishReason === 'interrupted' || row.role === 'user')).toBe(true);
    rig.host.model.push(step(text('again')));
    const next = await rig.client.chat.completions.create(
      { model: 'hermes-agent', messages: [user('x')] },
      { maxRetries: 0 },
    );
    expect(next.choices[0]?.message.content).toBeTruthy();
  });
});
