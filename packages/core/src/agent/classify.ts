import { APICallError } from '@ai-sdk/provider';
import type { FailoverReason } from '../events.js';

/** A provider failure, classified (spec/core.md §7.6). */
export interface ClassifiedError {
  reason: FailoverReason;
  retryable: boolean;
  /** Move to the next fallback route at once instead of retrying. */
  fallbackAtOnce: boolean;
  /** Recover by forced compression, then run the same iteration again. */
  compress: boolean;
  status?: number;
  message: string;
  /** Delay asked for by a `Retry-After` header, in ms, uncapped. */
  retryAfterMs?: number;
}

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

const CONTEXT_PHRASES =
  /context[ _-]?length|context window|maximum context|too many tokens|prompt is too long|context_length_exceeded|reduce the length/i;
const QUOTA_PHRASES = /insufficient[_ ]quota|exceeded your current quota|billing|credit balance/i;

/** Marks an error raised by the core itself for a stream that went silent. */
export class StreamIdleTimeoutError extends Error {
  constructor(seconds: number) {
    super(`The model stream was silent for ${seconds} s.`);
    this.name = 'StreamIdleTimeoutError';
  }
}

/** Marks a step that produced neither text nor tool calls. */
export class EmptyResponseError extends Error {
  constructor() {
    super('The model returned an empty response.');
    this.name = 'EmptyResponseError';
  }
}

function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Parses a `Retry-After` header (seconds or an HTTP date) into milliseconds. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function headerValue(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

function classifyStatus(status: number, body: string): FailoverReason {
  if ((status === 400 || status === 413) && CONTEXT_PHRASES.test(body)) return 'context_overflow';
  if (status === 413) return 'payload_too_large';
  if (status === 402 || QUOTA_PHRASES.test(body)) return 'billing';
  if (status === 429) return 'rate_limit';
  if (status === 401 || status === 403) return 'auth';
  if (status === 404) return 'model_not_found';
  if (status === 408) return 'timeout';
  if (status === 503 || status === 529) return 'overloaded';
  if (status === 500 || status === 502 || status === 504 || status >= 500) return 'server_error';
  if (/content[_ ]policy|content[_ ]filter|safety/i.test(body)) return 'content_policy';
  if (status >= 400) return 'format_error';
  return 'unknown';
}

const RETRYABLE: ReadonlySet<FailoverReason> = new Set([
  'rate_limit',
  'overloaded',
  'server_error',
  'timeout',
  'network',
  'empty_response',
  'unknown',
]);

/**
 * Classifies a provider error from the SDK's API-call error (status, headers, body) and Node's
 * network error codes. Message text is consulted only for the context-length and quota phrases.
 */
export function classifyProviderError(error: unknown, now: number): ClassifiedError {
  const message = error instanceof Error ? error.message : String(error);
  let reason: FailoverReason;
  let status: number | undefined;
  let retryAfterMs: number | undefined;
  if (error instanceof StreamIdleTimeoutError) reason = 'timeout';
  else if (error instanceof EmptyResponseError) reason = 'empty_response';
  else if (APICallError.isInstance(error)) {
    status = error.statusCode;
    const body = `${error.responseBody ?? ''} ${status === undefined ? '' : message}`;
    // A stream cut after a 200 arrives as an API-call error with that status: the cause chain tells.
    if (status === undefined || status < 400) reason = networkCode(error) || error.isRetryable ? 'network' : 'unknown';
    else reason = classifyStatus(status, body);
    retryAfterMs = parseRetryAfter(headerValue(error.responseHeaders, 'retry-after'), now);
  } else if (networkCode(error) || (error instanceof TypeError && /fetch failed|terminated|network/i.test(message))) {
    reason = 'network';
  } else if (CONTEXT_PHRASES.test(message)) {
    reason = 'context_overflow';
  } else {
    reason = 'unknown';
  }
  const retryable = RETRYABLE.has(reason);
  const compress = reason === 'context_overflow' || reason === 'payload_too_large';
  const result: ClassifiedError = { reason, retryable, fallbackAtOnce: !retryable && !compress, compress, message };
  if (status !== undefined) result.status = status;
  if (retryAfterMs !== undefined) result.retryAfterMs = retryAfterMs;
  return result;
}

/**
 * Decorrelated-jitter backoff (spec/core.md §7.6): the first delay is random in [1 s, 3 s]; each
 * next one is random between 1 s and three times the previous, capped at 30 s. A Retry-After
 * replaces the computed delay, capped at 60 s.
 */
export function nextBackoff(
  previousMs: number | null,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, 60_000);
  if (previousMs === null) return 1000 + random() * 2000;
  return Math.min(30_000, 1000 + random() * (previousMs * 3 - 1000));
}
