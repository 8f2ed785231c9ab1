const RPC_ERROR_BRAND = Symbol.for('@hermes/protocol-tui/RpcError');

/**
 * An error that crosses the wire as a JSON-RPC error object. Brand-checked with `Symbol.for`, because
 * `instanceof` fails when two copies of this package are loaded.
 */
export class RpcError extends Error {
  /** The JSON-RPC error code (spec §10). */
  readonly code: number;
  /** Optional structured data sent as `error.data`. */
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.data = data;
    Object.defineProperty(this, RPC_ERROR_BRAND, { value: true });
  }

  /** True for any `RpcError`, whichever copy of the package created it. */
  static isInstance(value: unknown): value is RpcError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[RPC_ERROR_BRAND] === true;
  }

  /** The JSON-RPC `error` object. */
  toJSON(): { code: number; message: string; data?: unknown } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}
