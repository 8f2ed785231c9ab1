import { type AnyMessage, ndJsonStream } from '@agentclientprotocol/sdk/unstable';
import type { AcpAgent } from './acp-agent.js';
import { NdjsonSink } from './ndjson-sink.js';

/** The byte streams an ACP connection runs over: stdin and the dedicated stdout writer in the CLI. */
export interface AcpByteStreams {
  input: ReadableStream<Uint8Array>;
  output: WritableStream<Uint8Array>;
}

/**
 * Serves `agent` over a pair of byte streams (NDJSON framing by the SDK) and resolves when the
 * connection has closed and the agent has shut down (spec/acp.md §2.4).
 */
export async function serveAcp(agent: AcpAgent, streams: AcpByteStreams): Promise<void> {
  // The SDK parses the input; outbound messages go through one buffer, a write per event-loop turn.
  const sink = new NdjsonSink(streams.output);
  const { readable } = ndJsonStream(sink.bytes, streams.input);
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
  const connection = agent.app.connect({ readable: ordered, writable: sink.messages });
  try {
    await connection.closed;
  } finally {
    await agent.close();
    // What the agent wrote while closing still goes out before the caller exits.
    await sink.close().catch(() => undefined);
  }
}
