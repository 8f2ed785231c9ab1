import {
  createWebSocketTransport,
  GATEWAY_SUBPROTOCOL,
  GATEWAY_TICKET_PROTOCOL_PREFIX,
  type WebSocketLike,
} from '@hermes/protocol-tui/wire/framing';
import { ClientError } from '../errors.js';
import type { OpenedConnection } from './opened-connection.js';

/**
 * Attach to a gateway WebSocket endpoint from a browser or webview (`wss://host/api/ws`). A browser can set no header
 * on a WebSocket, so before every (re)connect the client gets a single-use ticket and offers it in
 * `Sec-WebSocket-Protocol`; the API key itself never goes into a URL.
 */
export interface BrowserConnectionOptions {
  /** The endpoint URL, `ws://` or `wss://`. */
  url: string;
  /** The API key: traded for a ticket with `POST {ticketUrl}` (`Authorization: Bearer`) before every (re)connect. */
  apiKey?: string;
  /** Supplies a ticket instead of `apiKey` (a host whose own backend mints them); called before every (re)connect. */
  ticket?: () => Promise<string> | string;
  /** Where tickets are minted; default `/api/ws/ticket` at the endpoint's host (`http:` for `ws:`, `https:` for `wss:`). */
  ticketUrl?: string;
  /** Replaces the global `fetch` for the ticket call. */
  fetch?: typeof fetch;
}

/** The default ticket URL of a gateway endpoint: same host, HTTP scheme, `/api/ws/ticket`. */
export function defaultTicketUrl(endpoint: string): string {
  const url = new URL('/api/ws/ticket', endpoint);
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  return url.toString();
}

async function obtainTicket(options: BrowserConnectionOptions): Promise<string | undefined> {
  if (options.ticket) return options.ticket();
  if (options.apiKey === undefined) return undefined;
  const target = options.ticketUrl ?? defaultTicketUrl(options.url);
  let response: Response;
  try {
    // Called through globalThis: a bare `fetch` taken off window and called unbound throws "Illegal invocation".
    response = await (options.fetch ?? ((input, init) => globalThis.fetch(input, init)))(target, {
      method: 'POST',
      headers: { authorization: `Bearer ${options.apiKey}` },
    });
  } catch (error) {
    // Unreachable server: a lost connection, which the reconnect loop retries.
    throw new ClientError('connection_closed', `could not reach ${target} for a gateway ticket`, { cause: error });
  }
  if (!response.ok) {
    const detail = await response.text().catch(() => '');
    // 401/403: the key was refused, and retrying cannot help; anything else may pass (a 503 while draining).
    throw new ClientError(
      response.status === 401 || response.status === 403 ? 'not_connected' : 'connection_closed',
      `the server refused a gateway ticket (HTTP ${response.status})${detail ? `: ${detail}` : ''}`,
    );
  }
  const body = (await response.json()) as { ticket?: unknown };
  if (typeof body.ticket !== 'string') throw new ClientError('protocol_error', 'the ticket answer has no ticket');
  return body.ticket;
}

/** Opens a browser WebSocket (the global `WebSocket`) to the gateway, with a ticket when one is configured. */
export async function openBrowserConnection(options: BrowserConnectionOptions): Promise<OpenedConnection> {
  const ticket = await obtainTicket(options);
  const protocols = ticket === undefined ? [] : [GATEWAY_SUBPROTOCOL, `${GATEWAY_TICKET_PROTOCOL_PREFIX}${ticket}`];
  const socket = new WebSocket(options.url, protocols);
  // Binary frames as ArrayBuffer, which the transport decodes; the default Blob it cannot read synchronously.
  socket.binaryType = 'arraybuffer';
  let code: number | undefined;
  let ended = false;
  const closeListeners: (() => void)[] = [];
  // Runs the transport's close handling once: on the socket's close, or at once when the client terminates the wire.
  const end = (closeCode: number | undefined) => {
    if (ended) return;
    ended = true;
    code = closeCode;
    for (const listener of closeListeners) listener();
  };
  socket.addEventListener('close', (event) => end(event.code));
  // A browser reports no detail on an error; the close that follows carries the code (1006 when refused).
  socket.addEventListener('error', () => {});
  const adapter: WebSocketLike = {
    send: (data) => socket.send(data),
    close: (closeCode, reason) => socket.close(closeCode, reason),
    get bufferedAmount() {
      return socket.bufferedAmount;
    },
    on(event: 'message' | 'close' | 'error', listener: (...values: never[]) => void) {
      if (event === 'message') {
        const onMessage = listener as (data: unknown, isBinary: boolean) => void;
        socket.addEventListener('message', (message) => {
          if (!ended) onMessage(message.data, typeof message.data !== 'string');
        });
      } else if (event === 'close') closeListeners.push(listener as () => void);
      return adapter;
    },
  } as WebSocketLike;
  const transport = createWebSocketTransport(adapter);
  const closed = new Promise<void>((resolve) => closeListeners.push(resolve));
  return {
    transport,
    kind: 'websocket',
    closeCode: () => code,
    terminate() {
      // A browser socket has no abrupt close: start the closing handshake and treat the wire as gone now.
      try {
        socket.close();
      } catch {
        // Already closing.
      }
      end(1006);
    },
    async dispose() {
      if (ended) return;
      socket.close(1000, 'client closing');
      const timer = setTimeout(() => end(1006), 2000);
      await closed;
      clearTimeout(timer);
    },
  };
}
