import { type AnyMessage, DEFAULT_MAX_MESSAGE_BYTES, ndJsonStream } from '@agentclientprotocol/sdk/unstable';
import type { Logger } from '@hermes/core';
import type { AcpAgent } from './acp-agent.js';
import { NdjsonSink } from './ndjson-sink.js';

/** The byte streams an ACP connection runs over: stdin and the dedicated stdout writer in the CLI. */
export interface AcpByteStreams {
  input: ReadableStream<Uint8Array>;
  output: WritableStream<Uint8Array>;
}

/** Options of {@link serveAcp}. */
export interface ServeAcpOptions {
  /**
   * The id of an `initialize` request that was answered before the SDK loaded
   * (`answerInitializeEarly`) and is still at the start of `input`: the SDK reads it as usual (its
   * connection must see `initialize`, and the agent its capabilities), and its answer to that id,
   * the same response, is not sent a second time.
   */
  answeredInitialize?: string | number;
  /** Where a rejected early `initialize` and a discarded over-long line are reported. */
  logger?: Logger;
  /**
   * The longest input line read, in bytes (default the SDK's 32 MiB, spec/acp.md §2). A longer line is discarded as
   * it arrives and answered with a JSON-RPC parse error (`-32700`, id null); the connection carries on.
   */
  maxLineBytes?: number;
}

/**
 * Serves `agent` over a pair of byte streams (NDJSON framing by the SDK) and resolves when the
 * connection has closed and the agent has shut down (spec/acp.md §2.4).
 */
export async function serveAcp(agent: AcpAgent, streams: AcpByteStreams, options?: ServeAcpOptions): Promise<void> {
  // The SDK parses the input; outbound messages go through one buffer, a write per event-loop turn.
  const sink = new NdjsonSink(streams.output);
  // The sink writes a session's batched updates as one line per notification, and says when the client lags.
  agent.useNotificationBatches({ congested: () => sink.congested });
  const maxLineBytes = options?.maxLineBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const input = streams.input.pipeThrough(
    cutOverlongLines(maxLineBytes, () =>
      options?.logger?.warn(`acp: discarded an input line over ${maxLineBytes} bytes`),
    ),
  );
  // The SDK's own limit is one byte above the cut line (see cutOverlongLines), so it never fails the connection.
  const { readable } = ndJsonStream(sink.bytes, input, { maxMessageBytes: maxLineBytes + 1 });
  // The agent numbers prompts and applies cancels as they are read, before the SDK's handler
  // chains (which may finish out of order) run (spec/acp.md §7.1).
  const ordered = readable.pipeThrough(
    new TransformStream<AnyMessage, AnyMessage>({
      transform(message, controller) {
        agent.observeIncoming(message);
        controller.enqueue(message);
      },
    }),
  );
  const writable =
    options?.answeredInitialize === undefined
      ? sink.messages
      : withoutFirstResponse(sink.messages, options.answeredInitialize, options.logger);
  const connection = agent.app.connect({ readable: ordered, writable });
  try {
    await connection.closed;
  } finally {
    await agent.close();
    // What the agent wrote while closing still goes out before the caller exits.
    await sink.close().catch(() => undefined);
  }
}

/**
 * `messages` without the first response to `id`. A response that is not the successful one sent
 * early can only come from a request the early check let through and the SDK rejected; it is
 * logged, since the client already has its answer.
 */
function withoutFirstResponse(
  messages: WritableStream<unknown>,
  id: string | number,
  logger: Logger | undefined,
): WritableStream<unknown> {
  const writer = messages.getWriter();
  let pending = true;
  return new WritableStream<unknown>({
    write(message) {
      if (pending && isResponseTo(message, id)) {
        pending = false;
        if ('error' in message)
          logger?.error('acp: initialize was answered early but the SDK rejected it', {
            error: JSON.stringify(message.error),
          });
        return;
      }
      return writer.write(message);
    },
    close: () => writer.close(),
    abort: (reason) => writer.abort(reason),
  });
}

function isResponseTo(message: unknown, id: string | number): message is Record<string, unknown> {
  if (typeof message !== 'object' || message === null) return false;
  const fields = message as Record<string, unknown>;
  return fields.id === id && !('method' in fields) && ('result' in fields || 'error' in fields);
}

/**
 * Passes input bytes through while the current line stays within `maxLineBytes`. A longer line is cut there: its
 * first `maxLineBytes` bytes are followed by a NUL byte and a line feed, and the rest of it, up to its own line feed,
 * is dropped as it arrives. No JSON text holds a raw NUL, so the SDK answers the cut line with its parse error
 * (`-32700`, id null) and reads on. The SDK alone would fail the whole connection on such a line, and the process
 * would exit 0 without a word (issue 37); buffering the line here to answer it would hold it twice.
 */
export function cutOverlongLines(maxLineBytes: number, onCut?: () => void): TransformStream<Uint8Array, Uint8Array> {
  let lineBytes = 0;
  let discarding = false;
  const CUT = new Uint8Array([0, 10]);
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      let start = 0;
      while (start < chunk.length) {
        const newline = chunk.indexOf(10, start);
        const end = newline === -1 ? chunk.length : newline;
        if (discarding) {
          if (newline === -1) return;
          discarding = false;
          lineBytes = 0;
          start = newline + 1;
          continue;
        }
        if (lineBytes + (end - start) > maxLineBytes) {
          const room = maxLineBytes - lineBytes;
          if (room > 0) controller.enqueue(chunk.subarray(start, start + room));
          controller.enqueue(CUT);
          onCut?.();
          lineBytes = 0;
          if (newline === -1) {
            discarding = true;
            return;
          }
          start = newline + 1;
          continue;
        }
        const through = newline === -1 ? chunk.length : newline + 1;
        controller.enqueue(chunk.subarray(start, through));
        lineBytes = newline === -1 ? lineBytes + (end - start) : 0;
        start = through;
      }
    },
  });
}
