import { encodeFrame, type InboundFrame } from './ndjson.js';
import type { Transport } from './transport.js';

/** One side of a linked pair: the server side takes a `Transport`, the client side reads raw messages. */
export interface LinkedPair {
  /** Give this to the server (`gateway.connect`). */
  server: Transport;
  /** The client's end: messages the server wrote, and a way to send frames to it. */
  client: {
    /** Every message the server wrote, as parsed objects (a JSON round trip, as on a real wire). */
    readonly readable: ReadableStream<unknown>;
    /** Sends a frame to the server; strings are parsed as the server's codec would (for malformed input tests). */
    send(message: unknown): void;
    /** Sends raw text, exactly as a WebSocket text message would carry it. */
    sendText(text: string): void;
    close(): Promise<void>;
    readonly closed: Promise<void>;
  };
}

/**
 * An in-memory linked pair for tests: the same `Transport` shape as stdio and WebSocket, with a
 * JSON round trip on every frame so tests see exactly what a wire would carry.
 */
export function createLinkedPair(options: { kind?: Transport['kind'] } = {}): LinkedPair {
  let resolveClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let isClosed = false;
  let inboundController!: ReadableStreamDefaultController<InboundFrame>;
  let outboundController!: ReadableStreamDefaultController<unknown>;
  const inbound = new ReadableStream<InboundFrame>({
    start(controller) {
      inboundController = controller;
    },
  });
  const outbound = new ReadableStream<unknown>({
    start(controller) {
      outboundController = controller;
    },
  });
  const shut = () => {
    if (isClosed) return;
    isClosed = true;
    try {
      inboundController.close();
    } catch {}
    try {
      outboundController.close();
    } catch {}
    resolveClosed();
  };
  const pushText = (text: string) => {
    if (isClosed) return;
    const trimmed = text.trim();
    if (trimmed.length === 0) return;
    try {
      inboundController.enqueue({ kind: 'message', message: JSON.parse(trimmed) as unknown });
    } catch (error) {
      inboundController.enqueue({ kind: 'parse_error', reason: String(error) });
    }
  };
  const server: Transport = {
    kind: options.kind ?? 'memory',
    readable: inbound,
    writable: new WritableStream<unknown>({
      write(message) {
        if (isClosed) return;
        outboundController.enqueue(JSON.parse(encodeFrame(message)) as unknown);
      },
    }),
    bufferedAmount: () => 0,
    closed,
    async close() {
      shut();
    },
  };
  return {
    server,
    client: {
      readable: outbound,
      send(message) {
        pushText(typeof message === 'string' ? message : JSON.stringify(message));
      },
      sendText: pushText,
      async close() {
        shut();
      },
      closed,
    },
  };
}
