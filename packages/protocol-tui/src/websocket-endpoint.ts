import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { pingSockets } from '@hermes/core';
import { WebSocketServer } from 'ws';
import type { Gateway } from './gateway.js';
import type { GatewayTicketStore } from './gateway-tickets.js';
import {
  CloseCode,
  createWebSocketTransport,
  GATEWAY_SUBPROTOCOL,
  GATEWAY_TICKET_PROTOCOL_PREFIX,
} from './wire/index.js';

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
   * Further host names the server is reached by (a public name behind a proxy, say): a `Host` or `Origin`
   * naming one of them is admitted as the bound address is. Default: none.
   */
  allowedHosts?: readonly string[];
  /** Where tickets presented in `Sec-WebSocket-Protocol` are redeemed; without it only the token admits. */
  tickets?: GatewayTicketStore;
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

/**
 * The token a client presented: the `token` query parameter (§1.3; browsers can set no header on a WebSocket), or
 * else an `Authorization: Bearer …` header, which keeps the token out of URLs and so out of proxies' access logs.
 */
function presentedToken(request: IncomingMessage): string | null {
  const url = new URL(request.url ?? '/', 'http://placeholder');
  const fromQuery = url.searchParams.get('token');
  if (fromQuery !== null) return fromQuery;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match ? (match[1] as string) : null;
}

/**
 * Runs the admission checks of §1.3 in order; returns the close code, or null when admitted. `allowedHosts` adds
 * host names to the bound address's set (a proxy forwarding its public `Host`).
 */
export function admit(
  request: IncomingMessage,
  boundHost: string,
  token: string,
  allowedHosts: readonly string[] = [],
  tickets?: GatewayTicketStore,
): number | null {
  const bound = hostName(boundHost);
  const loopbackBind = isLoopbackHost(bound);
  const allowed = new Set([bound, ...allowedHosts.map(hostName)]);
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
  const ticket = presentedTicket(request);
  if (ticket !== null) return tickets?.redeem(ticket) ? null : CloseCode.unauthorized;
  const given = presentedToken(request);
  if (given === null || !tokensEqual(given, token)) return CloseCode.unauthorized;
  return null;
}

/** The ticket a browser offered as `hermes-gateway-ticket.<ticket>` beside `hermes-gateway-v1` (§1.3), if any. */
function presentedTicket(request: IncomingMessage): string | null {
  const offered = (request.headers['sec-websocket-protocol'] ?? '').split(',').map((entry) => entry.trim());
  if (!offered.includes(GATEWAY_SUBPROTOCOL)) return null;
  const entry = offered.find((value) => value.startsWith(GATEWAY_TICKET_PROTOCOL_PREFIX));
  return entry === undefined ? null : entry.slice(GATEWAY_TICKET_PROTOCOL_PREFIX.length);
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
  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: maxFrameBytes,
    // With a ticket, echo the protocol name, never the ticket entry; otherwise `ws`'s default (the first offered).
    handleProtocols: (protocols) =>
      protocols.has(GATEWAY_SUBPROTOCOL) ? GATEWAY_SUBPROTOCOL : (protocols.values().next().value ?? false),
  });
  const stopPinging = pingSockets(sockets, options.pingIntervalMs ?? 30_000);
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(request.url ?? '/', 'http://placeholder');
    if (url.pathname !== path) return;
    const address = server.address();
    const boundHost = options.boundHost ?? (typeof address === 'object' && address ? address.address : '127.0.0.1');
    const refusal = admit(request, boundHost, options.token, options.allowedHosts, options.tickets);
    sockets.handleUpgrade(request, socket, head, (webSocket) => {
      if (refusal !== null) {
        webSocket.close(refusal, refusal === CloseCode.unauthorized ? 'unauthorized' : 'forbidden');
        return;
      }
      (request.socket as { setNoDelay?: (value: boolean) => void }).setNoDelay?.(true);
      options.gateway.connect(
        createWebSocketTransport(webSocket, {
          underlying: socket,
          maxMessageBytes: maxFrameBytes,
          writeTextMessages: (texts) => {
            // Only while `ws` writes its own frames straight to this socket as well (open, no permessage-deflate,
            // whose sender queues): written now, the batch keeps its place among them.
            if (webSocket.readyState !== webSocket.OPEN || webSocket.extensions !== '') return false;
            socket.write(textMessages(texts));
            return true;
          },
        }),
      );
    });
  };
  server.on('upgrade', onUpgrade);
  return () => {
    stopPinging();
    server.off('upgrade', onUpgrade);
    for (const client of sockets.clients) client.terminate();
    sockets.close();
  };
}

/**
 * WebSocket text messages from server to client (RFC 6455 §5.2: FIN set, opcode 1, no mask), back to back in one
 * buffer: the bytes `ws` writes for each of them on its own.
 */
export function textMessages(texts: readonly string[]): Buffer {
  const lengths = new Array<number>(texts.length);
  let total = 0;
  for (let index = 0; index < texts.length; index += 1) {
    const length = Buffer.byteLength(texts[index] as string);
    lengths[index] = length;
    total += length + (length < 126 ? 2 : length < 65_536 ? 4 : 10);
  }
  const out = Buffer.allocUnsafe(total);
  let offset = 0;
  for (let index = 0; index < texts.length; index += 1) {
    const length = lengths[index] as number;
    out[offset] = 0x81;
    if (length < 126) {
      out[offset + 1] = length;
      offset += 2;
    } else if (length < 65_536) {
      out[offset + 1] = 126;
      out.writeUInt16BE(length, offset + 2);
      offset += 4;
    } else {
      out[offset + 1] = 127;
      out.writeBigUInt64BE(BigInt(length), offset + 2);
      offset += 10;
    }
    offset += out.write(texts[index] as string, offset, length, 'utf8');
  }
  return out;
}
