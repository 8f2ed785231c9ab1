import type {
  ApprovalResponseRequest,
  ErrorEnvelope,
  RunCreated,
  RunEvent,
  RunStatusObject,
  RunWireStatus,
} from '@hermes/protocol-openai/wire';
import { ClientError } from '../errors.js';
import { readServerSentEventBatches } from './sse.js';

const RUNS_API_ERROR_BRAND = Symbol.for('@hermes/client-sdk/RunsApiError');

/**
 * An HTTP error of the runs API, rehydrated from the OpenAI error envelope
 * (`{"error":{"message","type","param","code"}}`).
 */
export class RunsApiError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** The envelope's `code`, e.g. `run_not_found`, `approval_not_pending`, `run_not_accepting_steer`. */
  readonly code: string;
  /** The envelope's `type`, e.g. `invalid_request_error`. */
  readonly type: string;
  /** The envelope's `param`, or null. */
  readonly param: string | null;

  /** Creates the error from an HTTP status and the parsed envelope fields. */
  constructor(status: number, code: string, message: string, type: string, param: string | null) {
    super(message);
    this.name = 'RunsApiError';
    this.status = status;
    this.code = code;
    this.type = type;
    this.param = param;
    Object.defineProperty(this, RUNS_API_ERROR_BRAND, { value: true });
  }

  /** True for any `RunsApiError`, whichever copy of the package created it. */
  static isInstance(value: unknown): value is RunsApiError {
    return (
      typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[RUNS_API_ERROR_BRAND] === true
    );
  }
}

/** Body of `POST /v1/runs` (spec §19.1). */
export interface CreateRunParams {
  /** The user turn, or `{role, content}` messages whose last item is the user turn. */
  input: string | { role: string; content: unknown }[];
  /** Ephemeral system prompt. */
  instructions?: string;
  /** The session to run in (created when absent). */
  session_id?: string;
  /** Continue from a stored response. */
  previous_response_id?: string;
  /** Explicit history for a new seeded session. */
  conversation_history?: { role: string; content: unknown }[];
  model?: string;
  provider?: string;
  model_options?: Record<string, unknown>;
  /** Label of the user turn in memory. */
  author?: string;
}

/** Per-call options of the runs client. */
export interface RunsRequestOptions {
  signal?: AbortSignal;
}

/** Options of {@link RunsClient.create}. */
export interface CreateRunOptions extends RunsRequestOptions {
  /** Sent as `Idempotency-Key`: a retry with the same key and body returns the same run (`replayed: true`). */
  idempotencyKey?: string;
}

/** A created run, with the session headers of the answer. */
export interface CreatedRun extends RunCreated {
  /** `X-Hermes-Session-Id` of the answer. */
  sessionHeader: string | null;
}

/** Options of {@link RunsClient.events}. */
export interface RunEventsOptions extends RunsRequestOptions {
  /** Start after this seq (sent as `Last-Event-ID`); from the oldest retained event when absent. */
  lastSeq?: number;
  /** Reconnects after a dropped stream before giving up; default 10. */
  maxReconnects?: number;
  /** Delay before the first reconnect, doubled each time up to 5 s; default 250 ms. */
  reconnectDelayMs?: number;
}

/** Options of {@link RunsClient.waitForStatus}. */
export interface PollOptions extends RunsRequestOptions {
  /** Default 500 ms. */
  intervalMs?: number;
  /** Give up after this long; default 120 000 ms. */
  timeoutMs?: number;
}

/** Answer of `POST /v1/runs/{id}/approval`. */
export interface ApprovalResult {
  object: 'hermes.run.approval_response';
  run_id: string;
  choice: string;
  request_id: string;
  resolved: number;
}

/** Answer of `POST /v1/runs/{id}/steer`. */
export interface SteerResult {
  object: 'hermes.run.steer';
  run_id: string;
  accepted: true;
}

/** Options of {@link RunsClient}. */
export interface RunsClientOptions {
  /** The server's origin, e.g. `http://127.0.0.1:8642` (a trailing `/v1` is accepted too). */
  baseURL: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Replaces the global `fetch` (tests, proxies). */
  fetch?: typeof fetch;
  /** Extra headers of every request. */
  headers?: Record<string, string>;
}

/** The terminal run events (spec §19.3). */
export const TERMINAL_RUN_EVENTS: ReadonlySet<string> = new Set([
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.interrupted',
]);

/** The terminal run statuses (spec §19.5). */
export const TERMINAL_RUN_STATUSES: ReadonlySet<RunWireStatus> = new Set([
  'completed',
  'failed',
  'cancelled',
  'interrupted',
]);

/**
 * A typed client of the runs API (spec/openai-api.md §19): create a run, stream its events with
 * automatic resume from the last `seq`, poll its status, answer approvals, steer and stop.
 */
export class RunsClient {
  readonly #base: string;
  readonly #options: RunsClientOptions;
  readonly #fetch: typeof fetch;

  /** Creates a client; nothing is sent until a method is called. */
  constructor(options: RunsClientOptions) {
    this.#options = options;
    this.#base = options.baseURL.replace(/\/+$/, '').replace(/\/v1$/, '');
    // Called through globalThis, never as a detached method: a browser's fetch called unbound throws "Illegal invocation".
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** `POST /v1/runs`: starts a run (202); with `idempotencyKey`, a retry returns the same run. */
  async create(params: CreateRunParams, options: CreateRunOptions = {}): Promise<CreatedRun> {
    const response = await this.#request('POST', '/v1/runs', params, options, {
      ...(options.idempotencyKey !== undefined ? { 'Idempotency-Key': options.idempotencyKey } : {}),
    });
    const body = (await response.json()) as RunCreated;
    return { ...body, sessionHeader: response.headers.get('x-hermes-session-id') };
  }

  /** `GET /v1/runs/{id}`: the status object. */
  async get(runId: string, options: RunsRequestOptions = {}): Promise<RunStatusObject> {
    const response = await this.#request('GET', `/v1/runs/${encodeURIComponent(runId)}`, undefined, options);
    return (await response.json()) as RunStatusObject;
  }

  /** Polls the status until it is one of `statuses` (default: any terminal status). */
  async waitForStatus(
    runId: string,
    statuses: readonly RunWireStatus[] = [...TERMINAL_RUN_STATUSES],
    options: PollOptions = {},
  ): Promise<RunStatusObject> {
    const deadline = Date.now() + (options.timeoutMs ?? 120_000);
    for (;;) {
      const status = await this.get(runId, options);
      if (statuses.includes(status.status)) return status;
      if (Date.now() >= deadline)
        throw new ClientError('request_timeout', `run ${runId} stayed ${status.status} past the poll timeout`);
      await sleep(options.intervalMs ?? 500, options.signal);
    }
  }

  /** `POST /v1/runs/{id}/approval`: answers the oldest (or the named) pending approval. */
  async approve(
    runId: string,
    answer: { choice: 'once' | 'session' | 'always' | 'deny'; requestId?: string; all?: boolean },
    options: RunsRequestOptions = {},
  ): Promise<ApprovalResult> {
    const body: ApprovalResponseRequest = {
      choice: answer.choice,
      ...(answer.requestId !== undefined ? { request_id: answer.requestId } : {}),
      ...(answer.all !== undefined ? { all: answer.all } : {}),
    };
    const response = await this.#request('POST', `/v1/runs/${encodeURIComponent(runId)}/approval`, body, options);
    return (await response.json()) as ApprovalResult;
  }

  /** `POST /v1/runs/{id}/steer`: text delivered at the agent's next tool boundary. */
  async steer(runId: string, input: string, options: RunsRequestOptions = {}): Promise<SteerResult> {
    const response = await this.#request('POST', `/v1/runs/${encodeURIComponent(runId)}/steer`, { input }, options);
    return (await response.json()) as SteerResult;
  }

  /** `POST /v1/runs/{id}/stop`: `{status:"stopping"}` for a running run, else the full status object. */
  async stop(
    runId: string,
    options: RunsRequestOptions = {},
  ): Promise<RunStatusObject | { object: 'hermes.run'; run_id: string; status: 'stopping' }> {
    const response = await this.#request('POST', `/v1/runs/${encodeURIComponent(runId)}/stop`, {}, options);
    return (await response.json()) as RunStatusObject;
  }

  /**
   * `GET /v1/runs/{id}/events`: every event of the run, in `seq` order, ending after the terminal event.
   * A stream that drops before the terminal event is reopened with `Last-Event-ID` set to the last seq
   * received, so each event is yielded once. A `replay.truncated` frame (events no longer retained) is
   * yielded as it is, so the caller can tell.
   */
  async *events(runId: string, options: RunEventsOptions = {}): AsyncGenerator<RunEvent> {
    let lastSeq = options.lastSeq;
    let reconnects = 0;
    const maxReconnects = options.maxReconnects ?? 10;
    let delay = options.reconnectDelayMs ?? 250;
    for (;;) {
      let response: Response;
      try {
        response = await this.#request('GET', `/v1/runs/${encodeURIComponent(runId)}/events`, undefined, options, {
          accept: 'text/event-stream',
          ...(lastSeq !== undefined ? { 'Last-Event-ID': String(lastSeq) } : {}),
        });
      } catch (error) {
        // HTTP errors (404, 400) are final; only network failures are retried.
        if (RunsApiError.isInstance(error) || options.signal?.aborted || reconnects >= maxReconnects) throw error;
        reconnects += 1;
        await sleep(delay, options.signal);
        delay = Math.min(delay * 2, 5000);
        continue;
      }
      let ended = false;
      try {
        for await (const items of readServerSentEventBatches(response.body as ReadableStream<Uint8Array>)) {
          for (const item of items) {
            if (item.kind === 'comment') {
              if (item.comment === 'stream closed') ended = true;
              continue;
            }
            const event = JSON.parse(item.message.data) as RunEvent;
            if (typeof event.seq === 'number') {
              if (lastSeq !== undefined && event.seq <= lastSeq) continue;
              lastSeq = event.seq;
            }
            yield event;
            if (TERMINAL_RUN_EVENTS.has(event.event)) ended = true;
          }
        }
      } catch (error) {
        if (options.signal?.aborted) throw new ClientError('aborted', 'run events aborted', { cause: error });
        // A cut connection: fall through to reconnect from lastSeq.
      }
      if (ended) return;
      if (options.signal?.aborted) throw new ClientError('aborted', 'run events aborted');
      if (reconnects >= maxReconnects)
        throw new ClientError('connection_closed', `the events stream of ${runId} kept dropping`);
      reconnects += 1;
      await sleep(delay, options.signal);
      delay = Math.min(delay * 2, 5000);
    }
  }

  async #request(
    method: string,
    path: string,
    body: unknown,
    options: RunsRequestOptions,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const response = await this.#fetch(`${this.#base}${path}`, {
      method,
      headers: {
        ...this.#options.headers,
        ...(this.#options.apiKey !== undefined ? { authorization: `Bearer ${this.#options.apiKey}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (response.ok) return response;
    const text = await response.text();
    const error = errorOfEnvelope(text);
    if (error) throw new RunsApiError(response.status, error.code, error.message, error.type, error.param);
    throw new RunsApiError(response.status, 'http_error', text || response.statusText, 'server_error', null);
  }
}

/**
 * The `error` of an OpenAI error envelope, or undefined when `text` is not one. Checked by hand rather than with the
 * wire's zod schema, so that the client stays free of zod in a browser bundle (ADR 0044).
 */
function errorOfEnvelope(text: string): ErrorEnvelope['error'] | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  const error = (body as { error?: Record<string, unknown> } | null)?.error;
  if (typeof error !== 'object' || error === null) return undefined;
  const { message, type, param, code } = error;
  if (typeof message !== 'string' || typeof type !== 'string' || typeof code !== 'string') return undefined;
  if (param !== null && typeof param !== 'string') return undefined;
  return error as ErrorEnvelope['error'];
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ClientError('aborted', 'aborted', { cause: signal.reason }));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ClientError('aborted', 'aborted', { cause: signal?.reason }));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
