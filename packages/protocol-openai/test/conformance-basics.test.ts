import { createHash } from 'node:crypto';
import { step, text } from '@hermes/core/testing';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { SECURITY_HEADERS } from '../src/index.js';
import { ChatCompletionSchema } from '../src/wire/index.js';
import { type Rig, startRig } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

function expectSecurityHeaders(headers: Headers): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(headers.get(name)).toBe(value);
}

function userTexts(call: { messages: unknown[] }): string[] {
  return (call.messages as { role: string; content: unknown }[])
    .filter((message) => message.role === 'user' || message.role === 'assistant')
    .map((message) => {
      const content = message.content;
      if (typeof content === 'string') return `${message.role}:${content}`;
      const parts = (content as { type: string; text?: string }[]).filter((part) => part.type === 'text');
      return `${message.role}:${parts.map((part) => part.text).join('')}`;
    });
}

function _systemText(call: { messages: unknown[] }): string {
  return (call.messages as { role: string; content: unknown }[])
    .filter((message) => message.role === 'system')
    .map((message) => String(message.content))
    .join('\n');
}

describe('health, auth and models', () => {
  it('1. health is open', async () => {
    rig = await startRig();
    for (const path of ['/health', '/v1/health']) {
      const response = await fetch(rig.base + path);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expectSecurityHeaders(response.headers);
      const body = (await response.json()) as Record<string, unknown>;
      expect(Object.keys(body).sort()).toEqual(['platform', 'status', 'version']);
      expect(body.status).toBe('ok');
      expect(body.platform).toBe('hermes-agent');
      expect(typeof body.version === 'string' && body.version.length > 0).toBe(true);
      // Load balancers check health with HEAD: open too, same status, no body.
      const head = await fetch(rig.base + path, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expectSecurityHeaders(head.headers);
      expect(await head.text()).toBe('');
    }
  });

  it('2. auth failures', async () => {
    rig = await startRig();
    const wrong = new OpenAI({ baseURL: `${rig.base}/v1`, apiKey: 'wrong-key-wrong-key-000' });
    const error = await wrong.models.list().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    const authError = error as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(authError.status).toBe(401);
    expect(authError.code).toBe('gateway_auth_failed');
    expect(authError.type).toBe('gateway_auth_error');
    expect(authError.param).toBeNull();
    const bare = await fetch(`${rig.base}/v1/models`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe('Bearer');
    expect(await bare.json()).toEqual({
      error: {
        message: 'Invalid gateway API key (API_SERVER_KEY)',
        type: 'gateway_auth_error',
        param: null,
        code: 'gateway_auth_failed',
      },
    });
    expect((await fetch(`${rig.base}/health/detailed`)).status).toBe(401);
    expect((await fetch(`${rig.base}/v1/nope`)).status).toBe(401);
    const notFound = await rig.native.get('/v1/nope').catch((caught: unknown) => caught);
    expect(notFound).toBeInstanceOf(OpenAI.NotFoundError);
    expect((notFound as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('not_found');
  });

  // Check 3 (weak keys refuse to start) starts apps/server as a process: see apps/server/test/server.test.ts.

  it('4. model list', async () => {
    rig = await startRig({ settings: { modelRoutes: { fast: { model: 'scripted-fast', provider: 'scripted' } } } });
    const page = await rig.client.models.list();
    expect(page.data).toHaveLength(2);
    expect(page.data[0]).toMatchObject({ id: 'hermes-agent', object: 'model', owned_by: 'hermes', parent: null });
    expect(Number.isInteger(page.data[0]?.created)).toBe(true);
    expect(page.data[1]).toMatchObject({ id: 'fast', parent: 'hermes-agent' });
    const raw = (await (await rig.raw('/v1/models')).json()) as { object: string };
    expect(raw.object).toBe('list');
  });
});

describe('chat completions', () => {
  it('5. non-stream chat completion', async () => {
    rig = await startRig({ script: [{ ...step(text('Hello.')), usage: { inputTokens: 50, outputTokens: 7 } }] });
    const { data, response } = await rig.client.chat.completions
      .create({
        model: 'hermes-agent',
        messages: [
          { role: 'system', content: 'Be terse.' },
          { role: 'user', content: 'hi' },
        ],
      })
      .withResponse();
    expect(ChatCompletionSchema.safeParse(data).success).toBe(true);
    expect(data.id).toMatch(/^chatcmpl-[0-9a-f]{29}$/);
    expect(data.object).toBe('chat.completion');
    expect(Number.isInteger(data.created)).toBe(true);
    expect(data.model).toBe('hermes-agent');
    expect(data.choices).toHaveLength(1);
    expect(data.choices[0]?.message).toEqual({ role: 'assistant', content: 'Hello.', refusal: null });
    expect(data.choices[0]?.logprobs).toBeNull();
    expect(data.choices[0]?.finish_reason).toBe('stop');
    expect(data.usage).toMatchObject({ prompt_tokens: 50, completion_tokens: 7, total_tokens: 57 });
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const derived = `api-${createHash('sha256').update('Be terse.\nhi').digest('hex').slice(0, 16)}`;
    expect(response.headers.get('x-hermes-session-id')).toBe(derived);
  });

  it('6. header-less history and the derived session', async () => {
    rig = await startRig({ script: [step(text('Hello.')), step(text('Fine.'))] });
    const first = await rig.client.chat.completions
      .create({
        model: 'hermes-agent',
        messages: [
          { role: 'system', content: 'Be terse.' },
          { role: 'user', content: 'hi' },
        ],
      })
      .withResponse();
    const second = await rig.client.chat.completions
      .create({
        model: 'hermes-agent',
        messages: [
          { role: 'system', content: 'Be terse.' },
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'Hello.' },
          { role: 'user', content: 'again' },
        ],
      })
      .withResponse();
    const call = rig.host.model.calls[1];
    expect(call && userTexts(call)).toEqual(['user:hi', 'assistant:Hello.', 'user:again']);
    const sessionId = first.response.headers.get('x-hermes-session-id');
    expect(second.response.headers.get('x-hermes-session-id')).toBe(sessionId);
    const rows = (await rig.native.get(`/api/sessions/${sessionId}/messages`)) as { data: { content: string }[] };
    expect(rows.data.map((row) => row.content)).toEqual(['hi', 'Hello.', 'again', 'Fine.']);
  });
});
