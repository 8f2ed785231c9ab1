import type { Transport } from '@hermes/protocol-tui/wire/framing';

/** One open wire: a transport plus what the client needs to end it. */
export interface OpenedConnection {
  readonly transport: Transport;
  readonly kind: 'stdio' | 'websocket';
  /** The WebSocket close code once closed (4401 and 4403 mean the server refused us). */
  closeCode(): number | undefined;
  /** The reason text of the WebSocket close, when the server gave one. */
  closeReason?(): string;
  /**
   * The error that kept the wire from opening or ended it, when the wire reports one: a refused connection
   * (`ECONNREFUSED`), an upgrade the server answered with an HTTP status, a command that could not start (`ENOENT`).
   */
  failure?(): Error | undefined;
  /** Ends the wire at once, without a closing handshake (heartbeat failure). */
  terminate(): void;
  /** Ends the wire politely: EOF on stdin (the gateway's shutdown sequence), or a WebSocket close. */
  dispose(): Promise<void>;
}
