import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3Prompt,
  type LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import { afterEach, describe, expect, it } from 'vitest';
import {
  delay,
  fail,
  hang,
  type ModelScript,
  rawToolCall,
  reasoning,
  type ScriptedError,
  type ScriptStep,
  step,
  text,
  toolCall,
} from './script.js';
import { createScriptedModel } from './scripted-model.js';
import { type ScriptedServer, startScriptedOpenAIServer } from './scripted-server.js';

const MODEL_ID = 'scripted-model';

const prompt: LanguageModelV3Prompt = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: [{ type: 'text', text: 'Read a.txt' }] },
  {
    role: 'assistant',
    content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: { path: 'a.txt' } }],
  },
  {
    role: 'tool',
    content: [
      { type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: { type: 'text', value: 'hello' } },
    ],
  },
];

const servers: ScriptedServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function startServer(script: ModelScript, options: { apiKey?: string; models?: string[] } = {}) {
  const server = await startScriptedOpenAIServer({ script, ...options });
  servers.push(server);
  return server;
}

function clientModel(server: ScriptedServer, apiKey?: string): LanguageModelV3 {
  const provider = createOpenAICompatible({
    name: 'scripted',
    baseURL: server.baseURL,
    includeUsage: true,
    ...(apiKey === undefined ? {} : { apiKey }),
  });
  return provider.chatModel(MODEL_ID);
}

function callOptions(overrides: Partial<LanguageModelV3CallOptions> = {}): LanguageModelV3CallOptions {
  return { prompt, ...overrides };
}

async function readAll(stream: ReadableStream<LanguageModelV3StreamPart>): Promise<LanguageModelV3StreamPart[]> {
  const parts: LanguageModelV3StreamPart[] = [];
  const reader = stream.getReader();
  for (;;) {
    const result = await reader.read();
    if (result.done) return parts;
    parts.push(result.value);
  }
}

async function rejectionOf(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

async function eventually(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not reached within 1 s');
}

/**
 * The parts that carry behaviour, in order. Ids of text blocks, timestamps and provider metadata are left out, and
 * so are `*-end` parts and completed tool calls, whose position differs by design: the OpenAI-compatible provider
 * keeps its text block open across tool calls and completes every tool call at the end of the stream, while the
 * fake model closes each block before the next (as the Anthropic provider does). Both come back separately.
 */
function normalize(parts: LanguageModelV3StreamPart[]) {
  const sequence: unknown[] = [];
  const toolCalls: unknown[] = [];
  const open = new Map<string, number>();
  let finish: unknown;
  for (const part of parts) {
    switch (part.type) {
      case 'response-metadata':
        sequence.push({ type: part.type, id: part.id, modelId: part.modelId });
        break;
      case 'text-start':
      case 'reasoning-start':
        open.set(part.id, (open.get(part.id) ?? 0) + 1);
        sequence.push({ type: part.type });
        break;
      case 'text-end':
      case 'reasoning-end':
        open.set(part.id, (open.get(part.id) ?? 0) - 1);
        break;
      case 'tool-input-end':
        break;
      case 'text-delta':
      case 'reasoning-delta':
        sequence.push({ type: part.type, delta: part.delta });
        break;
      case 'tool-input-start':
        sequence.push({ type: part.type, id: part.id, toolName: part.toolName });
        break;
      case 'tool-input-delta':
        sequence.push({ type: part.type, id: part.id, delta: part.delta });
        break;
      case 'tool-call':
        toolCalls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
        break;
      case 'finish':
        finish = {
          finishReason: part.finishReason,
          inputTokens: { ...part.usage.inputTokens, cacheWrite: part.usage.inputTokens.cacheWrite ?? 0 },
          outputTokens: part.usage.outputTokens,
        };
        sequence.push({ type: part.type });
        break;
      default:
        sequence.push({ type: part.type });
    }
  }
  const balanced = [...open.values()].every((count) => count === 0);
  return { sequence, toolCalls, finish, balanced };
}

const parityScripts: { name: string; step: ScriptStep }[] = [
  { name: 'plain text', step: step(text('Hello, world! How are you today?')) },
  { name: 'reasoning then text', step: step(reasoning('Let me think about it.'), text('Done thinking.', 5)) },
  {
    name: 'text and two tool calls',
    step: step(
      text('Reading.'),
      toolCall('read_file', { path: 'src/index.ts', limit: 20 }, 'call_a'),
      toolCall('search_files', { pattern: 'TODO' }),
    ),
  },
  { name: 'malformed tool arguments', step: step(rawToolCall('write_file', '{"path": "x", "content": ', 'call_bad')) },
  {
    name: 'scripted usage and length finish',
    step: {
      ...step(text('truncat')),
      finishReason: 'length',
      usage: { inputTokens: 1_000, outputTokens: 50, cacheReadTokens: 400, reasoningTokens: 10 },
    },
  },
  { name: 'content filter', step: { ...step(text('I cannot')), finishReason: 'content-filter' } },
  { name: 'delays between chunks', step: step(delay(5), text('slow'), delay(5), text(' text')) },
];

describe('the same script through the fake model and through the scripted server', () => {
  it.each(parityScripts)('streams the same parts: $name', async ({ step: scriptStep }) => {
    const fake = createScriptedModel([scriptStep], { modelId: MODEL_ID });
    const server = await startServer([scriptStep]);
    const fakeParts = normalize(await readAll((await fake.doStream(callOptions())).stream));
    const httpParts = normalize(await readAll((await clientModel(server).doStream(callOptions())).stream));

    expect(httpParts).toEqual(fakeParts);
    expect(fakeParts.balanced).toBe(true);
    expect(fakeParts.sequence.length).toBeGreaterThan(3);
  });

  it('generates the same content without streaming', async () => {
    const scriptStep = step(reasoning('Hmm.'), text('Answer.'), toolCall('todo', { items: [] }, 'call_t'));
    const fake = createScriptedModel([scriptStep], { modelId: MODEL_ID });
    const server = await startServer([scriptStep]);
    const fakeResult = await fake.doGenerate(callOptions());
    const httpResult = await clientModel(server).doGenerate(callOptions());
    expect(httpResult.content).toEqual(fakeResult.content);
    expect(httpResult.finishReason).toEqual(fakeResult.finishReason);
    expect(httpResult.usage.inputTokens).toEqual({ ...fakeResult.usage.inputTokens, cacheWrite: undefined });
    expect(httpResult.usage.outputTokens).toEqual(fakeResult.usage.outputTokens);
    expect(server.requests[0]?.body).toMatchObject({ model: MODEL_ID });
    expect(server.requests[0]?.body).not.toHaveProperty('stream', true);
  });

  const errorCases: { name: string; error: ScriptedError }[] = [
    { name: '429 with Retry-After', error: { status: 429, retryAfterSeconds: 7 } },
    { name: '503', error: { status: 503 } },
    { name: '500 with a message', error: { status: 500, message: 'upstream exploded' } },
    { name: '401', error: { status: 401 } },
    { name: '404', error: { status: 404 } },
    { name: 'context overflow', error: { kind: 'context_overflow' } },
    { name: 'content policy', error: { status: 400, kind: 'content_policy' } },
    { name: 'quota as 429', error: { kind: 'quota' } },
    { name: 'quota as 402', error: { status: 402, kind: 'quota' } },
  ];

  it.each(errorCases)('fails the same way before output: $name', async ({ error }) => {
    const fake = createScriptedModel([{ parts: [{ error }] }], { modelId: MODEL_ID });
    const server = await startServer([{ parts: [{ error }] }]);
    const fakeError = (await rejectionOf(fake.doStream(callOptions()))) as APICallError;
    const httpError = (await rejectionOf(clientModel(server).doStream(callOptions()))) as APICallError;
    expect(APICallError.isInstance(httpError)).toBe(true);
    expect(APICallError.isInstance(fakeError)).toBe(true);
    expect(httpError.statusCode).toBe(fakeError.statusCode);
    expect(httpError.message).toBe(fakeError.message);
    expect(httpError.isRetryable).toBe(fakeError.isRetryable);
    expect(httpError.data).toEqual(fakeError.data);
    expect(JSON.parse(httpError.responseBody ?? '')).toEqual(JSON.parse(fakeError.responseBody ?? ''));
    expect(httpError.responseHeaders?.['retry-after']).toBe(fakeError.responseHeaders?.['retry-after']);
    expect(server.requests[0]?.aborted).toBe(false);
  });

  it('a network error before output is a retryable APICallError without status from both doubles', async () => {
    const fake = createScriptedModel([step(fail())], { modelId: MODEL_ID });
    const server = await startServer([step(fail())]);
    for (const model of [fake, clientModel(server)]) {
      const error = (await rejectionOf(model.doStream(callOptions()))) as APICallError;
      expect(APICallError.isInstance(error)).toBe(true);
      expect(error.statusCode).toBeUndefined();
      expect(error.isRetryable).toBe(true);
      expect(error.message).toMatch(/^Cannot connect to API: /);
      expect(['ECONNRESET', 'UND_ERR_SOCKET']).toContain((error.cause as { code?: string }).code);
    }
  });

  it('a network error after output errors the stream after the text from both doubles', async () => {
    const scriptStep = step(text('partial answer'), fail());
    const fake = createScriptedModel([scriptStep], { modelId: MODEL_ID });
    const server = await startServer([scriptStep]);
    for (const model of [fake, clientModel(server)]) {
      const reader = (await model.doStream(callOptions())).stream.getReader();
      const seen: string[] = [];
      let failure: unknown;
      try {
        for (;;) {
          const result = await reader.read();
          if (result.done) break;
          if (result.value.type === 'text-delta') seen.push(result.value.delta);
        }
      } catch (error) {
        failure = error;
      }
      expect(seen.join('')).toBe('partial answer');
      expect(APICallError.isInstance(failure)).toBe(true);
      expect((failure as APICallError).isRetryable).toBe(true);
      const cause = (failure as APICallError).cause as TypeError & { cause?: { code?: string } };
      expect(cause.message).toBe('terminated');
      expect(cause.cause?.code).toBe('UND_ERR_SOCKET');
    }
    expect(server.requests[0]?.aborted).toBe(false);
  });
});

describe('startScriptedOpenAIServer', () => {
  it('listens on loopback and records method, path, headers and the parsed body', async () => {
    const server = await startServer([step(text('ok'))], { apiKey: 'test-key' });
    expect(server.baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const model = clientModel(server, 'test-key');
    await readAll(
      (
        await model.doStream(
          callOptions({
            maxOutputTokens: 256,
            tools: [{ type: 'function', name: 'read_file', inputSchema: { type: 'object', properties: {} } }],
          }),
        )
      ).stream,
    );
    const request = server.requests[0];
    expect(request).toMatchObject({ method: 'POST', path: '/v1/chat/completions', aborted: false });
    expect(request?.headers.authorization).toBe('Bearer test-key');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.body).toMatchObject({
      model: MODEL_ID,
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 256,
    });
    const call = server.calls[0];
    expect(call?.messages).toEqual((request?.body as { messages: unknown } | undefined)?.messages);
    expect(call?.tools).toEqual([{ name: 'read_file', schema: { type: 'object', properties: {} } }]);
    expect(call?.options).toMatchObject({ model: MODEL_ID, max_tokens: 256, stream: true });
    expect(call?.options).not.toHaveProperty('messages');
    expect(server.remaining).toBe(0);
  });

  it('answers 401 without the right bearer key and consumes no step', async () => {
    const server = await startServer([step(text('secret'))], { apiKey: 'test-key' });
    const error = (await rejectionOf(clientModel(server, 'wrong-key').doStream(callOptions()))) as APICallError;
    expect(error.statusCode).toBe(401);
    expect(error.data).toMatchObject({ error: { code: 'invalid_api_key' } });
    const response = await fetch(`${server.baseURL}/models`);
    expect(response.status).toBe(401);
    expect(server.remaining).toBe(1);
    expect(server.requests.map((request) => request.headers.authorization)).toEqual(['Bearer wrong-key', undefined]);
  });

  it('lists its models on GET /v1/models', async () => {
    const server = await startServer([], { models: ['alpha', 'beta'], apiKey: 'k' });
    const response = await fetch(`${server.baseURL}/models`, { headers: { authorization: 'Bearer k' } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      object: 'list',
      data: [
        { id: 'alpha', object: 'model', created: 0, owned_by: 'scripted' },
        { id: 'beta', object: 'model', created: 0, owned_by: 'scripted' },
      ],
    });
  });

  it('sends raw SSE chunks as OpenAI does, with role first, usage details and [DONE]', async () => {
    const server = await startServer([
      { ...step(reasoning('r'), text('hi'), toolCall('todo', { a: 1 }, 'call_x')), usage: { cacheReadTokens: 2 } },
    ]);
    const response = await fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Say hi to me' }],
      }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const events = (await response.text()).split('\n\n').filter((event) => event !== '');
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event.replace(/^data: /, '')));
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === 'm')).toBe(true);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta ?? null)).toEqual([
      { role: 'assistant', content: '' },
      { reasoning_content: 'r' },
      { content: 'hi' },
      { tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { name: 'todo', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] },
      {},
      null,
    ]);
    expect(chunks.at(-2).choices[0].finish_reason).toBe('tool_calls');
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: {
        prompt_tokens: 3,
        // 'hi' + '{"a":1}' = 9 characters → 3 text tokens, 'r' → 1 reasoning token
        completion_tokens: 4,
        total_tokens: 7,
        prompt_tokens_details: { cached_tokens: 2 },
        completion_tokens_details: { reasoning_tokens: 1 },
      },
    });
  });

  it('records aborted when the client goes away during a hang after output', async () => {
    const server = await startServer([step(text('partial'), hang())]);
    const abort = new AbortController();
    const { stream } = await clientModel(server).doStream(callOptions({ abortSignal: abort.signal }));
    const reader = stream.getReader();
    for (;;) {
      const { value } = await reader.read();
      if (value?.type === 'text-delta') break;
    }
    const pending = reader.read();
    abort.abort();
    const error = await rejectionOf(pending);
    expect((error as Error).name).toBe('AbortError');
    await eventually(() => server.requests[0]?.aborted === true);
    expect(server.calls[0]?.aborted).toBe(true);
  });

  it('holds the response during a hang before output and records aborted when the client gives up', async () => {
    const server = await startServer([step(hang())]);
    const abort = new AbortController();
    const result = clientModel(server).doStream(callOptions({ abortSignal: abort.signal }));
    await eventually(() => server.requests.length === 1);
    abort.abort();
    const error = await rejectionOf(result);
    expect((error as Error).name).toBe('AbortError');
    await eventually(() => server.requests[0]?.aborted === true);
  });

  it('close() ends hanging requests and records them as aborted', async () => {
    const server = await startScriptedOpenAIServer({ script: [step(delay(10), hang())] });
    const result = rejectionOf(clientModel(server).doStream(callOptions()));
    await eventually(() => server.requests.length === 1);
    await server.close();
    expect(APICallError.isInstance(await result)).toBe(true);
    expect(server.requests[0]?.aborted).toBe(true);
  });

  it('answers 400 with the failure when an expect hook throws, and when the script is exhausted', async () => {
    const server = await startServer([
      {
        ...step(text('never sent')),
        expect: (call) => {
          if (call.messages.length !== 99) throw new Error('expected 99 messages');
        },
      },
    ]);
    const expectation = (await rejectionOf(clientModel(server).doStream(callOptions()))) as APICallError;
    expect(expectation.statusCode).toBe(400);
    expect(expectation.message).toBe('Scripted expectation failed: expected 99 messages');
    expect(expectation.isRetryable).toBe(false);
    expect(server.expectationFailures).toHaveLength(1);
    const exhausted = (await rejectionOf(clientModel(server).doStream(callOptions()))) as APICallError;
    expect(exhausted.statusCode).toBe(400);
    expect(exhausted.message).toMatch(/has no step left for call 2: its only step was consumed by call 1/);
    server.push(step(text('pushed')));
    const parts = await readAll((await clientModel(server).doStream(callOptions())).stream);
    expect(parts.some((part) => part.type === 'text-delta' && part.delta === 'pushed')).toBe(true);
  });

  it('answers 404 for unknown routes', async () => {
    const server = await startServer([]);
    const response = await fetch(`${server.baseURL}/embeddings`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { code: 'unknown_url' } });
  });
});
