import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

/** Error types of the envelope (spec §5.1). */
export type ApiErrorType = 'invalid_request_error' | 'gateway_auth_error' | 'rate_limit_error' | 'server_error';

function typeForStatus(status: number): ApiErrorType {
  if (status === 401) return 'gateway_auth_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

const API_ERROR_MARKER = Symbol.for('hermes.protocol-openai.ApiError');

/** An HTTP failure answered with the OpenAI error envelope; thrown by handlers and caught by the app. */
export class ApiError extends Error {
  readonly [API_ERROR_MARKER] = true;
  readonly status: ContentfulStatusCode;
  readonly code: string;
  readonly param: string | null;
  readonly type: ApiErrorType;
  readonly headers: Record<string, string>;
  readonly hermes: Record<string, unknown> | undefined;

  constructor(
    status: ContentfulStatusCode,
    code: string,
    message: string,
    options: { param?: string | null; headers?: Record<string, string>; hermes?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.param = options.param ?? null;
    this.type = typeForStatus(status);
    this.hermes = options.hermes;
    // Retrying a 5xx or a 409 would re-run an agent turn or repeat a definitive conflict (spec §5.2).
    // A 503 `store_unavailable` started nothing (the store refused before the turn began), so it is as safe to retry as
    // a drain.
    const noRetry = (status >= 500 && code !== 'gateway_draining' && code !== 'store_unavailable') || status === 409;
    this.headers = { ...(noRetry ? { 'x-should-retry': 'false' } : {}), ...(options.headers ?? {}) };
  }

  /** Brand check that survives duplicated package copies. */
  static isInstance(value: unknown): value is ApiError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[API_ERROR_MARKER] === true;
  }

  /** The envelope body. */
  body(): { error: Record<string, unknown> } {
    return {
      error: {
        message: this.message,
        type: this.type,
        param: this.param,
        code: this.code,
        ...(this.hermes ? { hermes: this.hermes } : {}),
      },
    };
  }
}

/** Writes an ApiError as a JSON answer. */
export function errorResponse(context: Context, error: ApiError): Response {
  for (const [name, value] of Object.entries(error.headers)) context.header(name, value);
  context.header('Cache-Control', 'no-store');
  return context.json(error.body(), error.status);
}

/** A 400 for a field with a wrong type or value. */
export function invalidField(param: string, message: string): ApiError {
  return new ApiError(400, 'invalid_field', message, { param });
}

/** Seconds a client waits before retrying while the session store is unreachable (a database restart). */
export const STORE_RETRY_AFTER_SECONDS = 5;

/**
 * The 503 for a request the session store could not serve because it is unreachable (core's HermesError
 * `store_unavailable`): retryable, with Retry-After, so a client or balancer tries again instead of giving up on a 500.
 */
export function storeUnavailable(): ApiError {
  return new ApiError(503, 'store_unavailable', 'The session store is unreachable; try again shortly.', {
    headers: { 'Retry-After': String(STORE_RETRY_AFTER_SECONDS) },
  });
}
