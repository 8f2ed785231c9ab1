import {
  APICallError,
  type LanguageModelV3CallOptions,
  type LanguageModelV3Prompt,
  type LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { createFakeClock } from './fake-clock.js';
import { delay, fail, hang, rawToolCall, reasoning, step, text, toolCall } from './script.js';
import { createScriptedModel, createScriptedProvider } from './scripted-model.js';

const prompt: LanguageModelV3Prompt = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: [{ type: 'text', text: 'Hello there' }] },
];

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

function deltas(parts: LanguageModelV3StreamPart[], type: 'text-delta' | 'reasoning-delta'): string[] {
  return parts.flatMap((part) => (part.type === type ? [part.delta] : []));
}

async function rejectionOf(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('createScriptedModel streaming', () => {
  it('streams text in 8-character chunks inside one text block, then finish with stop and derived usage', async () => {
    const model = createScriptedModel([step(text('Hello, world! How are you?'))]);
    const { stream } = await model.doStream(callOptions());
    const parts = await readAll(stream);

    expect(parts.map((part) => part.type)).toEqual([
      'stream-start',
      'response-metadata',
      'text-start',
      'text-delta',
      'text-delta',
      'text-delta',
      'text-delta',
      'text-end',
      'finish',
    ]);
    expect(deltas(parts, 'text-delta')).toEqual(['Hello, w', 'orld! Ho', 'w are yo', 'u?']);
    const finish = parts.at(-1);
    expect(finish).toEqual({
      type: 'finish',
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        // prompt: 'You are terse.' + 'Hello there' = 25 characters → 7 tokens; output 26 characters → 7 tokens
        inputTokens: { total: 7, noCache: 7, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: 7, text: 7, reasoning: 0 },
      },
    });
    expect(parts[1]).toMatchObject({ type: 'response-metadata', id: 'chatcmpl-scripted-1', modelId: 'test' });
  });

  it('honours chunkSize and streams reasoning before text as separate blocks', async () => {
    const model = createScriptedModel([step(reasoning('Think first.'), text('abcdef', 4))]);
    const parts = await readAll((await model.doStream(callOptions())).stream);
    expect(parts.map((part) => part.type)).toEqual([
      'stream-start',
      'response-metadata',
      'reasoning-start',
      'reasoning-delta',
      'reasoning-delta',
      'reasoning-end',
      'text-start',
      'text-delta',
      'text-delta',
      'text-end',
      'finish',
    ]);
    expect(deltas(parts, 'reasoning-delta').join('')).toBe('Think first.');
    expect(deltas(parts, 'text-delta')).toEqual(['abcd', 'ef']);
    const finish = parts.at(-1);
    expect(finish?.type === 'finish' && finish.usage.outputTokens).toEqual({ total: 5, text: 2, reasoning: 3 });
  });

  it('streams tool calls as tool-input start/delta/end then tool-call with JSON input and infers tool-calls', async () => {
    const model = createScriptedModel([
      step(text('Reading.'), toolCall('read_file', { path: 'src/index.ts' }, 'call_a'), toolCall('todo', {})),
    ]);
    const parts = await readAll((await model.doStream(callOptions())).stream);
    const toolParts = parts.filter((part) => part.type.startsWith('tool-'));
    expect(toolParts.map((part) => part.type)).toEqual([
      'tool-input-start',
      'tool-input-delta',
      'tool-input-delta',
      'tool-input-delta',
      'tool-input-end',
      'tool-call',
      'tool-input-start',
      'tool-input-delta',
      'tool-input-end',
      'tool-call',
    ]);
    expect(toolParts[0]).toEqual({ type: 'tool-input-start', id: 'call_a', toolName: 'read_file' });
    const inputDeltas = toolParts.flatMap((part) =>
      part.type === 'tool-input-delta' && part.id === 'call_a' ? [part.delta] : [],
    );
    expect(inputDeltas.join('')).toBe('{"path":"src/index.ts"}');
    const calls = parts.filter((part) => part.type === 'tool-call');
    expect(calls).toEqual([
      { type: 'tool-call', toolCallId: 'call_a', toolName: 'read_file', input: '{"path":"src/index.ts"}' },
      { type: 'tool-call', toolCallId: 'call_1_1', toolName: 'todo', input: '{}' },
    ]);
    // The text block is closed before the first tool input starts.
    expect(parts.findIndex((part) => part.type === 'text-end')).toBeLessThan(
      parts.findIndex((part) => part.type === 'tool-input-start'),
    );
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' } });
  });

  it('sends rawArgs verbatim so malformed JSON reaches the caller', async () => {
    const model = createScriptedModel([step(rawToolCall('write_file', '{"path": "x", ', 'call_bad'))]);
    const parts = await readAll((await model.doStream(callOptions())).stream);
    expect(parts.find((part) => part.type === 'tool-call')).toEqual({
      type: 'tool-call',
      toolCallId: 'call_bad',
      toolName: 'write_file',
      input: '{"path": "x", ',
    });
  });

  it('applies scripted usage and finish reason over the defaults', async () => {
    const model = createScriptedModel([
      {
        ...step(text('cut')),
        finishReason: 'length',
        usage: { inputTokens: 100, outputTokens: 30, cacheReadTokens: 40, cacheWriteTokens: 10, reasoningTokens: 5 },
      },
    ]);
    const parts = await readAll((await model.doStream(callOptions())).stream);
    expect(parts.at(-1)).toEqual({
      type: 'finish',
      finishReason: { unified: 'length', raw: 'length' },
      usage: {
        inputTokens: { total: 100, noCache: 50, cacheRead: 40, cacheWrite: 10 },
        outputTokens: { total: 30, text: 25, reasoning: 5 },
      },
    });
  });

  it('records the prompt, tools and other options of every call', async () => {
    const clock = createFakeClock(5_000);
    const model = createScriptedModel([step(text('ok'))], { clock });
    const abort = new AbortController();
    await readAll(
      (
        await model.doStream(
          callOptions({
            maxOutputTokens: 512,
            toolChoice: { type: 'auto' },
            providerOptions: { openai: { reasoningEffort: 'low' } },
            abortSignal: abort.signal,
            tools: [
              {
                type: 'function',
                name: 'read_file',
                description: 'Read',
                inputSchema: { type: 'object', properties: {} },
              },
            ],
          }),
        )
      ).stream,
    );
    expect(model.calls).toEqual([
      {
        messages: prompt,
        tools: [{ name: 'read_file', schema: { type: 'object', properties: {} } }],
        options: {
          maxOutputTokens: 512,
          toolChoice: { type: 'auto' },
          providerOptions: { openai: { reasoningEffort: 'low' } },
        },
        aborted: false,
        startedAt: 5_000,
      },
    ]);
    abort.abort();
    expect(model.calls[0]?.aborted).toBe(false);
  });
});

describe('createScriptedModel aborts', () => {
  it('an abort during a delay errors the stream with the signal reason and records aborted', async () => {
    const clock = createFakeClock();
    const model = createScriptedModel([step(text('first'), delay(1_000), text('second'))], { clock });
    const abort = new AbortController();
    const { stream } = await model.doStream(callOptions({ abortSignal: abort.signal }));
    const reader = stream.getReader();
    const seen: string[] = [];
    for (;;) {
      const { value } = await reader.read();
      if (value === undefined) break;
      seen.push(value.type);
      if (value.type === 'text-delta') break;
    }
    const pending = reader.read();
    await new Promise((resolve) => setImmediate(resolve));
    expect(clock.pendingCount).toBe(1);
    const reason = new Error('interrupted');
    abort.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(model.calls[0]?.aborted).toBe(true);
    expect(clock.pendingCount).toBe(0);
    expect(seen).toEqual(['stream-start', 'response-metadata', 'text-start', 'text-delta']);
  });

  it('a delay before any output keeps doStream pending until the clock advances', async () => {
    const clock = createFakeClock();
    const model = createScriptedModel([step(delay(2_000), text('late'))], { clock });
    let resolved = false;
    const result = model.doStream(callOptions()).then((value) => {
      resolved = true;
      return value;
    });
    await clock.advance(1_999);
    expect(resolved).toBe(false);
    await clock.advance(1);
    expect(resolved).toBe(true);
    expect(deltas(await readAll((await result).stream), 'text-delta')).toEqual(['late']);
    expect(clock.sleeps).toEqual([2_000]);
  });

  it('an abort during a hang after output errors the stream and records aborted', async () => {
    const model = createScriptedModel([step(text('partial'), hang())]);
    const abort = new AbortController();
    const { stream } = await model.doStream(callOptions({ abortSignal: abort.signal }));
    const reader = stream.getReader();
    const types: string[] = [];
    for (let index = 0; index < 4; index++) types.push((await reader.read()).value?.type ?? 'done');
    expect(types).toEqual(['stream-start', 'response-metadata', 'text-start', 'text-delta']);
    const pending = reader.read();
    abort.abort();
    const error = await rejectionOf(pending);
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('AbortError');
    expect(model.calls[0]?.aborted).toBe(true);
  });

  it('an abort during a hang before output rejects doStream', async () => {
    const model = createScriptedModel([step(hang())]);
    const abort = new AbortController();
    const result = model.doStream(callOptions({ abortSignal: abort.signal }));
    await new Promise((resolve) => setImmediate(resolve));
    abort.abort('stop');
    await expect(result).rejects.toBe('stop');
    expect(model.calls[0]?.aborted).toBe(true);
  });

  it('an already aborted signal rejects at once without consuming a step', async () => {
    const model = createScriptedModel([step(text('unused'))]);
    const abort = new AbortController();
    abort.abort('early');
    await expect(model.doStream(callOptions({ abortSignal: abort.signal }))).rejects.toBe('early');
    expect(model.calls).toHaveLength(1);
    expect(model.calls[0]?.aborted).toBe(true);
    expect(model.remaining).toBe(1);
  });

  it('cancelling the stream ends a hang without recording an abort', async () => {
    const model = createScriptedModel([step(text('x'), hang())]);
    const { stream } = await model.doStream(callOptions());
    const reader = stream.getReader();
    for (let index = 0; index < 4; index++) await reader.read();
    const pending = reader.read();
    await reader.cancel('done reading');
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    expect(model.calls[0]?.aborted).toBe(false);
  });
});

describe('createScriptedModel errors', () => {
  it('an error before output rejects doStream with an APICallError carrying status, headers and body', async () => {
    const model = createScriptedModel([step(fail(429, { retryAfterSeconds: 7 }))]);
    const error = await rejectionOf(model.doStream(callOptions()));
    expect(APICallError.isInstance(error)).toBe(true);
    const apiError = error as APICallError;
    expect(apiError.statusCode).toBe(429);
    expect(apiError.isRetryable).toBe(true);
    expect(apiError.responseHeaders).toEqual({ 'content-type': 'application/json', 'retry-after': '7' });
    expect(JSON.parse(apiError.responseBody ?? '')).toEqual({
      error: {
        message: 'Rate limit reached for requests.',
        type: 'requests',
        param: null,
        code: 'rate_limit_exceeded',
      },
    });
    expect(apiError.url).toBe('scripted://scripted/test');
    expect(apiError.requestBodyValues).toMatchObject({ model: 'test', prompt });
  });

  it.each([
    { status: 400, retryable: false },
    { status: 401, retryable: false },
    { status: 404, retryable: false },
    { status: 408, retryable: true },
    { status: 500, retryable: true },
    { status: 503, retryable: true },
    { status: 529, retryable: true },
  ])('status $status is retryable: $retryable', async ({ status, retryable }) => {
    const model = createScriptedModel([step(fail(status))]);
    const error = (await rejectionOf(model.doStream(callOptions()))) as APICallError;
    expect(error.statusCode).toBe(status);
    expect(error.isRetryable).toBe(retryable);
    expect(error.responseHeaders?.['retry-after']).toBeUndefined();
  });

  it('kind context_overflow gives a 400 with the context-length message and code', async () => {
    const model = createScriptedModel([step(fail(undefined, { kind: 'context_overflow' }))]);
    const error = (await rejectionOf(model.doStream(callOptions()))) as APICallError;
    expect(error.statusCode).toBe(400);
    expect(error.message).toMatch(/^This model's maximum context length is 128000 tokens/);
    expect(error.data).toMatchObject({ error: { code: 'context_length_exceeded', type: 'invalid_request_error' } });
    expect(error.isRetryable).toBe(false);
  });

  it('kind content_policy and quota set matching messages; the test picks the quota status', async () => {
    const model = createScriptedModel([
      step(fail(400, { kind: 'content_policy' })),
      step(fail(402, { kind: 'quota' })),
      step(fail(undefined, { kind: 'quota' })),
    ]);
    const policy = (await rejectionOf(model.doStream(callOptions()))) as APICallError;
    expect(policy.message).toMatch(/safety system/);
    expect(policy.data).toMatchObject({ error: { code: 'content_policy_violation' } });
    const billing = (await rejectionOf(model.doStream(callOptions()))) as APICallError;
    expect(billing.statusCode).toBe(402);
    expect(billing.message).toMatch(/^You exceeded your current quota/);
    const quota = (await rejectionOf(model.doStream(callOptions()))) as APICallError;
    expect(quota.statusCode).toBe(429);
    expect(quota.data).toMatchObject({ error: { code: 'insufficient_quota', type: 'insufficient_quota' } });
  });

  it('a custom message replaces the default one', async () => {
    const model = createScriptedModel([step(fail(500, { message: 'boom' }))]);
    const error = (await rejectionOf(model.doStream(callOptions()))) as APICallError;
    expect(error.message).toBe('boom');
    expect(JSON.parse(error.responseBody ?? '{}').error.message).toBe('boom');
  });

  it('no status gives a retryable network error whose cause has code ECONNRESET', async () => {
    const model = createScriptedModel([step(fail())]);
    const error = (await rejectionOf(model.doStream(callOptions()))) as APICallError;
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error.statusCode).toBeUndefined();
    expect(error.isRetryable).toBe(true);
    expect(error.message).toBe('Cannot connect to API: read ECONNRESET');
    expect((error.cause as { code?: string }).code).toBe('ECONNRESET');
  });

  it('an error with a status after output is reported in-band: error part, then finish with reason error', async () => {
    const model = createScriptedModel([step(text('partial'), fail(503))]);
    const parts = await readAll((await model.doStream(callOptions())).stream);
    expect(parts.map((part) => part.type)).toEqual([
      'stream-start',
      'response-metadata',
      'text-start',
      'text-delta',
      'error',
      'text-end',
      'finish',
    ]);
    const errorPart = parts[4];
    expect(errorPart?.type === 'error' && (errorPart.error as APICallError).statusCode).toBe(503);
    expect(parts.at(-1)).toMatchObject({ finishReason: { unified: 'error', raw: undefined } });
  });

  it('a network error after output errors the stream the way a cut connection does', async () => {
    const model = createScriptedModel([step(text('partial'), fail())]);
    const { stream } = await model.doStream(callOptions());
    const reader = stream.getReader();
    const types: string[] = [];
    let failure: unknown;
    try {
      for (;;) {
        const result = await reader.read();
        if (result.done) break;
        types.push(result.value.type);
      }
    } catch (error) {
      failure = error;
    }
    expect(types).toEqual(['stream-start', 'response-metadata', 'text-start', 'text-delta']);
    expect(APICallError.isInstance(failure)).toBe(true);
    const apiError = failure as APICallError;
    expect(apiError.isRetryable).toBe(true);
    expect(apiError.message).toBe('Failed to process successful response');
    const cause = apiError.cause as TypeError & { cause: { code: string } };
    expect(cause).toBeInstanceOf(TypeError);
    expect(cause.message).toBe('terminated');
    expect(cause.cause.code).toBe('UND_ERR_SOCKET');
  });

  it('an exhausted script raises a non-retryable error saying how many calls were consumed', async () => {
    const model = createScriptedModel([step(text('one')), step(text('two'))]);
    await readAll((await model.doStream(callOptions())).stream);
    await model.doGenerate(callOptions());
    expect(model.remaining).toBe(0);
    const error = (await rejectionOf(model.doStream(callOptions()))) as APICallError;
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error.isRetryable).toBe(false);
    expect(error.statusCode).toBe(400);
    expect(error.message).toBe(
      "Scripted model scripted:test has no step left for call 3: all 2 steps were consumed by earlier calls. Push more steps or use onExhausted: 'repeat_last'.",
    );
    expect(model.calls).toHaveLength(3);
  });

  it("onExhausted 'repeat_last' repeats the last step; push adds steps", async () => {
    const model = createScriptedModel([step(text('again'))], { onExhausted: 'repeat_last' });
    for (let index = 0; index < 3; index++) {
      const result = await model.doGenerate(callOptions());
      expect(result.content).toEqual([{ type: 'text', text: 'again' }]);
    }
    model.push(step(text('new')));
    expect(model.remaining).toBe(1);
    expect((await model.doGenerate(callOptions())).content).toEqual([{ type: 'text', text: 'new' }]);
  });

  it('an expect hook sees the recorded call and a throw rejects the call with that error', async () => {
    const seen: unknown[] = [];
    const failure = new Error('wrong prompt');
    const model = createScriptedModel([
      {
        ...step(text('fine')),
        expect: (call) => {
          seen.push(call.messages);
        },
      },
      {
        ...step(text('never streamed')),
        expect: () => {
          throw failure;
        },
      },
    ]);
    await readAll((await model.doStream(callOptions())).stream);
    expect(seen).toEqual([prompt]);
    await expect(model.doStream(callOptions())).rejects.toBe(failure);
    expect(model.expectationFailures).toEqual([failure]);
  });

  it('rejects an unknown script part loudly', async () => {
    const model = createScriptedModel([{ parts: [{ txt: 'typo' } as never] }]);
    await expect(model.doStream(callOptions())).rejects.toThrow(/Invalid script part: \{"txt":"typo"\}/);
  });
});

describe('createScriptedModel doGenerate', () => {
  it('returns reasoning, text and tool calls as content with finish reason and usage', async () => {
    const model = createScriptedModel(
      [step(reasoning('Hmm.'), text('Let me look.'), toolCall('read_file', { path: 'a' }))],
      {
        modelId: 'primary',
        provider: 'scripted',
      },
    );
    const result = await model.doGenerate(callOptions());
    expect(result.content).toEqual([
      { type: 'reasoning', text: 'Hmm.' },
      { type: 'text', text: 'Let me look.' },
      { type: 'tool-call', toolCallId: 'call_1_0', toolName: 'read_file', input: '{"path":"a"}' },
    ]);
    expect(result.finishReason).toEqual({ unified: 'tool-calls', raw: 'tool_calls' });
    // 'Let me look.' (12) + '{"path":"a"}' (12) → 6 text tokens; 'Hmm.' → 1 reasoning token
    expect(result.usage.outputTokens).toEqual({ total: 7, text: 6, reasoning: 1 });
    expect(result.response?.modelId).toBe('primary');
  });

  it('rejects with the scripted error wherever it is', async () => {
    const model = createScriptedModel([step(text('partial'), fail(500))]);
    const error = (await rejectionOf(model.doGenerate(callOptions()))) as APICallError;
    expect(error.statusCode).toBe(500);
  });
});

describe('createScriptedProvider', () => {
  it('registers as scripted, local, keyless, and returns one model instance per model id', async () => {
    const provider = createScriptedProvider({ primary: [step(fail(401))], backup: [step(text('from backup'))] });
    expect(provider).toMatchObject({ id: 'scripted', local: true, requiresKey: false, strictAlternation: false });
    const route = { spec: 'scripted:backup', provider: 'scripted', model: 'backup', baseUrl: null };
    const resolved = { ...route, apiKey: null, strictAlternation: false, contextWindow: 128_000 };
    const backup = provider.create(resolved);
    expect(backup).toBe(provider.model('backup'));
    expect(backup.modelId).toBe('backup');
    expect(backup.provider).toBe('scripted');
    expect((await backup.doGenerate(callOptions())).content).toEqual([{ type: 'text', text: 'from backup' }]);
    expect(provider.model('backup').calls).toHaveLength(1);
    const unknown = provider.model('other');
    expect(unknown.remaining).toBe(0);
    unknown.push(step(text('late')));
    expect(provider.create({ ...resolved, model: 'other' })).toBe(unknown);
  });

  it('with strictAlternation, rejects a prompt with two consecutive user-role turns and records the failure', async () => {
    const provider = createScriptedProvider(
      { test: [step(text('a')), step(text('b')), step(text('c'))] },
      { strictAlternation: true },
    );
    expect(provider.strictAlternation).toBe(true);
    const model = provider.model('test');
    const toolTurn: LanguageModelV3Prompt = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: [{ type: 'text', text: 'list files' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'terminal', input: { command: 'ls' } }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'terminal',
            output: { type: 'text', value: 'a.txt\n\nuse tabs' },
          },
        ],
      },
    ];
    await expect(model.doGenerate({ prompt: toolTurn })).resolves.toBeDefined();

    const steerAfterTool: LanguageModelV3Prompt = [
      ...toolTurn,
      { role: 'user', content: [{ type: 'text', text: 'use tabs' }] },
    ];
    const error = (await rejectionOf(model.doGenerate({ prompt: steerAfterTool }))) as APICallError;
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error.isRetryable).toBe(false);
    expect(error.message).toMatch(
      /Strict alternation violated: message 4 \(user\) directly follows message 3 \(tool\)/,
    );
    expect(model.expectationFailures).toHaveLength(1);

    const userOnly = createScriptedProvider(
      { test: [step(text('ok')), step(text('no'))] },
      { strictAlternation: 'user-only' },
    );
    await expect(userOnly.model('test').doGenerate({ prompt: steerAfterTool })).resolves.toBeDefined();
    const twoUsers: LanguageModelV3Prompt = [
      { role: 'user', content: [{ type: 'text', text: 'one' }] },
      { role: 'system', content: 'between' },
      { role: 'user', content: [{ type: 'text', text: 'two' }] },
    ];
    await expect(userOnly.model('test').doGenerate({ prompt: twoUsers })).rejects.toThrow(
      /message 2 \(user\) directly follows message 0 \(user\)/,
    );
  });

  it('passes the clock to its models', async () => {
    const clock = createFakeClock({ autoAdvance: true });
    const provider = createScriptedProvider({ test: [step(delay(60_000), text('after a minute'))] }, { clock });
    const before = clock.now();
    const result = await provider.model('test').doGenerate(callOptions());
    expect(result.content).toEqual([{ type: 'text', text: 'after a minute' }]);
    expect(clock.now() - before).toBe(60_000);
  });
});
