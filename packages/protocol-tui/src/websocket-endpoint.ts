import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Gateway } from './gateway.js';
import { CloseCode, createWebSocketTransport } from './wire/index.js';

/** Options of {@link attachGatewayWebSocket}. */
export interface GatewayWebSocketOptions {
  gateway: Gateway;
  /** The server token (§1.3): at least 128 bits of randomness. */
  token: string;
  /** Upgrade path; default `/api/ws`. */
  path?: string;
  /**
   * The host name or address the server is bound to. Decides the allowed host set and whether the
   * peer must be loopback. Default: read from `server.address()` at upgrade time.
   */
  boundHost?: string;
  /**
   * Liveness: every socket is pinged this often, and one that has not answered the previous ping is terminated, so
   * a peer that vanished without a close does not hold its connection and sessions for good. Default 30 s; 0 off.
   */
  pingIntervalMs?: number;
}

/** A generated server token: 32 random bytes, base64url (256 bits). */
export function generateGatewayToken(): string {
  return randomBytes(32).toString('base64url');
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost', '::ffff:127.0.0.1']);

/** True for loopback host names and addresses. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return LOOPBACK.has(bare) || bare.startsWith('127.');
}

/** Compares two secrets in constant time: both are hashed to a fixed length first (§1.3). */
export function tokensEqual(given: string, expected: string): boolean {
  const left = createHash('sha256').update(given).digest();
  const right = createHash('sha256').update(expected).digest();
  return timingSafeEqual(left, right);
}

function hostName(value: string): string {
  const trimmed = value.trim().toLowerCase();
  if (trimmed.startsWith('[')) return trimmed.slice(1, trimmed.indexOf(']'));
  const colon = trimmed.lastIndexOf(':');
  return colon > -1 && trimmed.indexOf(':') === colon ? trimmed.slice(0, colon) : trimmed;
}

/** Runs the admission checks of §1.3 in order; returns the close code, or null when admitted. */
export function admit(request: IncomingMessage, boundHost: string, token: string): number | null {
  const bound = hostName(boundHost);
  const loopbackBind = isLoopbackHost(bound);
  const allowed = new Set([bound]);
  if (loopbackBind) for (const name of ['localhost', '127.0.0.1', '::1']) allowed.add(name);
  const remote = request.socket.remoteAddress ?? '';
  if (loopbackBind && !isLoopbackHost(remote)) return CloseCode.forbidden;
  const hostHeader = request.headers.host;
  if (!hostHeader || !allowed.has(hostName(hostHeader))) return CloseCode.forbidden;
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== 'null') {
    let parsed: URL | null = null;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = null;
    }
    if (
      parsed &&
      (parsed.protocol === 'http:' || parsed.protocol === 'https:') &&
      !allowed.has(hostName(parsed.hostname))
    )
      return CloseCode.forbidden;
  }
  const url = new URL(request.url ?? '/', 'http://placeholder');
  const given = url.searchParams.get('token');
  if (given === null || !tokensEqual(given, token)) return CloseCode.unauthorized;
  return null;
}

/**
 * Mounts the gateway's WebSocket endpoint on any Node `http.Server`: upgrades on `/api/ws`, runs the
 * admission checks (refusals complete the upgrade, send nothing and close with 4401 or 4403), then
 * hands the socket to the gateway. Returns a function that detaches the endpoint.
 */
export function attachGatewayWebSocket(server: Server, options: GatewayWebSocketOptions): () => void {
  const path = options.path ?? '/api/ws';
  // A message over the cap closes the socket with 1009 as its header arrives: its payload is never buffered or parsed.
  const maxFrameBytes = options.gateway.maxFrameBytes;
  const sockets = new WebSocketServer({ noServer: true, maxPayload: maxFrameBytes });
  const answered = new WeakMap<WebSocket, boolean>();
  const pingIntervalMs = options.pingIntervalMs ?? 30_000;
  const pinger =
    pingIntervalMs > 0
      ? setInterval(() => {
          for (const client of sockets.clients) {
            if (answered.get(client) === false) {
              client.terminate();
              continue;
            }
            answered.set(client, false);
            try {
              client.ping();
            } catch {
              // A socket closing right now; its close runs the detach.
            }
          }
        }, pingIntervalMs)
      : undefined;
  pinger?.unref?.();
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(request.url ?? '/', 'http://placeholder');
    if (url.pathname !== path) return;
    const address = server.address();
    const boundHost = options.boundHost ?? (typeof address === 'object' && address ? address.address : '127.0.0.1');
    const refusal = admit(request, boundHost, options.token);
    sockets.handleUpgrade(request, socket, head, (webSocket) => {
      answered.set(webSocket, true);
      webSocket.on('pong', () => answered.set(webSocket, true));
      if (refusal !== null) {
        webSocket.close(refusal, refusal === CloseCode.unauthorized ? 'unauthorized' : 'forbidden');
        return;
      }
      (request.socket as { setNoDelay?: (value: boolean) => void }).setNoDelay?.(true);
      options.gateway.connect(
        createWebSocketTransport(webSocket, { underlying: socket, maxMessageBytes: maxFrameBytes }),
      );
    });
  };
  server.on('upgrade', onUpgrade);
  return () => {
    if (pinger !== undefined) clearInterval(pinger);
    server.off('upgrade', onUpgrade);
    for (const client of sockets.clients) client.terminate();
    sockets.close();
  };
}
