import { encodeFrame, type InboundFrame, parseFrameText } from './ndjson.js';
import { framesOf, type Transport } from './transport.js';

/**
 * The structural subset of a WebSocket (the `ws` package's server-side socket, or a browser-like
 * one) this transport needs; nothing here imports `ws`.
 */
export interface WebSocketLike {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  readonly bufferedAmount: number;
  on(event: 'message', listener: (data: unknown, isBinary: boolean) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** Options of {@link createWebSocketTransport}. */
export interface WebSocketTransportOptions {
  /** Cap on one inbound message in bytes; default 64 MiB. */
  maxMessageBytes?: number;
  /**
   * The byte stream under the socket (the upgraded request's socket). When given, the frames of one
   * `writeMany` are written with it corked: one write for the batch instead of one per frame (ADR 0024).
   */
  underlying?: { cork(): void; uncork(): void };
  /**
   * Writes the frames of one `writeMany` as WebSocket text messages, framed in one buffer and written at once, or
   * returns false when it cannot now (the transport then sends each through the socket). The server's endpoint gives
   * it: framing a batch of deltas in one buffer costs a fraction of framing each message through `ws` (ADR 0071).
   */
  writeTextMessages?: (texts: readonly string[]) => boolean;
}

/**
 * One WebSocket message per frame (§1.3): text and binary messages are accepted (binary decoded
 * as UTF-8), surrounding whitespace is trimmed, empty messages are ignored; outbound frames are
 * text messages without a trailing newline.
 */
export function createWebSocketTransport(socket: WebSocketLike, options: WebSocketTransportOptions = {}): Transport {
  const maxBytes = options.maxMessageBytes ?? 64 * 1024 * 1024;
  let resolveClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let isClosed = false;
  const decoder = new TextDecoder('utf-8');
  // The frames of the messages that arrive together (one socket read) are queued as one batch, a microtask later.
  const frameBatches = new ReadableStream<InboundFrame[]>({
    start(controller) {
      let pending: InboundFrame[] = [];
      const flush = () => {
        if (pending.length === 0) return;
        controller.enqueue(pending);
        pending = [];
      };
      const add = (frame: InboundFrame) => {
        if (pending.length === 0) queueMicrotask(flush);
        pending.push(frame);
      };
      socket.on('message', (data) => {
        if (isClosed) return;
        const text = toText(data, decoder);
        if (text.length > maxBytes) {
          add({ kind: 'parse_error', reason: 'message too large' });
          return;
        }
        const frame = parseFrameText(text);
        if (frame) add(frame);
      });
      const end = () => {
        if (isClosed) return;
        isClosed = true;
        resolveClosed();
        flush();
        controller.close();
      };
      socket.on('close', end);
      socket.on('error', end);
    },
  });
  const frames = framesOf(frameBatches);
  const sendText = (text: string) => {
    if (isClosed) return;
    try {
      socket.send(text);
    } catch {
      // A socket that died between the check and the send; its close event runs the detach.
    }
  };
  const send = (message: unknown) => sendText(encodeFrame(message));
  const writable = new WritableStream<unknown>({ write: send });
  return {
    kind: 'websocket',
    get readable() {
      return frames();
    },
    frameBatches,
    writable,
    writeMany(messages) {
      if (isClosed) return;
      // One message per frame (§1.3), framed together in one buffer where the endpoint can write them so.
      const writeTextMessages = options.writeTextMessages;
      if (writeTextMessages !== undefined && messages.length > 1) {
        const texts = messages.map(encodeFrame);
        let written = false;
        try {
          written = writeTextMessages(texts);
        } catch {
          // A socket that died meanwhile; its close event runs the detach.
          return;
        }
        if (written) return;
        for (const text of texts) sendText(text);
        return;
      }
      // Without a web-stream hop for each. `ws` writes each frame at once (a system call per delta); corked, the
      // batch's frames leave in one write, the same bytes.
      const underlying = options.underlying;
      if (underlying === undefined || messages.length < 2) {
        for (const message of messages) send(message);
        return;
      }
      underlying.cork();
      try {
        for (const message of messages) send(message);
      } finally {
        underlying.uncork();
      }
    },
    closed,
    bufferedAmount: () => socket.bufferedAmount,
    async close(code, reason) {
      try {
        socket.close(code, reason);
      } catch {
        // Already closed.
      }
    },
  };
}

function toText(data: unknown, decoder: { decode(input: Uint8Array): string }): string {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return decoder.decode(new Uint8Array(data));
  if (Array.isArray(data)) return data.map((part) => toText(part, decoder)).join('');
  if (ArrayBuffer.isView(data)) return decoder.decode(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return String(data);
}
