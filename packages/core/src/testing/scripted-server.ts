/**
 * The scripted OpenAI-compatible server: plays a `ModelScript` over real HTTP on the loopback interface
 * (spec/core.md §22.3).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../clock.js';
import type { Clock } from '../types.js';
import {
  computeUsage,
  countChatMessagesCharacters,
  describeScriptedError,
  type ExhaustedBehavior,
  exhaustedMessage,
  type ModelScript,
  type OutputAction,
  planStep,
  type RecordedCall,
  runActions,
  ScriptQueue,
  type ScriptStep,
  type ScriptUsage,
  toOpenAIFinishReason,
} from './script.js';
import { findAlternationViolation, type StrictAlternationRule } from './strict-alternation.js';

/** An HTTP request the server received. */
export interface RecordedHttpRequest {
  method: string;
  /** The request target as sent, query included. */
  path: string;
  /** Lowercase names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** Parsed JSON; the raw text when it is not JSON; undefined without a body. */
  body: unknown;
  /** The client went away before the response was complete. */
  aborted: boolean;
}

/** Options of `startScriptedOpenAIServer`. */
export interface ScriptedServerOptions {
  script: ModelScript;
  /** When set, every request needs `Authorization: Bearer <apiKey>`, else 401. */
  apiKey?: string;
  /** Ids listed by `GET /v1/models`. Default `['scripted']`. */
  models?: string[];
  /** Default 0: any free port. */
  port?: number;
  /** Default `error`: a 400 response saying how many calls were consumed. */
  onExhausted?: ExhaustedBehavior;
  /** Clock for delays and `startedAt`; real timers when absent (the rule for end-to-end tests). */
  clock?: Clock;
  /** Assert on every chat request that `messages` alternate (see `StrictAlternationRule`); 400 when violated. */
  strictAlternation?: StrictAlternationRule;
}

/** A running scripted server. */
export interface ScriptedServer {
  /** `http://127.0.0.1:<port>/v1` */
  readonly baseURL: string;
  /** Every request, in arrival order. */
  readonly requests: RecordedHttpRequest[];
  /** Every chat completion request as a `RecordedCall` (messages = the body's `messages`). */
  readonly calls: RecordedCall[];
  /** Steps not yet consumed. */
  readonly remaining: number;
  /** Errors thrown by `expect` hooks and alternation violations (each also answered with a 400). */
  readonly expectationFailures: unknown[];
  push(...steps: ScriptStep[]): void;
  /** Cuts open connections (hanging requests are recorded as aborted) and stops listening. */
  close(): Promise<void>;
}

interface ChatRequestBody {
  model?: unknown;
  messages?: unknown;
  tools?: unknown;
  stream?: unknown;
  stream_options?: unknown;
  [key: string]: unknown;
}

function headerRecord(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  response.end(text);
}

function sendError(response: ServerResponse, status: number, message: string, type: string, code: string | null): void {
  sendJson(response, status, { error: { message, type, param: null, code } });
}

function toolsOf(body: ChatRequestBody): { name: string; schema: unknown }[] {
  if (!Array.isArray(body.tools)) return [];
  return body.tools.map((tool: unknown) => {
    const record = (typeof tool === 'object' && tool !== null ? tool : {}) as Record<string, unknown>;
    const fn = (typeof record.function === 'object' && record.function !== null ? record.function : record) as Record<
      string,
      unknown
    >;
    return { name: typeof fn.name === 'string' ? fn.name : '', schema: fn.parameters };
  });
}

function openAIUsage(usage: ScriptUsage): Record<string, unknown> {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheReadTokens },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
  };
}

/**
 * Cuts the connection. Chunks already written are flushed first (a plain destroy would discard them, turning a cut
 * after output into a failure before output); the chunked body then ends without its terminating chunk, which the
 * client reports as a terminated connection.
 */
async function cutConnection(response: ServerResponse, written: boolean): Promise<void> {
  const socket = response.socket;
  if (socket === null) return;
  if (!written) {
    socket.destroy();
    return;
  }
  await new Promise<void>((resolve) => setImmediate(resolve));
  socket.end();
}

class ScriptedOpenAIServer implements ScriptedServer {
  readonly requests: RecordedHttpRequest[] = [];
  readonly calls: RecordedCall[] = [];
  readonly expectationFailures: unknown[] = [];
  baseURL = '';
  readonly #server: Server;
  readonly #queue: ScriptQueue;
  readonly #options: ScriptedServerOptions;
  readonly #clock: Clock;
  #closed: Promise<void> | undefined;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(options: ScriptedServerOptions) {
    this.#options = options;
    this.#queue = new ScriptQueue(options.script, options.onExhausted ?? 'error');
    this.#clock = options.clock ?? systemClock;
    this.#server = createServer((request, response) => {
      const handling = this.#handle(request, response)
        .catch((error: unknown) => {
          // A bug in the double itself: answer 500 when still possible, never crash the test process.
          if (!response.headersSent) {
            sendError(response, 500, `Scripted server failure: ${String(error)}`, 'server_error', null);
          } else response.destroy();
        })
        .finally(() => this.#inFlight.delete(handling));
      this.#inFlight.add(handling);
    });
  }

  get remaining(): number {
    return this.#queue.remaining;
  }

  push(...steps: ScriptStep[]): void {
    this.#queue.push(...steps);
  }

  async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      // A 4,096 backlog (the kernel caps it at net.core.somaxconn) instead of node's 511: a benchmark opening 1,000
      // model streams at once otherwise has SYNs dropped and retried 1-15 s later, which reads as model latency.
      this.#server.listen({ port, host: '127.0.0.1', backlog: 4096 }, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    const address = this.#server.address() as AddressInfo;
    this.baseURL = `http://127.0.0.1:${address.port}/v1`;
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      const stopped = new Promise<void>((resolve) => this.#server.close(() => resolve()));
      this.#server.closeAllConnections();
      await stopped;
      // Handlers notice the cut connections (and record them as aborted) before close() resolves.
      await Promise.all([...this.#inFlight]);
    })();
    return this.#closed;
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const text = await readBody(request);
    let body: unknown;
    if (text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const record: RecordedHttpRequest = {
      method: request.method ?? 'GET',
      path: request.url ?? '/',
      headers: headerRecord(request),
      body,
      aborted: false,
    };
    this.requests.push(record);

    const apiKey = this.#options.apiKey;
    if (apiKey !== undefined && record.headers.authorization !== `Bearer ${apiKey}`) {
      sendError(response, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
      return;
    }
    const pathname = new URL(record.path, 'http://127.0.0.1').pathname.replace(/\/+$/, '');
    if (record.method === 'GET' && pathname === '/v1/models') {
      const models = this.#options.models ?? ['scripted'];
      sendJson(response, 200, {
        object: 'list',
        data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'scripted' })),
      });
      return;
    }
    if (pathname === '/v1/chat/completions') {
      if (record.method !== 'POST') {
        sendError(response, 405, 'Use POST.', 'invalid_request_error', 'method_not_allowed');
        return;
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        sendError(response, 400, 'The body must be a JSON object.', 'invalid_request_error', 'invalid_json');
        return;
      }
      await this.#chat(body as ChatRequestBody, record, response);
      return;
    }
    sendError(response, 404, `Unknown route ${record.method} ${pathname}.`, 'invalid_request_error', 'unknown_url');
  }

  async #chat(body: ChatRequestBody, record: RecordedHttpRequest, response: ServerResponse): Promise<void> {
    const { messages, tools: _tools, ...rest } = body;
    const messageList = Array.isArray(messages) ? (messages as unknown[]) : [];
    const call: RecordedCall = {
      messages: messageList,
      tools: toolsOf(body),
      options: rest,
      aborted: false,
      startedAt: this.#clock.now(),
    };
    this.calls.push(call);
    const callNumber = this.calls.length;
    const model = typeof body.model === 'string' ? body.model : 'scripted';

    // The client going away before the response is complete aborts the step (delays, hang) and is recorded.
    let complete = false;
    const clientGone = new AbortController();
    response.on('close', () => {
      if (complete) return;
      record.aborted = true;
      call.aborted = true;
      clientGone.abort(new Error('The client closed the connection.'));
    });
    const finish = (send: () => void) => {
      complete = true;
      send();
    };

    const scriptStep = this.#queue.take();
    if (scriptStep === undefined) {
      const message = exhaustedMessage(`server:${model}`, this.#queue.consumed, callNumber);
      finish(() => sendError(response, 400, message, 'invalid_request_error', 'script_exhausted'));
      return;
    }
    const violation = findAlternationViolation(messageList, this.#options.strictAlternation ?? false);
    if (violation !== undefined) {
      this.expectationFailures.push(new Error(violation));
      finish(() => sendError(response, 400, violation, 'invalid_request_error', 'strict_alternation_violated'));
      return;
    }
    if (scriptStep.expect !== undefined) {
      try {
        scriptStep.expect(call);
      } catch (error) {
        this.expectationFailures.push(error);
        const message = `Scripted expectation failed: ${error instanceof Error ? error.message : String(error)}`;
        finish(() => sendError(response, 400, message, 'invalid_request_error', 'expectation_failed'));
        return;
      }
    }

    const plan = planStep(scriptStep, callNumber);
    const usage = computeUsage(scriptStep, plan, countChatMessagesCharacters(messages));
    const id = `chatcmpl-scripted-${callNumber}`;
    const created = Math.floor(call.startedAt / 1000);
    const finishReason = toOpenAIFinishReason(plan.finishReason);
    const streaming = body.stream === true;
    const includeUsage =
      typeof body.stream_options === 'object' &&
      body.stream_options !== null &&
      (body.stream_options as Record<string, unknown>).include_usage === true;

    const writeChunk = (delta: Record<string, unknown>, reason: string | null = null) => {
      const chunk = {
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: reason }],
      };
      response.write(`data: ${JSON.stringify(chunk)}\n\n`);
    };
    let started = false;
    const startStream = () => {
      if (started) return;
      started = true;
      response.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      writeChunk({ role: 'assistant', content: '' });
    };

    let textOutput = '';
    let reasoningOutput = '';
    const toolCalls: { id: string; type: 'function'; function: { name: string; arguments: string } }[] = [];
    let produced = false;
    try {
      for await (const action of runActions(plan.actions, clientGone.signal, this.#clock)) {
        if (action.type === 'error') {
          const described = describeScriptedError(action.error, model);
          const status = described.status;
          if (produced || status === undefined) {
            // After output (or for a network error) the connection is cut, as a proxy dying mid-response would.
            complete = true;
            await cutConnection(response, started);
            return;
          }
          finish(() => sendJson(response, status, described.envelope, described.headers));
          return;
        }
        produced = true;
        if (streaming) {
          startStream();
          this.#writeAction(action, writeChunk);
        } else if (action.type === 'text') textOutput += action.delta;
        else if (action.type === 'reasoning') reasoningOutput += action.delta;
        else if (action.type === 'tool-call') {
          toolCalls.push({ id: action.id, type: 'function', function: { name: action.name, arguments: action.input } });
        }
      }
    } catch {
      // The client went away during a delay or a hang: already recorded, nothing left to answer.
      return;
    }

    if (streaming) {
      startStream();
      writeChunk({}, finishReason);
      if (includeUsage) {
        response.write(
          `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: openAIUsage(usage) })}\n\n`,
        );
      }
      finish(() => response.end('data: [DONE]\n\n'));
      return;
    }
    const message: Record<string, unknown> = { role: 'assistant', content: textOutput === '' ? null : textOutput };
    if (reasoningOutput !== '') message.reasoning_content = reasoningOutput;
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    finish(() =>
      sendJson(response, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
        usage: openAIUsage(usage),
      }),
    );
  }

  #writeAction(action: OutputAction, writeChunk: (delta: Record<string, unknown>) => void): void {
    switch (action.type) {
      case 'text':
        writeChunk({ content: action.delta });
        return;
      case 'reasoning':
        writeChunk({ reasoning_content: action.delta });
        return;
      case 'tool-input-start':
        writeChunk({
          tool_calls: [
            { index: action.index, id: action.id, type: 'function', function: { name: action.name, arguments: '' } },
          ],
        });
        return;
      case 'tool-input-delta':
        writeChunk({ tool_calls: [{ index: action.index, function: { arguments: action.delta } }] });
        return;
      case 'tool-call':
        return;
    }
  }
}

/**
 * Starts a scripted OpenAI-compatible server on 127.0.0.1 (spec/core.md §22.3).
 *
 * `POST /v1/chat/completions` consumes the next step. With `stream: true` it answers with SSE
 * `chat.completion.chunk`s: a first chunk with the role, text as `delta.content` fragments, reasoning as
 * `delta.reasoning_content`, each tool call as a chunk with `index`, `id`, `type` and `function.name` followed by
 * `function.arguments` fragments, a chunk with `finish_reason`, a usage chunk (`choices: []`) when
 * `stream_options.include_usage` is set, then `data: [DONE]`. Headers are sent with the first output, so delays and
 * a hang before it hold the whole response and an error before it is answered with its status, the OpenAI error
 * envelope and `Retry-After`. An error after output, or one without a status, cuts the connection. Without
 * `stream` it answers one `chat.completion` object (usage always included).
 */
export async function startScriptedOpenAIServer(options: ScriptedServerOptions): Promise<ScriptedServer> {
  const server = new ScriptedOpenAIServer(options);
  await server.listen(options.port ?? 0);
  return server;
}
