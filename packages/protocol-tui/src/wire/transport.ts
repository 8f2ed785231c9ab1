import type { InboundFrame } from './ndjson.js';

/**
 * A transport: a pair of web streams of parsed JSON-RPC messages plus `close()`, the shape the
 * official ACP SDK uses. `readable` yields every inbound frame (parse failures included, so the
 * server can answer them); `writable` takes outbound message objects, which the transport
 * serializes.
 */
export interface Transport {
  /** Inbound frames in arrival order; ends when the peer goes away. */
  readonly readable: ReadableStream<InboundFrame>;
  /**
   * Optional fast path: the same inbound frames, an array of those that arrived together (the
   * stdio transport: the lines one chunk of bytes completes; the WebSocket transport: the messages
   * of one socket read). A reader of a fast stream then pays the web stream's cost once per batch
   * instead of once per frame. Read either this or `readable`, never both: they share
   * their source, so whichever is read first takes it and the other is locked.
   */
  readonly frameBatches?: ReadableStream<InboundFrame[]>;
  /** Outbound messages; a write never waits for the peer to read. */
  readonly writable: WritableStream<unknown>;
  /**
   * Optional fast path: writes several messages at once, in order, exactly as writing each to
   * `writable` would (a stdio transport sends them in one write). A writer that uses it must not
   * also write to `writable`, or the two could interleave.
   */
  writeMany?(messages: readonly unknown[]): void;
  /** Bytes written but not yet accepted by the operating system (used for back-pressure, §1.4). */
  bufferedAmount(): number;
  /** Closes both directions. WebSocket transports send `code` and `reason`. */
  close(code?: number, reason?: string): Promise<void>;
  /** Resolves once the transport is closed, from either side. */
  readonly closed: Promise<void>;
  /** `stdio`, `websocket` or `memory`: decides the `heartbeat` flag and server-request eligibility. */
  readonly kind: 'stdio' | 'websocket' | 'memory';
}

/**
 * `readable` made from `frameBatches`, one frame per read: built when first asked for (then
 * `frameBatches` is locked), so a reader of the batches pays nothing for it.
 */
export function framesOf(batches: ReadableStream<InboundFrame[]>): () => ReadableStream<InboundFrame> {
  let frames: ReadableStream<InboundFrame> | undefined;
  return () => {
    frames ??= batches.pipeThrough(
      new TransformStream<InboundFrame[], InboundFrame>({
        transform(batch, controller) {
          for (const frame of batch) controller.enqueue(frame);
        },
      }),
    );
    return frames;
  };
}
