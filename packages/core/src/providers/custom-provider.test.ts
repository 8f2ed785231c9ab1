import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load.js';
import { createProviderCatalog } from './catalog.js';

/*
 * Checklist 43, custom-provider part: a tiny OpenAI-compatible server on loopback records each
 * request and answers with a minimal streamed chat completion.
 */

interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

const requests: RecordedRequest[] = [];
let server: Server;
let origin: string;
let homeDir: string;

function chunk(payload: Record<string, unknown>): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'some-model', ...payload })}\n\n`;
}

beforeAll(async () => {
  server = createServer((request, response) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (part: string) => {
      text += part;
    });
    request.on('end', () => {
      requests.push({
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
      });
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.write(
        chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }] }),
      );
      response.write(chunk({ choices: [{ index: 0, delta: { content: ' there' }, finish_reason: null }] }));
      response.write(
        chunk({
          choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
          usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 },
        }),
      );
      response.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(async () => {
  requests.length = 0;
  homeDir = await mkdtemp(path.join(tmpdir(), 'hermes-custom-'));
});

afterEach(async () => {
  await rm(homeDir, { recursive: true, force: true });
});

async function streamOnce(model: LanguageModelV3): Promise<LanguageModelV3StreamPart[]> {
  const { stream } = await model.doStream({
    prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  });
  const parts: LanguageModelV3StreamPart[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
  }
  return parts;
}

function streamedText(parts: LanguageModelV3StreamPart[]): string {
  return parts.map((part) => (part.type === 'text-delta' ? part.delta : '')).join('');
}

const OTHER_KEYS = {
  OPENAI_API_KEY: 'sk-other-openai-key',
  ANTHROPIC_API_KEY: 'sk-ant-other-key',
  OPENROUTER_API_KEY: 'sk-or-other-key',
  VLLM_API_KEY: 'vllm-other-key',
};

function headerValues(request: RecordedRequest): string {
  return Object.values(request.headers).flat().join('\n');
}

describe('43. provider custom sends only HERMES_API_KEY to HERMES_BASE_URL', () => {
  it('sends Authorization: Bearer <HERMES_API_KEY> and never another provider’s key', async () => {
    const loaded = await loadConfig({
      homeDir,
      env: { HERMES_BASE_URL: `${origin}/v1`, HERMES_API_KEY: 'test-key', ...OTHER_KEYS },
    });
    const catalog = createProviderCatalog(loaded);
    const route = catalog.resolve('custom:some-model');
    expect(route.baseUrl).toBe(`${origin}/v1`);

    const parts = await streamOnce(catalog.createModel(route));
    expect(streamedText(parts)).toBe('Hello there');
    const finish = parts.find((part) => part.type === 'finish');
    expect(finish?.type === 'finish' && finish.usage.inputTokens.total).toBe(7);

    expect(requests).toHaveLength(1);
    const [request] = requests;
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe('Bearer test-key');
    expect(request?.body).toMatchObject({ model: 'some-model', stream: true, stream_options: { include_usage: true } });
    const seen = headerValues(request!);
    for (const key of Object.values(OTHER_KEYS)) expect(seen).not.toContain(key);
  });

  it('without HERMES_API_KEY no Authorization header is sent at all', async () => {
    const loaded = await loadConfig({ homeDir, env: { HERMES_BASE_URL: origin, ...OTHER_KEYS } });
    const catalog = createProviderCatalog(loaded);
    const route = catalog.resolve('some-model');
    expect(route.provider).toBe('custom');
    expect(route.baseUrl).toBe(`${origin}/v1`);

    expect(streamedText(await streamOnce(catalog.createModel(route)))).toBe('Hello there');
    expect(requests).toHaveLength(1);
    expect(requests[0]?.headers.authorization).toBeUndefined();
    const seen = headerValues(requests[0]!);
    for (const key of Object.values(OTHER_KEYS)) expect(seen).not.toContain(key);
  });

  it('the fetch option is used for every request', async () => {
    const loaded = await loadConfig({ homeDir, env: { HERMES_BASE_URL: `${origin}/v1`, HERMES_API_KEY: 'test-key' } });
    const fetched: string[] = [];
    const recordingFetch: typeof globalThis.fetch = (input, init) => {
      fetched.push(String(input instanceof Request ? input.url : input));
      return globalThis.fetch(input, init);
    };
    const catalog = createProviderCatalog(loaded, { fetch: recordingFetch });
    await streamOnce(catalog.createModel(catalog.resolve('custom:some-model')));
    expect(fetched).toEqual([`${origin}/v1/chat/completions`]);
  });

  it('provider openai sends its own key, not HERMES_API_KEY', async () => {
    const loaded = await loadConfig({
      homeDir,
      env: { OPENAI_BASE_URL: `${origin}/v1`, OPENAI_API_KEY: 'sk-openai-own-key', HERMES_API_KEY: 'hermes-only-key' },
    });
    const catalog = createProviderCatalog(loaded);
    expect(streamedText(await streamOnce(catalog.createModel(catalog.resolve('openai:gpt-4o'))))).toBe('Hello there');
    expect(requests[0]?.headers.authorization).toBe('Bearer sk-openai-own-key');
    expect(headerValues(requests[0]!)).not.toContain('hermes-only-key');
  });
});
