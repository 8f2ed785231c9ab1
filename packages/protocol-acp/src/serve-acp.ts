import { ndJsonStream } from '@agentclientprotocol/sdk/unstable';
import type { AcpAgent } from './acp-agent.js';

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
  const connection = agent.app.connect(ndJsonStream(streams.output, streams.input));
  try {
    await connection.closed;
  } finally {
    await agent.close();
  }
}
