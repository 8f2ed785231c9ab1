const HERMES_ERROR = Symbol.for('hermes.error');

/** Codes of {@link HermesError} thrown by the core's API (spec/core.md §5.7), plus internal ones. */
export type HermesErrorCode =
  | 'session_busy'
  | 'session_closed'
  | 'session_not_found'
  | 'invalid_input'
  | 'invalid_model_spec'
  | 'unknown_provider'
  | 'missing_credentials'
  | 'title_taken'
  | 'config_invalid'
  | 'store_locked'
  | 'fts_unavailable'
  | 'not_supported'
  | 'schema_too_new'
  | 'lease_timeout'
  | 'missing_dependency'
  | (string & {});

/**
 * A local failure inside the process, with a string `code`. Brand-checked with a `Symbol.for`
 * marker because `instanceof` fails across duplicated package copies.
 */
export class HermesError extends Error {
  readonly code: HermesErrorCode;
  readonly details: Record<string, unknown> | undefined;
  readonly [HERMES_ERROR] = true;

  constructor(
    code: HermesErrorCode,
    message: string,
    options?: { details?: Record<string, unknown>; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HermesError';
    this.code = code;
    this.details = options?.details;
  }

  /** True for any HermesError, whichever copy of the package created it. */
  static isInstance(value: unknown): value is HermesError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[HERMES_ERROR] === true;
  }
}
