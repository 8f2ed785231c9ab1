import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fail,
  reasoning,
  type ScriptedServer,
  startScriptedOpenAIServer,
  step,
  text,
  toolCall,
} from '../testing/index.js';
import { createLeanCompatibleChatModel, type TransformRequestBody, toolsJson } from './lean-compatible-chat.js';
import { partBatchesOf } from './part-batches.js';

/*
 * Issue 18 (ADR 0014): the lean stream parse gives the parts the AI SDK's own OpenAI-compatible chat
 * model gives for the same stream. Each case sends one scripted step to the plain SDK model and the
 * same step to the lean model, both against the real scripted server, and compares the parts.
 */

let scripted: ScriptedServer;
let raw: Server;
let rawURL: string;
/** Bodies the raw server streams, in order, for chunks the scripted server never sends. */
const rawBodies: (string | { status: number; headers: Record<string, string>; body: string | Buffer })[] = [];
/** The requests the raw server received, as they came: their headers and body bytes. */
const rawRequests: { headers: IncomingHttpHeaders; body: Buffer }[] = [];

const sdkModel = (
  baseURL: string,
  fetch?: typeof globalThis.fetch,
  transformRequestBody?: TransformRequestBody,
): LanguageModelV3 =>
  createOpenAICompatible({
    name: 'custom',
    baseURL,
    apiKey: 'k',
    includeUsage: true,
    ...(fetch ? { fetch } : {}),
    ...(transformRequestBody ? { transformRequestBody } : {}),
  }).chatModel('scripted');
const leanModel = (baseURL: string) =>
  createLeanCompatibleChatModel((fetch, transformRequestBody) => sdkModel(baseURL, fetch, transformRequestBody));
/** The lean model as it runs with an SDK that never calls the request-body hook: the empty-stream fallback. */
const fallbackModel = (baseURL: string) => createLeanCompatibleChatModel((fetch) => sdkModel(baseURL, fetch));

const call: LanguageModelV3CallOptions = {
  prompt: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
  tools: [
    {
      type: 'function',
      name: 'read_file',
      description: 'Reads a file',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    },
  ],
};

/** One SSE event of a chat completion chunk. */
const sseChunk = (payload: object) => `data: ${JSON.stringify({ id: 'c1', created: 1, model: 'm', ...payload })}\n\n`;

/** Reads a stream to its end. */
async function drain(stream: ReadableStream<LanguageModelV3StreamPart>): Promise<void> {
  const reader = stream.getReader();
  while (!(await reader.read()).done) {}
}

/** The parts of one stream, with what differs between two calls (ids, times) left out. */
async function parts(model: LanguageModelV3): Promise<unknown[]> {
  const { stream } = await model.doStream(call);
  const seen: unknown[] = [];
  const reader = stream.getReader();
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      seen.push(normalize(next.value));
    }
  } catch (error) {
    seen.push({ thrown: (error as Error).name });
  }
  return seen;
}

function normalize(part: LanguageModelV3StreamPart): unknown {
  if (part.type === 'response-metadata')
    return { type: part.type, modelId: part.modelId, hasId: part.id !== undefined };
  if (part.type === 'error') {
    const error = part.error as { name?: string; message?: string };
    return { type: 'error', name: error.name, message: error.message };
  }
  return part;
}

/** Runs `steps` through the plain SDK model, then the same steps through the lean model. */
async function both(...steps: Parameters<ScriptedServer['push']>): Promise<{ sdk: unknown[]; lean: unknown[] }> {
  scripted.push(...steps);
  const sdk = await parts(sdkModel(scripted.baseURL));
  scripted.push(...steps);
  const lean = await parts(leanModel(scripted.baseURL));
  return { sdk, lean };
}

beforeAll(async () => {
  scripted = await startScriptedOpenAIServer({ script: [] });
  raw = createServer((request, response) => {
    const received: Buffer[] = [];
    request.on('data', (piece: Buffer) => received.push(piece));
    request.on('end', () => {
      rawRequests.push({ headers: request.headers, body: Buffer.concat(received) });
      const next = rawBodies.shift() ?? '';
      if (typeof next === 'string') {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(next);
      } else {
        response.writeHead(next.status, next.headers);
        response.end(next.body);
      }
    });
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  rawURL = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  await scripted.close();
  await new Promise((resolve) => raw.close(resolve));
});

describe('lean OpenAI-compatible stream parse', () => {
  it('text deltas, reasoning, usage and a stop finish match the SDK model', async () => {
    const { sdk, lean } = await both(step(reasoning('thinking it over', 4), text('Hello there, world!', 3)));
    expect(lean).toEqual(sdk);
    // The same request reaches the model: the lean model's call marker is taken off before sending. It is sent with
    // node:http (ADR 0026), without the headers only fetch adds: no compression is asked for.
    const [sdkRequest, leanRequest] = scripted.requests.slice(-2);
    const {
      'accept-encoding': _encoding,
      'accept-language': _language,
      'sec-fetch-mode': _mode,
      ...fetchHeaders
    } = sdkRequest?.headers ?? {};
    expect(leanRequest?.headers).toEqual(fetchHeaders);
    expect(leanRequest?.body).toEqual(sdkRequest?.body);
    expect(lean.filter((part) => (part as { type: string }).type === 'text-delta')).toHaveLength(7);
    scripted.push(step(reasoning('thinking it over', 4), text('Hello there, world!', 3)));
    expect(await parts(fallbackModel(scripted.baseURL))).toEqual(sdk);
    const finish = lean.at(-1) as {
      type: string;
      finishReason: { unified: string };
      usage: { outputTokens: { total: number } };
    };
    expect(finish.type).toBe('finish');
    expect(finish.finishReason.unified).toBe('stop');
    expect(finish.usage.outputTokens.total).toBeGreaterThan(0);
  });

  it('warnings, request body, response headers and metadata key match the SDK model, hook or fallback', async () => {
    // topK is unsupported by OpenAI-compatible models: the SDK warns; `myHost` is the provider-options key.
    const options: LanguageModelV3CallOptions = { ...call, topK: 3, providerOptions: { myHost: { user: 'u1' } } };
    const named = (baseURL: string, fetch?: typeof globalThis.fetch, hook?: TransformRequestBody) =>
      createOpenAICompatible({
        name: 'my-host',
        baseURL,
        includeUsage: true,
        ...(fetch ? { fetch } : {}),
        ...(hook ? { transformRequestBody: hook } : {}),
      }).chatModel('scripted');
    const models = [
      named(scripted.baseURL),
      createLeanCompatibleChatModel((fetch, hook) => named(scripted.baseURL, fetch, hook)),
      createLeanCompatibleChatModel((fetch) => named(scripted.baseURL, fetch)),
    ];
    const seen: { request: unknown; headers: string[]; parts: LanguageModelV3StreamPart[] }[] = [];
    for (const model of models) {
      scripted.push(step(text('hi')));
      const result = await model.doStream(options);
      const parts: LanguageModelV3StreamPart[] = [];
      for await (const part of result.stream as unknown as AsyncIterable<LanguageModelV3StreamPart>) parts.push(part);
      seen.push({ request: result.request?.body, headers: Object.keys(result.response?.headers ?? {}).sort(), parts });
    }
    const [sdk, ...leans] = seen;
    const start = (parts: LanguageModelV3StreamPart[]) => parts.find((part) => part.type === 'stream-start');
    const finish = (parts: LanguageModelV3StreamPart[]) => parts.find((part) => part.type === 'finish');
    expect((start(sdk?.parts ?? []) as { warnings: unknown[] }).warnings).not.toHaveLength(0);
    for (const lean of leans) {
      expect(lean.request).toEqual(sdk?.request);
      expect(lean.headers).toEqual(sdk?.headers);
      expect(start(lean.parts)).toEqual(start(sdk?.parts ?? []));
      expect(Object.keys((finish(lean.parts) as { providerMetadata: object }).providerMetadata)).toEqual(['myHost']);
      expect(Object.keys((finish(sdk?.parts ?? []) as { providerMetadata: object }).providerMetadata)).toEqual([
        'myHost',
      ]);
    }
  });

  it('tool call deltas become the same tool-input and tool-call parts, with a tool-calls finish', async () => {
    const { sdk, lean } = await both(
      step(
        text('Reading both.'),
        toolCall('read_file', { path: 'a.txt' }, 'call_a'),
        toolCall('read_file', { path: 'b.txt' }, 'call_b'),
      ),
    );
    expect(lean).toEqual(sdk);
    const calls = lean.filter((part) => (part as { type: string }).type === 'tool-call');
    expect(calls).toEqual([
      expect.objectContaining({ toolName: 'read_file', input: '{"path":"a.txt"}' }),
      expect.objectContaining({ toolName: 'read_file', input: '{"path":"b.txt"}' }),
    ]);
    expect((lean.at(-1) as { finishReason: { unified: string } }).finishReason.unified).toBe('tool-calls');
  });

  it('length and content-filter finishes map as the SDK maps them', async () => {
    for (const finishReason of ['length', 'content-filter'] as const) {
      const { sdk, lean } = await both({ ...step(text('cut short')), finishReason });
      expect(lean).toEqual(sdk);
      expect((lean.at(-1) as { finishReason: { unified: string } }).finishReason.unified).toBe(finishReason);
    }
  });

  it('an error status before any output is the SDK’s APICallError, thrown by doStream', async () => {
    scripted.push(step(fail(429, { message: 'slow down', retryAfterSeconds: 2 })));
    const error = await leanModel(scripted.baseURL)
      .doStream(call)
      .then(
        () => null,
        (thrown: unknown) => thrown,
      );
    expect(error).toMatchObject({ name: 'AI_APICallError', statusCode: 429 });
    expect((error as { responseHeaders: Record<string, string> }).responseHeaders['retry-after']).toBe('2');
  });

  it('a connection cut after output errors the stream as it does the SDK model’s', async () => {
    const { sdk, lean } = await both(step(text('partial answer'), fail()));
    expect(sdk.at(-1)).toEqual({ thrown: expect.any(String) });
    expect(lean.slice(0, -1)).toEqual(sdk.slice(0, -1));
    expect(lean.at(-1)).toEqual({ thrown: expect.any(String) });
  });

  it('an error chunk, a malformed chunk and a stream without a finish reason give the SDK’s error parts', async () => {
    const chunk = (payload: object) => `data: ${JSON.stringify({ id: 'c1', created: 1, model: 'm', ...payload })}\n\n`;
    const bodies = [
      `${chunk({ choices: [{ index: 0, delta: { content: 'hi' } }] })}data: {"error":{"message":"overloaded","type":"server_error"}}\n\n`,
      `${chunk({ choices: [{ index: 0, delta: { content: 'hi' } }] })}data: {not json\n\n${chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}data: [DONE]\n\n`,
      `${chunk({ choices: 'none' })}${chunk({ choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: 'stop' }] })}`,
      `${chunk({ choices: [{ index: 0, delta: { content: 'no end' } }] })}`,
    ];
    for (const body of bodies) {
      rawBodies.push(body);
      const sdk = await parts(sdkModel(rawURL));
      rawBodies.push(body);
      const lean = await parts(leanModel(rawURL));
      const types = (list: unknown[]) => list.map((part) => (part as { type: string }).type);
      expect(types(lean)).toEqual(types(sdk));
      expect(types(lean)).toContain('error');
      expect(lean.at(-1)).toMatchObject({
        type: 'finish',
        finishReason: (sdk.at(-1) as { finishReason: unknown }).finishReason,
      });
      const errors = (list: unknown[]) =>
        list
          .filter((part) => (part as { type: string }).type === 'error')
          .map((part) => (part as { name?: string }).name);
      expect(errors(lean)).toEqual(errors(sdk));
    }
  });

  it('the provider headers and URL kept after the first call are the ones the SDK model sends on each (ADR 0098)', async () => {
    const answer = `${sseChunk({ choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}data: [DONE]\n\n`;
    const sent = async (model: LanguageModelV3, headers?: Record<string, string>) => {
      rawBodies.push(answer);
      const before = rawRequests.length;
      await drain((await model.doStream({ ...call, ...(headers ? { headers } : {}) })).stream);
      const request = rawRequests[before];
      if (!request) throw new Error('no request reached the server');
      const { host: _host, connection: _connection, 'content-length': _length, ...rest } = request.headers;
      return rest;
    };
    const lean = leanModel(rawURL);
    const sdk = sdkModel(rawURL);
    const first = await sent(lean, { 'x-call': 'one' });
    const second = await sent(lean);
    const third = await sent(lean, { 'x-call': 'three' });
    expect(first['x-call']).toBe('one');
    // A call's own header stays with that call.
    expect(second['x-call']).toBeUndefined();
    expect(third['x-call']).toBe('three');
    expect(second.authorization).toBe('Bearer k');
    expect(second['user-agent']).toBe(first['user-agent']);
    const { 'x-call': _first, ...firstRest } = first;
    expect(second).toEqual(firstRest);
    // The plain SDK model's own request carries the same provider headers.
    const plain = await sent(sdk);
    expect(plain.authorization).toBe(second.authorization);
    expect(plain['user-agent']).toBe(second['user-agent']);
    expect(plain['content-type']).toBe(second['content-type']);
  });

  it('a caller’s fetch carries every call, and its streams parse the same (ADR 0026)', async () => {
    const script = step(text('Hello there, world!', 3));
    scripted.push(script);
    const expected = await parts(leanModel(scripted.baseURL));
    const fetched: string[] = [];
    const counting: typeof globalThis.fetch = (input, init) => {
      fetched.push(String(input));
      return globalThis.fetch(input, init);
    };
    scripted.push(script);
    const viaFetch = createLeanCompatibleChatModel(
      (fetch, transformRequestBody) => sdkModel(scripted.baseURL, fetch, transformRequestBody),
      counting,
    );
    expect(await parts(viaFetch)).toEqual(expected);
    expect(fetched).toEqual([`${scripted.baseURL}/chat/completions`]);
    // With fetch the request carries fetch's own headers, compression included.
    expect(scripted.requests.at(-1)?.headers['accept-encoding']).toBe('gzip, deflate');
  });

  it('a compressed event stream is decoded, and a redirect is followed through fetch (ADR 0026)', async () => {
    const chunk = (payload: object) => `data: ${JSON.stringify({ id: 'c1', created: 1, model: 'm', ...payload })}\n\n`;
    const body = `${chunk({ choices: [{ index: 0, delta: { content: 'squeezed' } }] })}${chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}data: [DONE]\n\n`;
    rawBodies.push(body);
    const plain = await parts(leanModel(rawURL));
    for (const encoding of ['gzip', 'br'] as const) {
      rawBodies.push({
        status: 200,
        headers: { 'content-type': 'text/event-stream', 'content-encoding': encoding },
        body: encoding === 'gzip' ? gzipSync(body) : brotliCompressSync(body),
      });
      expect(await parts(leanModel(rawURL))).toEqual(plain);
    }
    rawBodies.push({ status: 307, headers: { location: `${rawURL}/chat/completions` }, body: '' }, body);
    expect(await parts(leanModel(rawURL))).toEqual(plain);
    expect(plain.filter((part) => (part as { type: string }).type === 'text-delta')).toEqual([
      { type: 'text-delta', id: 'txt-0', delta: 'squeezed' },
    ]);
  });

  it('an error status with a JSON body is the SDK’s APICallError with the body’s message (ADR 0026)', async () => {
    rawBodies.push({
      status: 400,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error: { message: 'bad tools', type: 'invalid_request_error' } }),
    });
    const error = await leanModel(rawURL)
      .doStream(call)
      .then(
        () => null,
        (thrown: unknown) => thrown,
      );
    expect(error).toMatchObject({ name: 'AI_APICallError', statusCode: 400, message: 'bad tools' });
  });

  it('a generate call goes out through node:http and answers what the SDK model answers, errors too (ADR 0080)', async () => {
    const generate = { prompt: call.prompt, maxOutputTokens: 40 };
    const script = step(text('A short title', 2));
    scripted.push(script);
    const sdk = await sdkModel(scripted.baseURL).doGenerate(generate);
    expect(scripted.requests.at(-1)?.headers['accept-encoding']).toBe('gzip, deflate');
    scripted.push(script);
    const lean = await leanModel(scripted.baseURL).doGenerate(generate);
    // Sent with node:http, not fetch: no header of fetch's own, and no call marker left on the request.
    const sent = scripted.requests.at(-1)?.headers ?? {};
    expect(sent['accept-encoding']).toBeUndefined();
    expect(Object.keys(sent).filter((name) => name.startsWith('x-hermes'))).toEqual([]);
    const comparable = (result: typeof sdk) => ({
      content: result.content,
      finishReason: result.finishReason,
      usage: result.usage,
      warnings: result.warnings,
      request: result.request,
      modelId: result.response?.modelId,
    });
    expect(comparable(lean)).toEqual(comparable(sdk));
    expect(lean.content).toEqual([{ type: 'text', text: 'A short title' }]);
    const failure = (model: LanguageModelV3) => {
      rawBodies.push({
        status: 429,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }),
      });
      return model.doGenerate(generate).then(
        () => null,
        (thrown: unknown) => thrown as { name: string; statusCode: number; message: string; isRetryable: boolean },
      );
    };
    const sdkError = await failure(sdkModel(rawURL));
    const leanError = await failure(leanModel(rawURL));
    expect(leanError).toMatchObject({ name: 'AI_APICallError', statusCode: 429, message: 'slow down' });
    expect({ ...leanError, responseHeaders: undefined, requestBodyValues: undefined }).toEqual({
      ...sdkError,
      responseHeaders: undefined,
      requestBodyValues: undefined,
    });
  });

  it('the tools are sent as the SDK encodes them, from JSON kept per schema, and its errors keep them (ADR 0080)', async () => {
    const script = step(text('ok', 1));
    scripted.push(script);
    await parts(sdkModel(scripted.baseURL));
    const sdkBody = scripted.requests.at(-1)?.body as Record<string, unknown>;
    const model = leanModel(scripted.baseURL);
    for (let index = 0; index < 2; index += 1) {
      scripted.push(script);
      await parts(model);
      // The same JSON object (the tools go last in the text), on the first call and on a call from the kept JSON.
      expect(scripted.requests.at(-1)?.body).toEqual(sdkBody);
    }
    expect((sdkBody.tools as unknown[]).length).toBe(1);
    // An error keeps the request's values, tools included, as the SDK model's does.
    const failing = async (failingModel: LanguageModelV3) => {
      rawBodies.push({
        status: 400,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ error: { message: 'bad tools', type: 'invalid_request_error' } }),
      });
      return failingModel.doStream(call).then(
        () => null,
        (thrown: unknown) => (thrown as { requestBodyValues: unknown }).requestBodyValues,
      );
    };
    expect(await failing(leanModel(rawURL))).toEqual(await failing(sdkModel(rawURL)));
  });

  it('the request body is byte for byte the SDK’s text with the tools last, sent from kept bytes (ADR 0093)', async () => {
    const unicode: LanguageModelV3CallOptions = {
      ...call,
      prompt: [
        { role: 'system', content: 'Sé breve, 中文 ok, emoji 🙂, quote " and \\ backslash' },
        { role: 'user', content: [{ type: 'text', text: 'straße 日本 🙂' }] },
      ],
      tools: [
        ...(call.tools ?? []),
        {
          type: 'function',
          name: 'schreiben',
          description: 'Schreibt eine Datei — größer',
          inputSchema: { type: 'object', properties: { 内容: { type: 'string' } } },
        },
      ],
      temperature: 0.3,
    };
    const body = (request: { body: Buffer }) => request.body.toString('utf8');
    const streamed = () => `${sseChunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}data: [DONE]\n\n`;
    rawBodies.push(streamed());
    await drain((await sdkModel(rawURL).doStream(unicode)).stream);
    const sdkText = body(rawRequests.at(-1) as { body: Buffer });
    const { tools, ...rest } = JSON.parse(sdkText) as Record<string, unknown>;
    // What the lean model sent before these bytes were kept: the SDK's text, the tools moved to its end.
    const expected = JSON.stringify({ ...rest, tools });
    const model = leanModel(rawURL);
    for (let round = 0; round < 2; round += 1) {
      rawBodies.push(streamed());
      await drain((await model.doStream(unicode)).stream);
      const received = rawRequests.at(-1) as { headers: IncomingHttpHeaders; body: Buffer };
      expect(body(received)).toBe(expected);
      expect(received.headers['content-length']).toBe(String(Buffer.byteLength(expected)));
    }
    // Through a caller's fetch: the same text, joined.
    const fetched = createLeanCompatibleChatModel(
      (fetch, transformRequestBody) => sdkModel(rawURL, fetch, transformRequestBody),
      (input, init) => globalThis.fetch(input, init),
    );
    rawBodies.push(streamed());
    await drain((await fetched.doStream(unicode)).stream);
    expect(body(rawRequests.at(-1) as { body: Buffer })).toBe(expected);
  });

  it('toolsJson gives the text JSON.stringify gives for the SDK’s function entries, and null for any other shape', () => {
    const parameters = { type: 'object', properties: { path: { type: 'string' } } };
    const entries = [
      { type: 'function', function: { name: 'read_file', description: 'Reads "a" file\n', parameters } },
      { type: 'function', function: { name: 'plain', description: undefined, parameters } },
      { type: 'function', function: { name: 'strict', description: 'x', parameters, strict: true } },
    ];
    for (let round = 0; round < 2; round += 1) expect(toolsJson(entries)).toBe(JSON.stringify(entries));
    // Same schema and name, another description: not the kept text of the first.
    const changed = [{ type: 'function', function: { name: 'read_file', description: 'Other', parameters } }];
    expect(toolsJson(changed)).toBe(JSON.stringify(changed));
    expect(toolsJson([])).toBeNull();
    expect(toolsJson(undefined)).toBeNull();
    expect(toolsJson([{ type: 'function', function: { name: 'a', parameters, extra: 1 } }])).toBeNull();
    expect(toolsJson([{ function: { name: 'a', description: 'b', parameters }, type: 'function' }])).toBeNull();
    expect(toolsJson([{ type: 'provider', function: { name: 'a', description: 'b', parameters } }])).toBeNull();
  });

  it('the batch reader (ADR 0024) hands out the stream’s parts a body chunk at a time, and is its only reader', async () => {
    const script = step(reasoning('thinking it over', 4), text('Hello there, world!', 3));
    scripted.push(script);
    const expected = await parts(leanModel(scripted.baseURL));
    scripted.push(script);
    const { stream } = await leanModel(scripted.baseURL).doStream(call);
    const batches = partBatchesOf(stream);
    if (!batches) throw new Error('no batch reader');
    expect(stream.locked).toBe(true);
    expect(partBatchesOf(stream)).toBeNull();
    const seen: unknown[] = [];
    for (let batch = await batches.read(); batch !== null; batch = await batches.read()) {
      expect(batch.length).toBeGreaterThan(0);
      // A batch's consecutive deltas of one kind are one part, their texts joined (ADR 0089).
      for (let index = 1; index < batch.length; index += 1) {
        const type = (batch[index] as { type: string }).type;
        if (type === 'text-delta' || type === 'reasoning-delta')
          expect((batch[index - 1] as { type: string }).type).not.toBe(type);
      }
      seen.push(...batch.map(normalize));
    }
    // The same parts as the stream's, but for deltas in a row, which are one part with their texts.
    const joined = (list: unknown[]) =>
      list.reduce<{ type: string; delta?: string }[]>((kept, part) => {
        const current = part as { type: string; delta?: string };
        const last = kept.at(-1);
        if (last && (current.type === 'text-delta' || current.type === 'reasoning-delta') && last.type === current.type)
          kept[kept.length - 1] = { ...last, delta: `${last.delta}${current.delta}` };
        else kept.push(current);
        return kept;
      }, []);
    expect(joined(seen)).toEqual(joined(expected));
    expect(seen.length).toBeLessThan(expected.length);
    expect(await batches.read()).toBeNull();
    // A stream already being read part by part has no batch reader.
    scripted.push(script);
    const other = (await leanModel(scripted.baseURL).doStream(call)).stream;
    const reader = other.getReader();
    expect(partBatchesOf(other)).toBeNull();
    await reader.cancel();
  });

  it('the batch reader taken from the result (ADR 0108) is its only reader, and its stream is locked when read later', async () => {
    const script = step(text('Hello there, world!', 3));
    scripted.push(script);
    const result = await leanModel(scripted.baseURL).doStream(call);
    const batches = partBatchesOf(result);
    if (!batches) throw new Error('no batch reader on the result');
    expect(partBatchesOf(result)).toBeNull();
    // The stream made after the batch reader was taken is locked for good and offers no second batch reader.
    expect(result.stream.locked).toBe(true);
    expect(partBatchesOf(result.stream)).toBeNull();
    let streamed = '';
    for (let batch = await batches.read(); batch !== null; batch = await batches.read())
      for (const part of batch) if (part.type === 'text-delta') streamed += part.delta;
    expect(streamed).toBe('Hello there, world!');
    // A result whose stream is read part by part has no batch reader, and its parts are all there.
    scripted.push(script);
    const other = await leanModel(scripted.baseURL).doStream(call);
    const reader = other.stream.getReader();
    expect(partBatchesOf(other)).toBeNull();
    let read = '';
    for (let next = await reader.read(); !next.done; next = await reader.read())
      if (next.value.type === 'text-delta') read += next.value.delta;
    expect(read).toBe('Hello there, world!');
    // A copy of the result (as a wrapping model makes) carries the stream, and the stream its batch reader.
    scripted.push(script);
    const copied = { ...(await leanModel(scripted.baseURL).doStream(call)) };
    const fromCopy = partBatchesOf(copied);
    if (!fromCopy) throw new Error('no batch reader on the copied result’s stream');
    expect(copied.stream.locked).toBe(true);
    await fromCopy.cancel();
  });

  it('the same events parse the same whatever the body chunks are cut at, LF or CR LF line ends, ß and 中 included (ADR 0078)', async () => {
    const event = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const lf = [
      event({ reasoning_content: 'think' }),
      event({ content: 'Grüße, ' }),
      ': a comment line\n\n',
      event({ content: '中文 ' }),
      event({ content: 'done' }),
      event({}, 'stop'),
      'data: [DONE]\n\n',
    ].join('');
    const crlf = lf.replaceAll('\n', '\r\n');
    const encoder = new TextEncoder();
    /** The lean model reading `body` as the given pieces of bytes, each one read of the body. */
    const streamed = async (pieces: Uint8Array[]) => {
      const answer: typeof globalThis.fetch = async () =>
        new Response(
          new ReadableStream<Uint8Array>({
            start(controller) {
              for (const piece of pieces) controller.enqueue(piece);
              controller.close();
            },
          }),
          { status: 200, headers: { 'content-type': 'text/event-stream' } },
        );
      const model = createLeanCompatibleChatModel(
        (fetch, transformRequestBody) => sdkModel('http://127.0.0.1:9/v1', fetch, transformRequestBody),
        answer,
      );
      return parts(model);
    };
    for (const body of [lf, crlf]) {
      const bytes = encoder.encode(body);
      const whole = await streamed([bytes]);
      expect(whole.filter((part) => (part as { type: string }).type === 'text-delta')).toHaveLength(3);
      // Every cut into two pieces (mid-event, between the two LFs of a blank line, inside a multi-byte character), and
      // the bytes one at a time.
      for (let cut = 1; cut < bytes.length; cut += 1)
        expect(await streamed([bytes.subarray(0, cut), bytes.subarray(cut)])).toEqual(whole);
      expect(await streamed(Array.from(bytes, (byte) => Uint8Array.of(byte)))).toEqual(whole);
    }
  });

  it('chunks that repeat a plain chunk around another text give the parts their own parse gives (ADR 0089)', async () => {
    const around = (content: string, extra: Record<string, unknown> = {}, finish: string | null = null) =>
      JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'm',
        choices: [{ index: 0, delta: { content }, finish_reason: finish }],
        ...extra,
      });
    const datas = [
      around('', {}),
      around('Hello'),
      around(' wor'),
      around(''),
      around('say "hi"'),
      around('line\nbreak'),
      around('back\\slash'),
      around('中文 😀 ß'),
      around('after escapes'),
      // The same text around the content, with a quote and more keys where the content was.
      '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop","y":{"z":"a"},"finish_reason":null}]}',
      '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x2"},"finish_reason":"stop","y":{"z":"a"},"finish_reason":null}]}',
      around('back to the first'),
      around('tab\there'),
      around('and on'),
      JSON.stringify({ id: 'content', choices: [{ index: 0, delta: { content: 'id named content' } }] }),
      '{"id":"c","choices":[{"index":0,"delta":{"content" : "spaced"}}]}',
      '{"id":"c","choices":[{"index":0,"delta":{"content":"nested"}}],"x":{"content":"other"}}',
      around('before the others'),
      JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { reasoning_content: 'think', content: 'both' } }] }),
      around('plain again'),
      JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { content: '', tool_calls: [] } }] }),
      JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { content: 'empty tool calls', tool_calls: [] } }] }),
      around('then usage', { usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }),
      JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { content: 'same head and tail', tool_calls: [] } }] }),
      around('last', {}, 'stop'),
    ];
    const body = `${datas.map((data) => `data: ${data}\n\n`).join('')}data: [DONE]\n\n`;
    // Both models read the body from a fetch of their own: no socket to reuse between the calls.
    const answer: typeof globalThis.fetch = async () =>
      new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    const sdk = await parts(sdkModel('http://127.0.0.1:9/v1', answer));
    const lean = await parts(
      createLeanCompatibleChatModel(
        (fetch, transformRequestBody) => sdkModel('http://127.0.0.1:9/v1', fetch, transformRequestBody),
        answer,
      ),
    );
    expect(lean).toEqual(sdk);
    // Every chunk's text, as JSON.parse reads it, in order: none lost, none taken from the wrong place.
    const expected = datas
      .map((data) => (JSON.parse(data) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content)
      .filter((content): content is string => typeof content === 'string' && content !== '');
    const deltas = lean
      .filter((part) => (part as { type: string }).type === 'text-delta')
      .map((part) => (part as { delta: string }).delta);
    expect(deltas).toEqual(expected);
  });

  it('cancelling the batch reader settles its pending read with null and stops the body', async () => {
    let closed: () => void = () => {};
    const bodyClosed = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const open = createServer((request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(
        `data: ${JSON.stringify({ id: 'c1', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'hi' } }] })}\n\n`,
      );
      response.on('close', closed);
    });
    await new Promise<void>((resolve) => open.listen(0, '127.0.0.1', resolve));
    try {
      const { stream } = await leanModel(`http://127.0.0.1:${(open.address() as AddressInfo).port}/v1`).doStream(call);
      const batches = partBatchesOf(stream);
      if (!batches) throw new Error('no batch reader');
      const types: string[] = [];
      while (!types.includes('text-delta')) {
        const batch = await batches.read();
        if (batch === null) break;
        types.push(...batch.map((part) => part.type));
      }
      expect(types).toContain('text-delta');
      const pending = batches.read();
      await batches.cancel(new Error('stop'));
      expect(await pending).toBeNull();
      expect(await batches.read()).toBeNull();
      await bodyClosed;
    } finally {
      open.closeAllConnections();
      await new Promise((resolve) => open.close(resolve));
    }
  });
});
