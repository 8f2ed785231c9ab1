/** Bytes queued (buffered or being written) above which writers wait for the output to drain. */
const HIGH_WATER_BYTES = 1024 * 1024;

/**
 * The outbound half of an NDJSON connection that sends the messages of one event-loop turn in one
 * write. A streamed reply is thousands of small notifications; through the SDK's own writer each
 * costs a JSON encode, a text encode and three web-stream hops ending in a synchronous pipe write,
 * which profiled as the largest cost of the ACP stream path. Here a message is encoded into a
 * string buffer that is flushed at the next macrotask.
 *
 * `messages` takes message objects (the SDK connection's writable); `bytes` takes raw NDJSON bytes
 * (the SDK's line reader answers malformed input through it). Both feed the same buffer, so
 * everything leaves in call order. Once more than 1 MiB is queued, writers wait for the output
 * (its back-pressure is kept). A failed output write fails every later write.
 */
export class NdjsonSink {
  readonly messages: WritableStream<unknown>;
  readonly bytes: WritableStream<Uint8Array>;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #encoder = new TextEncoder();
  readonly #decoder = new TextDecoder();
  #buffer = '';
  #queuedBytes = 0;
  #scheduled = false;
  #chain: Promise<void> = Promise.resolve();
  #failure: { error: unknown } | null = null;

  constructor(output: WritableStream<Uint8Array>) {
    this.#writer = output.getWriter();
    this.messages = new WritableStream<unknown>({
      write: (message) => this.#append(`${JSON.stringify(message)}\n`),
      close: () => this.close(),
    });
    this.bytes = new WritableStream<Uint8Array>({
      write: (chunk) => this.#append(this.#decoder.decode(chunk, { stream: true })),
      close: () => this.close(),
    });
  }

  /** Writes what is buffered and closes the output. */
  async close(): Promise<void> {
    await this.#flush();
    await this.#writer.close().catch(() => undefined);
  }

  #append(text: string): Promise<void> | undefined {
    if (this.#failure) throw this.#failure.error;
    this.#buffer += text;
    this.#queuedBytes += text.length;
    if (this.#queuedBytes >= HIGH_WATER_BYTES) return this.#flush();
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => void this.#flush().catch(() => undefined));
    }
    return undefined;
  }

  #flush(): Promise<void> {
    this.#scheduled = false;
    if (this.#buffer !== '') {
      const text = this.#buffer;
      this.#buffer = '';
      this.#chain = this.#chain.then(async () => {
        if (this.#failure) return;
        try {
          await this.#writer.write(this.#encoder.encode(text));
        } catch (error) {
          this.#failure = { error };
        } finally {
          this.#queuedBytes -= text.length;
        }
      });
    }
    return this.#chain.then(() => {
      if (this.#failure) throw this.#failure.error;
    });
  }
}
