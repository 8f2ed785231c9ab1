import { createNdjsonLineReader, encodeFrame, type InboundFrame } from './ndjson.js';
import { framesOf, type Transport } from './transport.js';

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
  /** Cap on one inbound line; default 16 MiB (the least the spec allows). */
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
  const lines = createNdjsonLineReader(
    options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes },
  );
  // Frames are parsed as each chunk arrives, and queued a chunk's worth at a time (none for a chunk that ends no line).
  const frameBatches = new ReadableStream<InboundFrame[]>({
    start(controller) {
      let ended = false;
      options.input.on('data', (chunk) => {
        if (ended) return;
        const frames = lines.push(chunk);
        if (frames.length > 0) controller.enqueue(frames);
      });
      const end = () => {
        if (ended) return;
        ended = true;
        const frames = lines.end();
        if (frames.length > 0) controller.enqueue(frames);
        controller.close();
      };
      options.input.on('end', end);
      options.input.on('close', end);
      options.input.on('error', end);
    },
  });
  const frames = framesOf(frameBatches);
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
    get readable() {
      return frames();
    },
    frameBatches,
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
