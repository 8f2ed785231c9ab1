import { createNdjsonDecoder, encodeFrame, type InboundFrame } from './ndjson.js';
import type { Transport } from './transport.js';

/** The structural subset of a Node readable stream the stdio transport reads. */
export interface ByteSource {
  on(event: 'data', listener: (chunk: Uint8Array | string) => void): unknown;
  on(event: 'end' | 'close', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  pause?(): unknown;
}

/** The structural subset of a Node writable stream the stdio transport writes. */
export interface ByteSink {
  write(chunk: string, callback?: (error?: Error | null) => void): boolean;
  readonly writableLength?: number;
  on(event: 'error', listener: (error: Error) => void): unknown;
  end?(): unknown;
}

/** Options of {@link createStdioTransport}. */
export interface StdioTransportOptions {
  input: ByteSource;
  output: ByteSink;
  /** Cap on one inbound line; default 64 MiB (the spec requires at least 16 MiB). */
  maxLineBytes?: number;
  /** Called once when a write fails because the reader is gone (EPIPE), so the host can exit. */
  onWriteError?: (error: Error) => void;
  /** Marks the transport as a memory pipe instead of stdio (tests). */
  kind?: Transport['kind'];
}

/** NDJSON over a pair of byte streams: each outbound frame is followed by exactly one `\n` (§1.2). */
export function createStdioTransport(options: StdioTransportOptions): Transport {
  let resolveClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let isClosed = false;
  let writeFailed = false;
  const finish = () => {
    if (isClosed) return;
    isClosed = true;
    resolveClosed();
  };
  const decoder = createNdjsonDecoder(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes });
  const bytes = new ReadableStream<Uint8Array | string>({
    start(controller) {
      let ended = false;
      options.input.on('data', (chunk) => {
        if (!ended) controller.enqueue(chunk);
      });
      const end = () => {
        if (ended) return;
        ended = true;
        controller.close();
      };
      options.input.on('end', end);
      options.input.on('close', end);
      options.input.on('error', end);
    },
  });
  const readable: ReadableStream<InboundFrame> = bytes.pipeThrough(decoder);
  const failWrite = (error: Error) => {
    if (writeFailed) return;
    writeFailed = true;
    finish();
    options.onWriteError?.(error);
  };
  options.output.on('error', failWrite);
  const writeText = (text: string) => {
    if (writeFailed) return;
    options.output.write(text, (error) => {
      if (error) failWrite(error);
    });
  };
  const writable = new WritableStream<unknown>({
    write(message) {
      writeText(`${encodeFrame(message)}\n`);
    },
  });
  return {
    kind: options.kind ?? 'stdio',
    readable,
    writable,
    writeMany(messages) {
      let text = '';
      for (const message of messages) text += `${encodeFrame(message)}\n`;
      writeText(text);
    },
    closed,
    bufferedAmount: () => options.output.writableLength ?? 0,
    async close() {
      finish();
    },
  };
}
