/**
 * The script format shared by the scripted fake model and the scripted OpenAI-compatible server
 * (spec/core.md §22.1), its builders, and the pieces both doubles derive from a step: the planned
 * output, the default usage and the provider-shaped errors.
 */
import { APICallError } from '@ai-sdk/provider';
import type { Usage } from '../types.js';

/** Finish reasons a step can declare; the AI SDK's unified vocabulary minus `error`. */
export type ScriptFinishReason = 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'other';

/** Provider failures with a recognisable message and body (spec/core.md §7.6). */
export type ScriptedErrorKind = 'context_overflow' | 'content_policy' | 'quota';

/** A scripted failure. Before any output it fails the request; after output it fails the stream. */
export interface ScriptedError {
  /** HTTP status; absent = a network error (connection reset). A `kind` without a status implies one. */
  status?: number;
  /** Replaces the default message of the status or kind. */
  message?: string;
  /** Sent as the `Retry-After` response header. */
  retryAfterSeconds?: number;
  /** Sets a matching message, error type and code (and a default status: 400, 400, 429). */
  kind?: ScriptedErrorKind;
}

/** A tool call the model makes. */
export interface ScriptedToolCall {
  name: string;
  /** Serialized with `JSON.stringify`; `undefined` sends `{}`. */
  args: unknown;
  /** Default: `call_<call number>_<index of the call in the step>`. */
  id?: string;
  /** Sent verbatim instead of the serialized `args`, to test malformed arguments. */
  rawArgs?: string;
}

/** One element of a step, produced in order. */
export type ScriptPart =
  | { text: string; chunkSize?: number }
  | { reasoning: string; chunkSize?: number }
  | { toolCall: ScriptedToolCall }
  | { delayMs: number }
  | { error: ScriptedError }
  | { hang: true };

/** What one model call returns. */
export interface ScriptStep {
  parts: ScriptPart[];
  /** Inferred when absent: `tool-calls` when the step has tool calls, else `stop`. */
  finishReason?: ScriptFinishReason;
  /**
   * Overrides of the default usage, which is derived from text lengths (4 characters per token, rounded up) of the
   * prompt and of the output. `totalTokens`, `apiCalls` and `estimated` are ignored: the total is always input plus
   * output.
   */
  usage?: Partial<Usage>;
  /** Assertion on the request, run before any output; a throw fails the call loudly. */
  expect?: (call: RecordedCall) => void;
}

/** One step per model call, consumed in order. */
export type ModelScript = ScriptStep[];

/** A model call as a double received it. */
export interface RecordedCall {
  /** The prompt as received: `LanguageModelV3Prompt` for the fake model, the request's `messages` over HTTP. */
  messages: unknown[];
  tools: { name: string; schema: unknown }[];
  /** Every other option of the call (max tokens, provider options, tool choice…), the abort signal excluded. */
  options: Record<string, unknown>;
  /** The call's signal fired (or its client went away) before the call completed. */
  aborted: boolean;
  /** From the double's clock. */
  startedAt: number;
}

/** What happens when a call arrives and no step is left. */
export type ExhaustedBehavior = 'error' | 'repeat_last';

/** Default size of text and reasoning fragments, in characters. */
export const DEFAULT_CHUNK_SIZE = 8;

/** Builds a step from its parts. Spread it to add `finishReason`, `usage` or `expect`. */
export function step(...parts: ScriptPart[]): ScriptStep {
  return { parts };
}

/** Text streamed in fragments of `chunkSize` characters (default 8). */
export function text(value: string, chunkSize?: number): ScriptPart {
  return chunkSize === undefined ? { text: value } : { text: value, chunkSize };
}

/** Reasoning streamed in fragments of `chunkSize` characters (default 8). */
export function reasoning(value: string, chunkSize?: number): ScriptPart {
  return chunkSize === undefined ? { reasoning: value } : { reasoning: value, chunkSize };
}

/** A tool call whose arguments are `JSON.stringify(args)`. */
export function toolCall(name: string, args: unknown, id?: string): ScriptPart {
  return { toolCall: id === undefined ? { name, args } : { name, args, id } };
}

/** A tool call whose arguments are sent verbatim (for malformed JSON). */
export function rawToolCall(name: string, rawArgs: string, id?: string): ScriptPart {
  return { toolCall: id === undefined ? { name, args: undefined, rawArgs } : { name, args: undefined, rawArgs, id } };
}

/** A failure with an HTTP status, or a network error when `status` is undefined. */
export function fail(status?: number, options: Omit<ScriptedError, 'status'> = {}): ScriptPart {
  return { error: status === undefined ? { ...options } : { status, ...options } };
}

/** A pause before the next part, on the double's clock. */
export function delay(ms: number): ScriptPart {
  return { delayMs: ms };
}

/** Never finishes; only an abort (or the client going away) ends the call. */
export function hang(): ScriptPart {
  return { hang: true };
}

/** A provider-neutral action of a planned step; each double renders it in its own wire shape. */
export type PlannedAction =
  | { type: 'text'; delta: string }
  | { type: 'reasoning'; delta: string }
  | { type: 'tool-input-start'; index: number; id: string; name: string }
  | { type: 'tool-input-delta'; index: number; id: string; delta: string }
  | { type: 'tool-call'; index: number; id: string; name: string; input: string }
  | { type: 'delay'; ms: number }
  | { type: 'hang' }
  | { type: 'error'; error: ScriptedError };

/** Actions that produce output (anything a client would see as a response). */
export type OutputAction = Extract<
  PlannedAction,
  { type: 'text' | 'reasoning' | 'tool-input-start' | 'tool-input-delta' | 'tool-call' }
>;

/** A step turned into actions, with what the default usage needs. */
export interface StepPlan {
  actions: PlannedAction[];
  finishReason: ScriptFinishReason;
  outputCharacters: { text: number; reasoning: number };
}

/** Normalized usage of one scripted call. */
export interface ScriptUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
}

function chunks(value: string, size: number): string[] {
  const chunkSize = Number.isFinite(size) && size >= 1 ? Math.floor(size) : DEFAULT_CHUNK_SIZE;
  const result: string[] = [];
  for (let offset = 0; offset < value.length; offset += chunkSize) {
    result.push(value.slice(offset, offset + chunkSize));
  }
  return result;
}

function describePart(part: unknown): string {
  try {
    return JSON.stringify(part) ?? String(part);
  } catch {
    return String(part);
  }
}

/**
 * Expands a step into actions. Parts after an `error` or a `hang` are unreachable and dropped. Throws a TypeError
 * for a part of unknown shape, so a typo in a script fails loudly.
 */
export function planStep(scriptStep: ScriptStep, callNumber: number): StepPlan {
  const actions: PlannedAction[] = [];
  let toolIndex = 0;
  let textCharacters = 0;
  let reasoningCharacters = 0;
  for (const part of scriptStep.parts) {
    if (typeof part !== 'object' || part === null) {
      throw new TypeError(`Invalid script part: ${describePart(part)}`);
    }
    if ('text' in part && typeof part.text === 'string') {
      textCharacters += part.text.length;
      for (const delta of chunks(part.text, part.chunkSize ?? DEFAULT_CHUNK_SIZE))
        actions.push({ type: 'text', delta });
    } else if ('reasoning' in part && typeof part.reasoning === 'string') {
      reasoningCharacters += part.reasoning.length;
      for (const delta of chunks(part.reasoning, part.chunkSize ?? DEFAULT_CHUNK_SIZE)) {
        actions.push({ type: 'reasoning', delta });
      }
    } else if ('toolCall' in part && typeof part.toolCall === 'object' && part.toolCall !== null) {
      const call = part.toolCall;
      const index = toolIndex++;
      const id = call.id !== undefined && call.id !== '' ? call.id : `call_${callNumber}_${index}`;
      const input = call.rawArgs ?? JSON.stringify(call.args ?? {});
      textCharacters += input.length;
      actions.push({ type: 'tool-input-start', index, id, name: call.name });
      for (const delta of chunks(input, DEFAULT_CHUNK_SIZE))
        actions.push({ type: 'tool-input-delta', index, id, delta });
      actions.push({ type: 'tool-call', index, id, name: call.name, input });
    } else if ('delayMs' in part && typeof part.delayMs === 'number') {
      actions.push({ type: 'delay', ms: Math.max(0, part.delayMs) });
    } else if ('error' in part && typeof part.error === 'object' && part.error !== null) {
      actions.push({ type: 'error', error: part.error });
      break;
    } else if ('hang' in part && part.hang === true) {
      actions.push({ type: 'hang' });
      break;
    } else {
      throw new TypeError(`Invalid script part: ${describePart(part)}`);
    }
  }
  const finishReason = scriptStep.finishReason ?? (toolIndex > 0 ? 'tool-calls' : 'stop');
  return { actions, finishReason, outputCharacters: { text: textCharacters, reasoning: reasoningCharacters } };
}

function tokensFor(characters: number): number {
  return Math.ceil(characters / 4);
}

/**
 * Usage of a call: the step's overrides over defaults derived from the prompt's characters and the planned output
 * (4 characters per token, rounded up; tool-call arguments count as text output).
 */
export function computeUsage(scriptStep: ScriptStep, plan: StepPlan, promptCharacters: number): ScriptUsage {
  const override = scriptStep.usage ?? {};
  const defaultReasoning = tokensFor(plan.outputCharacters.reasoning);
  const defaultOutput = tokensFor(plan.outputCharacters.text) + defaultReasoning;
  const outputTokens = override.outputTokens ?? defaultOutput;
  const reasoningTokens = override.reasoningTokens ?? Math.min(defaultReasoning, outputTokens);
  return {
    inputTokens: override.inputTokens ?? tokensFor(promptCharacters),
    outputTokens,
    cacheReadTokens: override.cacheReadTokens ?? 0,
    cacheWriteTokens: override.cacheWriteTokens ?? 0,
    reasoningTokens,
  };
}

/** Maps a unified finish reason to the OpenAI wire value. */
export function toOpenAIFinishReason(reason: ScriptFinishReason): string {
  switch (reason) {
    case 'tool-calls':
      return 'tool_calls';
    case 'content-filter':
      return 'content_filter';
    default:
      return reason;
  }
}

function textLength(value: unknown): number {
  return typeof value === 'string' ? value.length : 0;
}

function jsonLength(value: unknown): number {
  if (typeof value === 'string') return value.length;
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0;
  }
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * Characters of an AI SDK prompt that count towards the default input usage: system text, text and reasoning parts,
 * tool-call arguments (as JSON) and tool results (as the OpenAI-compatible provider serializes them), so the same
 * conversation counts the same in the fake model and, as chat messages, on the scripted server.
 */
export function countPromptCharacters(prompt: readonly unknown[]): number {
  let total = 0;
  for (const message of prompt) {
    const record = asRecord(message);
    if (record === undefined) continue;
    if (typeof record.content === 'string') {
      total += record.content.length;
      continue;
    }
    if (!Array.isArray(record.content)) continue;
    for (const partValue of record.content) {
      const part = asRecord(partValue);
      if (part === undefined) continue;
      if (part.type === 'text' || part.type === 'reasoning') total += textLength(part.text);
      else if (part.type === 'tool-call') total += jsonLength(part.input);
      else if (part.type === 'tool-result') {
        const output = asRecord(part.output);
        if (output === undefined) continue;
        if (output.type === 'text' || output.type === 'error-text') total += textLength(output.value);
        else if (output.type === 'execution-denied')
          total += textLength(output.reason ?? 'Tool call execution denied.');
        else total += jsonLength(output.value);
      }
    }
  }
  return total;
}

/** Characters of OpenAI chat messages that count towards the default input usage (see `countPromptCharacters`). */
export function countChatMessagesCharacters(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let total = 0;
  for (const messageValue of messages) {
    const message = asRecord(messageValue);
    if (message === undefined) continue;
    if (typeof message.content === 'string') total += message.content.length;
    else if (Array.isArray(message.content)) {
      for (const partValue of message.content) {
        const part = asRecord(partValue);
        if (part?.type === 'text') total += textLength(part.text);
      }
    }
    total += textLength(message.reasoning_content);
    if (Array.isArray(message.tool_calls)) {
      for (const callValue of message.tool_calls) {
        total += textLength(asRecord(asRecord(callValue)?.function)?.arguments);
      }
    }
  }
  return total;
}

/** The OpenAI-style error a scripted failure produces. */
export interface DescribedError {
  /** Undefined for a network error. */
  status: number | undefined;
  message: string;
  type: string;
  code: string | null;
  /** Lowercase header names, as the AI SDK reports them. */
  headers: Record<string, string>;
  /** `{ error: { message, type, param, code } }` */
  envelope: { error: { message: string; type: string; param: null; code: string | null } };
}

const KIND_DEFAULTS: Record<ScriptedErrorKind, { status: number; message: string; type: string; code: string }> = {
  context_overflow: {
    status: 400,
    message:
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. " +
      'Please reduce the length of the messages.',
    type: 'invalid_request_error',
    code: 'context_length_exceeded',
  },
  content_policy: {
    status: 400,
    message:
      'Your request was rejected as a result of our safety system. Your prompt may contain text that is not ' +
      'allowed by our safety system.',
    type: 'invalid_request_error',
    code: 'content_policy_violation',
  },
  quota: {
    status: 429,
    message: 'You exceeded your current quota, please check your plan and billing details.',
    type: 'insufficient_quota',
    code: 'insufficient_quota',
  },
};

function statusDefaults(status: number, modelId: string): { message: string; type: string; code: string | null } {
  switch (status) {
    case 400:
      return { message: 'Invalid request.', type: 'invalid_request_error', code: null };
    case 401:
      return { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' };
    case 402:
      return { message: 'Payment required.', type: 'billing_error', code: 'payment_required' };
    case 403:
      return { message: 'You are not allowed to sample from this model.', type: 'permission_error', code: null };
    case 404:
      return {
        message: `The model \`${modelId}\` does not exist or you do not have access to it.`,
        type: 'invalid_request_error',
        code: 'model_not_found',
      };
    case 408:
      return { message: 'Request timed out.', type: 'timeout_error', code: null };
    case 413:
      return { message: 'Request too large.', type: 'invalid_request_error', code: 'request_too_large' };
    case 429:
      return { message: 'Rate limit reached for requests.', type: 'requests', code: 'rate_limit_exceeded' };
    case 500:
      return { message: 'The server had an error while processing your request.', type: 'server_error', code: null };
    case 502:
      return { message: 'Bad gateway.', type: 'server_error', code: null };
    case 503:
      return { message: 'The server is overloaded or not ready yet.', type: 'server_error', code: null };
    case 504:
      return { message: 'Gateway timeout.', type: 'server_error', code: null };
    case 529:
      return { message: 'Overloaded.', type: 'overloaded_error', code: null };
    default:
      return { message: `Scripted error with status ${status}.`, type: 'api_error', code: null };
  }
}

/** The message, type, code, headers and body a scripted failure stands for. */
export function describeScriptedError(error: ScriptedError, modelId: string): DescribedError {
  const kindDefaults = error.kind === undefined ? undefined : KIND_DEFAULTS[error.kind];
  const status = error.status ?? kindDefaults?.status;
  const headers: Record<string, string> = {};
  if (status !== undefined) headers['content-type'] = 'application/json';
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.retryAfterSeconds);
  if (status === undefined) {
    const message = error.message ?? 'read ECONNRESET';
    return {
      status,
      message,
      type: 'network_error',
      code: 'ECONNRESET',
      headers,
      envelope: { error: { message, type: 'network_error', param: null, code: 'ECONNRESET' } },
    };
  }
  const defaults = kindDefaults ?? statusDefaults(status, modelId);
  const message = error.message ?? defaults.message;
  return {
    status,
    message,
    type: defaults.type,
    code: defaults.code,
    headers,
    envelope: { error: { message, type: defaults.type, param: null, code: defaults.code } },
  };
}

/** The AI SDK's default: 408, 409, 429 and 5xx are retryable. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Where an error came from, as an `APICallError` reports it. */
export interface ErrorContext {
  url: string;
  requestBodyValues: unknown;
  modelId: string;
}

function networkCause(message: string): Error {
  return Object.assign(new Error(message), { code: 'ECONNRESET', errno: -104, syscall: 'read' });
}

/**
 * The error a real AI SDK provider throws for this failure before any output: an `APICallError` with status,
 * lowercase headers (`retry-after`), the OpenAI error envelope as body and `isRetryable` per status. Without a status
 * it mirrors what `@ai-sdk/provider-utils` makes of undici's `TypeError('fetch failed')`: an `APICallError` without
 * status, `isRetryable: true`, "Cannot connect to API: …", whose `cause` is an Error with `code: 'ECONNRESET'`.
 */
export function createScriptedApiError(error: ScriptedError, context: ErrorContext): APICallError {
  const described = describeScriptedError(error, context.modelId);
  if (described.status === undefined) {
    const cause = networkCause(described.message);
    return new APICallError({
      message: `Cannot connect to API: ${cause.message}`,
      url: context.url,
      requestBodyValues: context.requestBodyValues,
      cause,
      isRetryable: true,
    });
  }
  return new APICallError({
    message: described.message,
    url: context.url,
    requestBodyValues: context.requestBodyValues,
    statusCode: described.status,
    responseHeaders: described.headers,
    responseBody: JSON.stringify(described.envelope),
    data: described.envelope,
    isRetryable: isRetryableStatus(described.status),
  });
}

/**
 * The error a real provider's stream raises when the connection is cut mid-response: undici errors the body with
 * `TypeError('terminated')` caused by a `SocketError` with `code: 'UND_ERR_SOCKET'`, and `@ai-sdk/provider-utils`
 * wraps that in an `APICallError` "Failed to process successful response" with the response's status (200) and
 * headers, `isRetryable: true`.
 */
export function createStreamCutError(context: ErrorContext): APICallError {
  const socketError = Object.assign(new Error('other side closed'), { name: 'SocketError', code: 'UND_ERR_SOCKET' });
  return new APICallError({
    message: 'Failed to process successful response',
    url: context.url,
    requestBodyValues: context.requestBodyValues,
    statusCode: 200,
    responseHeaders: { 'content-type': 'text/event-stream' },
    cause: new TypeError('terminated', { cause: socketError }),
    isRetryable: true,
  });
}

/** A non-retryable 400 `APICallError` for failures of the test setup itself (exhausted script, broken rules). */
export function createScriptSetupError(message: string, code: string, context: ErrorContext): APICallError {
  const envelope = { error: { message, type: 'invalid_request_error', param: null, code } };
  return new APICallError({
    message,
    url: context.url,
    requestBodyValues: context.requestBodyValues,
    statusCode: 400,
    responseHeaders: { 'content-type': 'application/json' },
    responseBody: JSON.stringify(envelope),
    data: envelope,
    isRetryable: false,
  });
}

/** A queue of steps with the exhaustion behaviour of spec/core.md §22.2. */
export class ScriptQueue {
  readonly #steps: ScriptStep[];
  readonly #onExhausted: ExhaustedBehavior;
  #lastStep: ScriptStep | undefined;
  #consumed = 0;

  constructor(script: ModelScript, onExhausted: ExhaustedBehavior = 'error') {
    this.#steps = [...script];
    this.#onExhausted = onExhausted;
  }

  /** Steps not yet consumed. */
  get remaining(): number {
    return this.#steps.length;
  }

  /** Steps consumed so far (repeats of the last step included). */
  get consumed(): number {
    return this.#consumed;
  }

  push(...steps: ScriptStep[]): void {
    this.#steps.push(...steps);
  }

  /** The next step, or undefined when the script is exhausted and nothing may be repeated. */
  take(): ScriptStep | undefined {
    const next = this.#steps.shift();
    if (next !== undefined) {
      this.#lastStep = next;
      this.#consumed++;
      return next;
    }
    if (this.#onExhausted === 'repeat_last' && this.#lastStep !== undefined) {
      this.#consumed++;
      return this.#lastStep;
    }
    return undefined;
  }
}

/** The message of the error raised when a call finds no step left. */
export function exhaustedMessage(label: string, consumed: number, callNumber: number): string {
  const history =
    consumed === 0
      ? 'its script was empty'
      : consumed === 1
        ? 'its only step was consumed by call 1'
        : `all ${consumed} steps were consumed by earlier calls`;
  return `Scripted model ${label} has no step left for call ${callNumber}: ${history}. Push more steps or use onExhausted: 'repeat_last'.`;
}

/** Abort reason of a signal, with the DOM default when none was given. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
}

/** A promise that rejects with the signal's reason once it aborts; never settles without a signal. */
export function waitForAbort(signal: AbortSignal | undefined): Promise<never> {
  return new Promise<never>((_resolve, reject) => {
    if (signal === undefined) return;
    if (signal.aborted) {
      reject(abortReason(signal));
      return;
    }
    signal.addEventListener('abort', () => reject(abortReason(signal)), { once: true });
  });
}

/** Something with an abortable sleep (a `Clock`). */
export interface Sleeper {
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * Walks the planned actions, waiting out delays and hangs, and yields only output and error actions. Throws the
 * signal's reason when the signal aborts (checked before every action and during every wait).
 */
export async function* runActions(
  actions: readonly PlannedAction[],
  signal: AbortSignal | undefined,
  sleeper: Sleeper,
): AsyncGenerator<OutputAction | Extract<PlannedAction, { type: 'error' }>, void, undefined> {
  for (const action of actions) {
    if (signal?.aborted) throw abortReason(signal);
    if (action.type === 'delay') {
      await sleeper.sleep(action.ms, signal);
    } else if (action.type === 'hang') {
      await waitForAbort(signal);
    } else {
      yield action;
      if (action.type === 'error') return;
    }
  }
  if (signal?.aborted) throw abortReason(signal);
}
