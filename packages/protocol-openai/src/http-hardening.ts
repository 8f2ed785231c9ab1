import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { AgentHost } from '@hermes/core';
import { ApiError } from './http-error.js';
import { SECURITY_HEADERS } from './pipeline.js';

/**
 * How long a connection may keep the server waiting (`api_server` settings, in seconds in the file). None of them
 * limits a response: a turn may stream for hours (spec §0.1).
 */
export interface HttpTimeouts {
  /** Longest wait for a request's headers (`headers_timeout_s`, default 20). */
  headersTimeoutMs: number;
  /** Longest wait for a whole request, body included (`request_timeout_s`, default 60). */
  requestTimeoutMs: number;
  /** How long a kept-alive connection may wait for its next request (`keep_alive_timeout_s`, default 5). */
  keepAliveTimeoutMs: number;
  /** A connection with no request in flight that sends nothing this long is closed (`idle_timeout_s`, default 60). */
  idleTimeoutMs: number;
  /** An upgrade request that no WebSocket completed within this long is closed (`upgrade_timeout_s`, default 10). */
  upgradeTimeoutMs: number;
  /**
   * WebSocket liveness (`ws_ping_interval_s`, default 30): a ping this often, and a socket that has not answered the
   * previous one is closed. 0 turns pings off.
   */
  pingIntervalMs: number;
}

/** The defaults of {@link HttpTimeouts}. */
export const DEFAULT_HTTP_TIMEOUTS: Readonly<HttpTimeouts> = {
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 60_000,
  upgradeTimeoutMs: 10_000,
  pingIntervalMs: 30_000,
};

const KEYS: Record<keyof HttpTimeouts, string> = {
  headersTimeoutMs: 'headers_timeout_s',
  requestTimeoutMs: 'request_timeout_s',
  keepAliveTimeoutMs: 'keep_alive_timeout_s',
  idleTimeoutMs: 'idle_timeout_s',
  upgradeTimeoutMs: 'upgrade_timeout_s',
  pingIntervalMs: 'ws_ping_interval_s',
};

/** Reads the timeouts from the host's `api_server` section (seconds, fractions allowed); a bad value keeps the default. */
export function resolveHttpTimeouts(
  host: Pick<AgentHost, 'configSection'>,
  overrides: Partial<HttpTimeouts> = {},
): HttpTimeouts {
  const section = (host.configSection('api_server') ?? {}) as Record<string, unknown>;
  const resolved = { ...DEFAULT_HTTP_TIMEOUTS };
  for (const [field, key] of Object.entries(KEYS) as [keyof HttpTimeouts, string][]) {
    const value = section[key];
    const seconds = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
    // Zero would switch a guard off; only the ping may be switched off.
    const allowed = field === 'pingIntervalMs' ? seconds >= 0 : seconds > 0;
    if (Number.isFinite(seconds) && allowed) resolved[field] = Math.round(seconds * 1000);
  }
  const merged = { ...resolved, ...overrides };
  // Node refuses a headers timeout longer than the request timeout.
  merged.headersTimeoutMs = Math.min(merged.headersTimeoutMs, merged.requestTimeoutMs);
  return merged;
}

/**
 * The options of `http.createServer` that carry the timeouts. Node checks the header and request timeouts on an
 * interval (30 s by default, which would let a 1 s timeout run 30 s); it is a quarter of the shorter one here.
 */
export function httpServerOptions(timeouts: HttpTimeouts): ServerOptions {
  return {
    headersTimeout: timeouts.headersTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(
      100,
      Math.min(30_000, Math.floor(Math.min(timeouts.headersTimeoutMs, timeouts.requestTimeoutMs) / 4)),
    ),
  };
}

/**
 * Hardens a Node HTTP server that serves the app: the JSON error envelope for every request Node's parser rejects
 * ({@link handleClientError}), and the idle timeout: a connection that has no request in flight and sends nothing for
 * `idleTimeoutMs` is destroyed, and one that never sent a byte is destroyed without an answer whichever timeout
 * meets it first. A
 * response in flight is never cut, however long it takes. Pass the header, request and keep-alive timeouts to
 * `createServer` with {@link httpServerOptions}; they are applied here too, for a server created without them.
 */
export function hardenHttpServer(server: Server, timeouts: HttpTimeouts): void {
  server.headersTimeout = timeouts.headersTimeoutMs;
  server.requestTimeout = timeouts.requestTimeoutMs;
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
  const inFlight = new WeakMap<object, number>();
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    response.once('close', () => inFlight.set(socket, (inFlight.get(socket) ?? 1) - 1));
  });
  server.setTimeout(timeouts.idleTimeoutMs);
  // With a listener here Node leaves the decision to it instead of destroying every socket that times out.
  server.on('timeout', (socket: Socket) => {
    if ((inFlight.get(socket) ?? 0) === 0) socket.destroy();
  });
  server.on('clientError', handleClientError);
}

/**
 * Answers an upgrade request with an HTTP error in the JSON envelope, then destroys the socket: a socket left open
 * after an unanswered upgrade holds a file descriptor until the process runs out.
 */
export function refuseUpgrade(socket: Duplex, failure: ApiError): void {
  const body = JSON.stringify(failure.body());
  const lines = [
    `HTTP/1.1 ${failure.status} ${STATUS_TEXT[failure.status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Cache-Control: no-store',
    'Connection: close',
    ...Object.entries(failure.headers).map(([name, value]) => `${name}: ${value}`),
    ...Object.entries(SECURITY_HEADERS).map(([name, value]) => `${name}: ${value}`),
  ];
  answerAndDestroy(socket, `${lines.join('\r\n')}\r\n\r\n${body}`);
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  431: 'Request Header Fields Too Large',
  503: 'Service Unavailable',
};

/** Writes the answer and destroys the socket once it is written (or at once if it cannot be). */
function answerAndDestroy(socket: Duplex, text: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // `end` alone would wait for the client's FIN on a half-open server socket; a client that never sends one keeps
  // the descriptor. A client that stops reading cannot hold it either: the answer is small.
  const timer = setTimeout(() => socket.destroy(), 5000);
  timer.unref?.();
  socket.end(text, () => {
    clearTimeout(timer);
    socket.destroy();
  });
}

/**
 * A Node `clientError` listener for the HTTP server (spec §6.1): Node's parser rejects a bad `Content-Length`, an
 * oversized header block or a request that took too long before the application runs, so this writes the JSON
 * answer, with the security headers, and closes the connection.
 */
export function handleClientError(error: Error & { code?: string }, socket: Duplex): void {
  // A response already under way on this socket must not get a second one in its middle (Node's own check, on the
  // socket's current response).
  const current = (socket as { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (!socket.writable || error.code === 'ECONNRESET' || current?.headersSent === true) {
    socket.destroy();
    return;
  }
  // Node's header timer also runs on a connection that never sent a byte (it starts when the connection opens), so a
  // silent connection can meet it before the idle timeout: it sent no request, so it gets no answer either way.
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && (socket as { bytesRead?: number }).bytesRead === 0) {
    socket.destroy();
    return;
  }
  refuseUpgrade(socket, clientErrorFailure(error.code));
}

function clientErrorFailure(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return new ApiError(400, 'invalid_content_length', 'Content-Length must be a non-negative integer.', {
        param: 'Content-Length',
      });
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(408, 'request_timeout', 'The request took too long to arrive.');
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(431, 'headers_too_large', 'The request headers are too large.');
    default:
      return new ApiError(400, 'invalid_json', 'Malformed HTTP request.');
  }
}
