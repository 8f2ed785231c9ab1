import { RpcError } from '@hermes/protocol-tui/wire/framing';

export { RpcError };

const CLIENT_ERROR_BRAND = Symbol.for('@hermes/client-sdk/ClientError');

/** Why a client-side operation failed without the server answering it. */
export type ClientErrorCode =
  /** No answer arrived within the request's timeout. */
  | 'request_timeout'
  /** The caller's `AbortSignal` fired. */
  | 'aborted'
  /** The connection ended before the answer arrived. */
  | 'connection_closed'
  /** The client was closed, or could not (re)connect. */
  | 'not_connected'
  /** The gateway could not be reached: the connection was refused (`ECONNREFUSED`) or the command did not start. */
  | 'connection_refused'
  /** The gateway refused the credentials: the token was rejected (close 4401) or the client is forbidden (4403). */
  | 'unauthorized'
  /** The server sent something the protocol does not allow. */
  | 'protocol_error';

/**
 * A local failure of the SDK (string `code`), as opposed to an {@link RpcError} sent by the server.
 * Brand-checked with `Symbol.for`, because `instanceof` fails across duplicated package copies.
 */
export class ClientError extends Error {
  /** What went wrong. */
  readonly code: ClientErrorCode;

  /** Creates a client error; `cause` keeps the underlying failure when there is one. */
  constructor(code: ClientErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ClientError';
    this.code = code;
    Object.defineProperty(this, CLIENT_ERROR_BRAND, { value: true });
  }

  /** True for any `ClientError`, whichever copy of the package created it. */
  static isInstance(value: unknown): value is ClientError {
    return (
      typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[CLIENT_ERROR_BRAND] === true
    );
  }
}
