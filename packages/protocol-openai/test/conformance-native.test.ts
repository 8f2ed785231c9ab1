// biome-ignore-all lint/suspicious/noExplicitAny: assertions dig into untyped JSON payloads of the wire.
import { createScriptedProvider, startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { SECURITY_HEADERS } from '../src/index.js';
import { dataOf, KEY, type Rig, readFrames, startRig, until } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

function expectSecurityHeaders(headers: Headers): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(headers.get(name)).toBe(value);
}

const user = (content: string) => ({ role: 'user' as const, content });

describe('model selection', () => {
  it('12. model precedence', async () => {
    const second = createScriptedProvider({});
    rig = await startRig({
      script: [step(text('default')), step(text('x'))],
      scripts: {
        'other-model': [step(text('other'))],
        'scripted-fast': [step(text('fast'))],
        'bare-model': [step(text('bare'))],
      },
      settings: { modelRoutes: { fast: { model: 'scripted-fast', provider: 'scripted' } } },
      providers: [{ id: 'scripted-b', local: true, create: (route, fetch) => second.create(route, fetch) }],
    });
    // A bare model this host does not know is refused, not silently answered by the default (issue 16.5, ADR 0010).
    const gpt = await rig.client.chat.completions
      .create({ model: 'gpt-4o', messages: [user('hi')] })
      .catch((caught: unknown) => caught);
    expect(gpt).toBeInstanceOf(OpenAI.NotFoundError);
    expect((gpt as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    const advertised = await rig.client.chat.completions.create({ model: 'hermes-agent', messages: [user('hi')] });
    expect(advertised.model).toBe('hermes-agent');
    expect(rig.host.model.calls).toHaveLength(1);
    await rig.client.chat.completions.create({
      model: 'other-model',
      provider: 'scripted',
      messages: [user('hi')],
    } as never);
    expect(rig.host.provider.model('other-model').calls).toHaveLength(1);
    await rig.client.chat.completions.create({ model: 'fast', messages: [user('hi')] });
    expect(rig.host.provider.model('scripted-fast').calls).toHaveLength(1);
    const conflict = await rig.client.chat.completions
      .create({ model: 'fast', provider: 'scripted-b', messages: [user('hi')] } as never)
      .catch((caught: unknown) => caught);
    expect((conflict as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('model_route_conflict');
    const unknown = await rig.client.chat.completions
      .create({ model: 'fast', provider: 'nope', messages: [user('hi')] } as never)
      .catch((caught: unknown) => caught);
    expect((unknown as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('unknown_provider');
    const run = (await rig.native.post('/v1/runs', { body: { input: 'hi', model: 'bare-model' } })) as {
      run_id: string;
    };
    await readFrames(await rig.raw(`/v1/runs/${run.run_id}/events`));
    expect(rig.host.provider.model('bare-model').calls).toHaveLength(1);
  });
});

describe('chat approvals', () => {
  it('23. approvals on chat streams', async () => {
    const danger = () => step(toolCall('terminal', { command: 'rm -rf ./conformance-scratch' }));
    rig = await startRig({ script: [danger(), step(text('denied, fine')), danger(), step(text('ok'))] });
    const plain = await readFrames(
      await rig.raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ messages: [user('go')], stream: true }),
      }),
    );
    expect(plain.some((frame) => frame.split('\n').some((line) => line.startsWith('event:')))).toBe(false);
    const finish = plain.map(dataOf).filter((chunk) => typeof chunk === 'object') as {
      choices: { finish_reason: string | null }[];
    }[];
    expect(finish.at(-1)?.choices[0]?.finish_reason).toBe('stop');
    const followUp = JSON.stringify(rig.host.model.calls[1]?.messages);
    expect(followUp).toMatch(/denied|not approved|refused/i);

    const response = await rig.raw('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ messages: [user('go')], stream: true }),
      headers: { 'X-Hermes-Events': 'approval' },
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let buffer = '';
    while (!buffer.includes('event: approval.request')) buffer += new TextDecoder().decode((await reader.read()).value);
    while (!buffer.slice(buffer.indexOf('event: approval.request')).includes('\n\n'))
      buffer += new TextDecoder().decode((await reader.read()).value);
    const frames = buffer.split('\n\n');
    const chunkId = (dataOf(frames[0] ?? '') as { id: string }).id;
    const request = dataOf(frames.find((frame) => frame.startsWith('event: approval.request')) ?? '') as {
      run_id: string;
      request_id: string;
    };
    expect(request.run_id).toBe(chunkId);
    expect(request.request_id).toMatch(/^apr_/);
    const answer = await rig.native.post(`/v1/runs/${chunkId}/approval`, {
      body: { choice: 'deny', request_id: request.request_id },
    });
    expect(answer).toMatchObject({ resolved: 1 });
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += new TextDecoder().decode(value);
    }
    expect(buffer.trimEnd().endsWith('data: [DONE]')).toBe(true);
    await until(() => rig?.api.activeTurns() === 0);
    const before = rig.requests.length;
    const late = await rig.native
      .post(`/v1/runs/${chunkId}/approval`, { body: { choice: 'deny', request_id: request.request_id } })
      .catch((caught: unknown) => caught);
    expect(late).toBeInstanceOf(OpenAI.ConflictError);
    expect((late as InstanceType<typeof OpenAI.ConflictError>).code).toBe('approval_not_active');
    expect((late as InstanceType<typeof OpenAI.ConflictError>).headers?.get('x-should-retry')).toBe('false');
    expect(rig.requests.length - before).toBe(1);
    const status = await rig.native.get(`/v1/runs/${chunkId}`).catch((caught: unknown) => caught);
    expect((status as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('run_not_found');
  });
});

describe('sessions', () => {
  it('40. session resources', async () => {
    rig = await startRig();
    const created = await rig.native.post('/api/sessions', { body: { title: 'Conf A' } }).withResponse();
    expect(created.response.status).toBe(201);
    expect(created.data).toMatchObject({
      object: 'hermes.session',
      title: 'Conf A',
      source: 'api_server',
      message_count: 0,
    });
    const taken = await rig.native
      .post('/api/sessions', { body: { title: 'Conf A' } })
      .catch((caught: unknown) => caught);
    expect(taken).toBeInstanceOf(OpenAI.ConflictError);
    expect((taken as InstanceType<typeof OpenAI.ConflictError>).code).toBe('title_taken');
    const fixed = await rig.native.post('/api/sessions', { body: { id: 'conf-fixed' } }).withResponse();
    expect(fixed.response.status).toBe(201);
    expect((fixed.data as { id: string }).id).toBe('conf-fixed');
    const exists = await rig.native
      .post('/api/sessions', { body: { id: 'conf-fixed' } })
      .catch((caught: unknown) => caught);
    expect((exists as InstanceType<typeof OpenAI.ConflictError>).code).toBe('session_exists');
    const hidden = await rig.native.patch('/api/sessions/conf-fixed', { body: { hidden: true } });
    expect(hidden).toMatchObject({ hidden: true });
    const bogus = await rig.native
      .patch('/api/sessions/conf-fixed', { body: { bogus: 1 } })
      .catch((caught: unknown) => caught);
    expect((bogus as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('invalid_field');
    await rig.native.post('/api/sessions', { body: { title: 'Conf B' } });
    const page = (await rig.native.get('/api/sessions', { query: { limit: 1 } })) as {
      data: { id: string }[];
      has_more: boolean;
      next_cursor: string;
    };
    expect(page.data).toHaveLength(1);
    expect(page.has_more).toBe(true);
    expect(typeof page.next_cursor).toBe('string');
    const next = (await rig.native.get('/api/sessions', { query: { limit: 1, cursor: page.next_cursor } })) as {
      data: { id: string }[];
    };
    expect(next.data[0]?.id).not.toBe(page.data[0]?.id);
    const deleted = await rig.native.delete('/api/sessions/conf-fixed');
    expect(deleted).toMatchObject({ deleted: true });
    const gone = await rig.native.get('/api/sessions/conf-fixed').catch((caught: unknown) => caught);
    expect((gone as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('session_not_found');
  });

  it('41. session chat, non-stream', async () => {
    rig = await startRig({ script: [step(text('Hello.'))] });
    const session = (await rig.native.post('/api/sessions', { body: {} })) as { id: string };
    const { data, response } = await rig.native
      .post(`/api/sessions/${session.id}/chat`, { body: { message: 'hi' } })
      .withResponse();
    expect(data).toMatchObject({
      object: 'hermes.session.chat.completion',
      session_id: session.id,
      message: { role: 'assistant', content: 'Hello.' },
      completed: true,
    });
    const runId = (data as { run_id: string }).run_id;
    expect(runId).toMatch(/^run_/);
    expect(response.headers.get('x-hermes-session-id')).toBe(session.id);
    expect(((await rig.native.get(`/v1/runs/${runId}`)) as { status: string }).status).toBe('completed');
    const rows = (await rig.native.get(`/api/sessions/${session.id}/messages`)) as {
      data: { id: number; content: string }[];
    };
    expect(rows.data.map((row) => row.content)).toEqual(['hi', 'Hello.']);
    expect(Number.isInteger(rows.data[0]?.id)).toBe(true);
    expect((rows.data[1]?.id ?? 0) > (rows.data[0]?.id ?? 0)).toBe(true);
    const empty = await rig.native
      .post(`/api/sessions/${session.id}/chat`, { body: { message: '' } })
      .catch((caught: unknown) => caught);
    expect((empty as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('missing_message');
    const missing = await rig.native
      .post('/api/sessions/nope/chat', { body: { message: 'x' } })
      .catch((caught: unknown) => caught);
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('session_not_found');
  });

  it('42. session chat stream (raw)', async () => {
    rig = await startRig({ script: [step(text('He'), text('llo'))] });
    const session = (await rig.native.post('/api/sessions', { body: {} })) as { id: string };
    const frames = await readFrames(
      await rig.raw(`/api/sessions/${session.id}/chat/stream`, {
        method: 'POST',
        body: JSON.stringify({ message: 'hi' }),
      }),
    );
    const events = frames.map((frame) => {
      const lines = frame.split('\n');
      expect(lines[0]?.startsWith('event: ')).toBe(true);
      expect(lines.some((line) => line.startsWith('id:'))).toBe(false);
      return { name: lines[0]?.slice(7), data: dataOf(frame) as Record<string, any> };
    });
    const names = events.map((event) => event.name);
    const collapsed = names.filter((name, index) => name !== 'assistant.delta' || names[index - 1] !== name);
    expect(collapsed).toEqual([
      'run.started',
      'message.started',
      'assistant.delta',
      'assistant.completed',
      'run.completed',
      'done',
    ]);
    expect(events.map((event) => event.data.seq)).toEqual(events.map((_, index) => index + 1));
    for (const event of events) {
      expect(event.data.session_id).toBe(session.id);
      expect(event.data.run_id).toBe(events[0]?.data.run_id);
      expect(typeof event.data.ts).toBe('number');
    }
    const messageId = events[1]?.data.message.id;
    for (const event of events.filter((entry) => entry.name === 'assistant.delta'))
      expect(event.data.message_id).toBe(messageId);
    expect(events.find((event) => event.name === 'assistant.completed')?.data.content).toBe('Hello');
    expect(events.find((event) => event.name === 'run.completed')?.data.messages).toHaveLength(2);
  });

  it('a later session chat turn lists only its own rows, and a messages page only the rows after its mark (ADR 0093)', async () => {
    const started = await startRig({ script: [step(text('One')), step(text('Two'))] });
    rig = started;
    const session = (await started.native.post('/api/sessions', { body: {} })) as { id: string };
    const turn = async (message: string) => {
      const frames = await readFrames(
        await started.raw(`/api/sessions/${session.id}/chat/stream`, {
          method: 'POST',
          body: JSON.stringify({ message }),
        }),
      );
      const completed = frames.find((frame) => frame.startsWith('event: run.completed')) ?? '';
      return (dataOf(completed) as { messages: { id: number; role: string; content: string }[] }).messages;
    };
    const first = await turn('first');
    const second = await turn('second');
    expect(first.map((row) => [row.role, row.content])).toEqual([
      ['user', 'first'],
      ['assistant', 'One'],
    ]);
    expect(second.map((row) => [row.role, row.content])).toEqual([
      ['user', 'second'],
      ['assistant', 'Two'],
    ]);
    const page = (await started.native.get(`/api/sessions/${session.id}/messages`, {
      query: { after: first[1]?.id, limit: 1 },
    })) as { data: { id: number; content: string }[]; has_more: boolean };
    expect(page.data.map((row) => [row.id, row.content])).toEqual([[second[0]?.id, 'second']]);
    expect(page.has_more).toBe(true);
  });

  it('a session chat stream reports tool calls and commentary', async () => {
    rig = await startRig({
      script: [step(text('Looking. '), toolCall('test_echo', { text: 'x' })), step(text('Done'))],
    });
    const session = (await rig.native.post('/api/sessions', { body: {} })) as { id: string };
    const frames = await readFrames(
      await rig.raw(`/api/sessions/${session.id}/chat/stream`, {
        method: 'POST',
        body: JSON.stringify({ message: 'hi' }),
      }),
    );
    const names = frames.map((frame) => frame.split('\n')[0]?.slice(7));
    const collapsed = names.filter((name, index) => name !== 'assistant.delta' || names[index - 1] !== name);
    expect(collapsed).toEqual([
      'run.started',
      'message.started',
      'assistant.delta',
      'assistant.commentary',
      'tool.started',
      'tool.completed',
      'assistant.delta',
      'assistant.completed',
      'run.completed',
      'done',
    ]);
    const completed = dataOf(frames.find((frame) => frame.startsWith('event: tool.completed')) ?? '') as Record<
      string,
      unknown
    >;
    expect(completed).toMatchObject({ tool: 'test_echo', preview: 'x' });
  });

  it('43. fork', async () => {
    rig = await startRig({ script: [step(text('Hello.'))] });
    const session = (await rig.native.post('/api/sessions', { body: {} })) as { id: string };
    await rig.native.post(`/api/sessions/${session.id}/chat`, { body: { message: 'hi' } });
    const rows = (await rig.native.get(`/api/sessions/${session.id}/messages`)) as {
      data: { id: number; content: string }[];
    };
    const hi = rows.data.find((row) => row.content === 'hi')?.id;
    const fork = await rig.native
      .post(`/api/sessions/${session.id}/fork`, { body: { up_to_row_id: hi } })
      .withResponse();
    expect(fork.response.status).toBe(201);
    expect(fork.data).toMatchObject({ kind: 'branch', parent_session_id: session.id });
    const forkRows = (await rig.native.get(`/api/sessions/${(fork.data as { id: string }).id}/messages`)) as {
      data: { content: string }[];
    };
    expect(forkRows.data.map((row) => row.content)).toEqual(['hi']);
    const unknown = await rig.native.post('/api/sessions/nope/fork', { body: {} }).catch((caught: unknown) => caught);
    expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('session_not_found');
  });
});

describe('cross-cutting', () => {
  it('44. CORS (raw)', async () => {
    rig = await startRig({ script: [step(text('hi'))], settings: { corsOrigins: ['https://app.example'] } });
    const preflight = await fetch(`${rig.base}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://app.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,content-type,x-hermes-session-key,x-stainless-os',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(preflight.headers.get('vary')).toContain('Origin');
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, POST, PATCH, DELETE, OPTIONS');
    const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const name of [
      'Authorization',
      'Content-Type',
      'Idempotency-Key',
      'X-Hermes-Session-Id',
      'X-Hermes-Session-Key',
      'X-Hermes-Events',
      'Last-Event-ID',
      'x-stainless-os',
    ])
      expect(allowed).toContain(name.toLowerCase());
    expect(preflight.headers.get('access-control-max-age')).toBe('600');
    expectSecurityHeaders(preflight.headers);
    const ok = await rig.raw('/v1/models', { headers: { Origin: 'https://app.example' } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(ok.headers.get('access-control-expose-headers')).toContain('X-Hermes-Session-Id');
    const evil = await rig.raw('/v1/models', { headers: { Origin: 'https://evil.example' } });
    expect(evil.status).toBe(403);
    expect(((await evil.json()) as { error: { code: string } }).error.code).toBe('cors_origin_denied');
    expect((await rig.raw('/v1/models')).status).toBe(200);
    const sse = await rig.raw('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ messages: [user('hi')], stream: true }),
      headers: { Origin: 'https://app.example' },
    });
    expect(sse.headers.get('access-control-allow-origin')).toBe('https://app.example');
    await sse.text();
  });

  it('45. draining (in-process drain(); the SIGTERM wiring belongs to the hosts)', async () => {
    rig = await startRig({ script: [step(toolCall('test_sleep', { seconds: 60 }))] });
    const run = (await rig.native.post('/v1/runs', { body: { input: 'sleep' } })) as { run_id: string };
    const eventsResponse = rig.raw(`/v1/runs/${run.run_id}/events`).then((response) => response.text());
    await until(() => rig?.host.model.calls.length === 1);
    const drained = rig.api.drain({ timeoutMs: 500 });
    const refused = await rig.client.chat.completions
      .create({ model: 'hermes-agent', messages: [user('x')] }, { maxRetries: 0 })
      .catch((caught: unknown) => caught);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe('gateway_draining');
    expect((refused as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('1');
    expect((refused as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBeNull();
    expect((await fetch(`${rig.base}/health`)).status).toBe(200);
    expect(((await rig.native.get(`/v1/runs/${run.run_id}`)) as { status: string }).status).toBe('running');
    await drained;
    const body = await eventsResponse;
    const last = body
      .split('\n\n')
      .filter((frame) => frame.startsWith('id: '))
      .map((frame) => dataOf(frame) as Record<string, unknown>)
      .at(-1);
    expect(last).toMatchObject({
      event: 'run.interrupted',
      error: 'Gateway shutdown interrupted the run.',
      interrupted: true,
    });
    expect(body.endsWith(': stream closed\n\n')).toBe(true);
  });

  it('46. capabilities and model options', async () => {
    rig = await startRig();
    const capabilities = (await rig.native.get('/v1/capabilities')) as Record<string, any>;
    expect(capabilities.object).toBe('hermes.api_server.capabilities');
    expect(capabilities.auth).toEqual({ type: 'bearer', required: true });
    expect(capabilities.features.reasoning_streaming).toBe(false);
    expect('session_model_lock' in capabilities.features).toBe(false);
    // Browser-extension control has shipped (spec §24); it is off unless configured.
    expect(capabilities.features.browser_extension_control).toBe(false);
    // The 24 [v1] routes plus /v1/skills and /v1/toolsets, which ship with `skills_api` (spec §17, §24).
    expect(capabilities.features.skills_api).toBe(true);
    expect(Object.keys(capabilities.endpoints)).toHaveLength(26);
    for (const endpoint of Object.values(capabilities.endpoints) as { method: string; path: string }[]) {
      if (endpoint.method !== 'GET' || endpoint.path.includes('{')) continue;
      expect((await rig.raw(endpoint.path)).status).not.toBe(404);
    }
    const options = (await rig.native.get('/api/model/options')) as Record<string, any>;
    expect(typeof options.model).toBe('string');
    expect(typeof options.provider).toBe('string');
    for (const provider of options.providers) {
      expect(provider).toHaveProperty('id');
      expect(provider).toHaveProperty('name');
      expect(typeof provider.configured).toBe('boolean');
      expect(Array.isArray(provider.models)).toBe(true);
    }
  });

  it('46. model options: refresh=1 probes every saved custom provider, otherwise at most one', async () => {
    const endpoint = await startScriptedOpenAIServer({ script: [], apiKey: 'probe-key-123456', models: ['m1', 'm2'] });
    try {
      rig = await startRig({
        config: {
          providers: {
            alpha: { base_url: endpoint.baseURL, api_key: 'probe-key-123456' },
            beta: { base_url: endpoint.baseURL },
          },
        } as never,
      });
      const probes = () => endpoint.requests.filter((request) => request.path === '/v1/models').length;
      await rig.native.get('/api/model/options');
      expect(probes()).toBeLessThanOrEqual(1);
      const before = probes();
      const refreshed = (await rig.native.get('/api/model/options', { query: { refresh: 1 } })) as Record<string, any>;
      expect(probes() - before).toBe(2);
      const alpha = refreshed.providers.find((provider: { id: string }) => provider.id === 'alpha');
      const beta = refreshed.providers.find((provider: { id: string }) => provider.id === 'beta');
      expect(alpha).toMatchObject({ is_custom: true, error: null });
      expect(alpha.models.map((model: { id: string }) => model.id)).toEqual(expect.arrayContaining(['m1', 'm2']));
      expect(beta.error).toContain('401');
      expect(JSON.stringify(refreshed)).not.toContain('probe-key-123456');
    } finally {
      await endpoint.close();
    }
  });

  it('47. detailed health', async () => {
    rig = await startRig();
    const detailed = (await rig.native.get('/health/detailed')) as Record<string, any>;
    expect(detailed).toMatchObject({ status: 'ok', gateway_state: 'running' });
    expect(detailed.readiness.checks.database.ok).toBe(true);
    expect(detailed.api_server.max_concurrent_runs).toBe(10);
    expect(Number.isInteger(detailed.pid)).toBe(true);
    const serialized = JSON.stringify(detailed);
    expect(serialized).not.toContain(KEY);
    expect(serialized).not.toContain(rig.host.homeDir);
  });

  it('48. security headers everywhere (raw)', async () => {
    rig = await startRig({ script: [step(text('x'))], settings: { corsOrigins: ['https://app.example'] } });
    expectSecurityHeaders((await fetch(`${rig.base}/v1/models`)).headers);
    expectSecurityHeaders((await rig.raw('/v1/nope')).headers);
    const sse = await rig.raw('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ messages: [user('hi')], stream: true }),
    });
    expectSecurityHeaders(sse.headers);
    await sse.text();
    const preflight = await fetch(`${rig.base}/v1/models`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'GET' },
    });
    expectSecurityHeaders(preflight.headers);
    const tooLarge = await fetch(`${rig.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: 'x'.repeat(10_000_001),
    });
    expect(tooLarge.status).toBe(413);
    expectSecurityHeaders(tooLarge.headers);
  });
});
