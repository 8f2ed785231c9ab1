/**
 * The params of several notifications of one method, sent through the SDK as one notification and
 * written by {@link NdjsonSink} as one NDJSON line per entry, byte for byte what sending each on
 * its own writes. A streamed reply's deltas arrive many to an event-loop turn; one SDK send for
 * all of them saves the SDK's per-message promise chain and writer hops (ADR 0023). Only a
 * connection whose writable is an `NdjsonSink` may carry one (`serveAcp` enables them).
 */
export class NotificationBatch {
  readonly entries: readonly unknown[];
  /** Text around each entry's JSON inside the notification's params: empty when the entries are the params. */
  readonly before: string;
  readonly after: string;
  constructor(entries: readonly unknown[], wrap?: { before: string; after: string }) {
    this.entries = entries;
    this.before = wrap?.before ?? '';
    this.after = wrap?.after ?? '';
  }
  /**
   * `session/update` params `{ sessionId, update }` for each of `updates`, encoded without building that object
   * per update: the same text as `JSON.stringify({ sessionId, update })`.
   */
  static sessionUpdates(sessionId: string, updates: readonly unknown[]): NotificationBatch {
    return new NotificationBatch(updates, {
      before: `{"sessionId":${JSON.stringify(sessionId)},"update":`,
      after: '}',
    });
  }
  /** A batch reaching a plain JSON encoder is a bug: say so rather than send a wrong frame. */
  toJSON(): never {
    throw new Error('a NotificationBatch can only be written by NdjsonSink');
  }
}

/**
 * Streamed text chunks of one message (or thought) in a row: one `agent_message_chunk` or `agent_thought_chunk`
 * update whose text is the chunks' texts joined. A session queues a reply's deltas as runs, and a client that lags
 * gets the text queued meanwhile in one update per run (ADR 0025) without an update object, or a merged copy of
 * one, per delta (ADR 0072). Its JSON is the update's; {@link NdjsonSink} writes it without building the object.
 */
export class TextChunkRun {
  readonly kind: 'agent_message_chunk' | 'agent_thought_chunk';
  readonly messageId: string | undefined;
  #texts: string[];
  constructor(kind: TextChunkRun['kind'], text: string, messageId: string | undefined) {
    this.kind = kind;
    this.messageId = messageId;
    this.#texts = [text];
  }
  /** Adds the next chunk's text. */
  push(text: string): void {
    this.#texts.push(text);
  }
  /** The joined text. */
  get text(): string {
    if (this.#texts.length > 1) this.#texts = [this.#texts.join('')];
    return this.#texts[0] as string;
  }
  /** The update this run stands for. */
  update(): { sessionUpdate: TextChunkRun['kind']; content: { type: 'text'; text: string }; messageId?: string } {
    return { sessionUpdate: this.kind, content: { type: 'text', text: this.text }, messageId: this.messageId };
  }
  toJSON(): unknown {
    return this.update();
  }
}

/** The JSON of a text chunk update (keys in the order JSON.stringify writes the update's). */
function textChunkJson(kind: string, text: string, messageId: unknown): string {
  const head = `{"sessionUpdate":"${kind}","content":{"type":"text","text":${JSON.stringify(text)}}`;
  return messageId === undefined ? `${head}}` : `${head},"messageId":${JSON.stringify(messageId)}}`;
}

/** One outbound message as NDJSON text: one line, or one line per entry of a notification batch. */
function encodeMessage(message: unknown): string {
  const { method, params } = message as { method?: unknown; params?: unknown };
  if (!(params instanceof NotificationBatch)) return `${JSON.stringify(message)}\n`;
  const head = `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${params.before}`;
  const tail = `${params.after}}\n`;
  let text = '';
  for (const entry of params.entries) text += `${head}${encodeEntry(entry)}${tail}`;
  return text;
}

/**
 * One batch entry's JSON. A text chunk, the entry a streamed reply is made of, is written from its text without
 * encoding the object around it (ADR 0072): the same text as `JSON.stringify(entry)`, which anything else gets.
 */
function encodeEntry(entry: unknown): string {
  if (entry instanceof TextChunkRun) return textChunkJson(entry.kind, entry.text, entry.messageId);
  const chunk = entry as { sessionUpdate?: unknown; content?: { type?: unknown; text?: unknown }; messageId?: unknown };
  const kind = chunk.sessionUpdate;
  if ((kind !== 'agent_message_chunk' && kind !== 'agent_thought_chunk') || !isTextChunk(chunk)) {
    return JSON.stringify(entry);
  }
  return textChunkJson(kind, chunk.content?.text as string, chunk.messageId);
}

/**
 * Whether an update's own keys are `sessionUpdate`, `content` and maybe `messageId` (a string or undefined), in that
 * order, and its content's exactly `type: 'text'` then a string `text`: the shape whose JSON {@link encodeEntry}
 * writes itself. Anything else (another field, another order, a toJSON) is left to `JSON.stringify`.
 */
function isTextChunk(chunk: { content?: unknown; messageId?: unknown; toJSON?: unknown }): boolean {
  if (Object.getPrototypeOf(chunk) !== Object.prototype || chunk.toJSON !== undefined) return false;
  let index = 0;
  for (const key in chunk) {
    if (key !== (index === 0 ? 'sessionUpdate' : index === 1 ? 'content' : index === 2 ? 'messageId' : ''))
      return false;
    index += 1;
  }
  if (index < 2 || (chunk.messageId !== undefined && typeof chunk.messageId !== 'string')) return false;
  const content = chunk.content as { type?: unknown; text?: unknown; toJSON?: unknown } | null;
  if (typeof content !== 'object' || content === null || Object.getPrototypeOf(content) !== Object.prototype)
    return false;
  if (content.toJSON !== undefined) return false;
  if (content.type !== 'text' || typeof content.text !== 'string') return false;
  index = 0;
  for (const key in content) {
    if (key !== (index === 0 ? 'type' : index === 1 ? 'text' : '')) return false;
    index += 1;
  }
  return index === 2;
}

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
      write: (message) => this.#append(encodeMessage(message)),
      close: () => this.close(),
    });
    this.bytes = new WritableStream<Uint8Array>({
      write: (chunk) => this.#append(this.#decoder.decode(chunk, { stream: true })),
      close: () => this.close(),
    });
  }

  /** True while more than the high-water mark is queued: the client is not taking the output as fast as it comes. */
  get congested(): boolean {
    return this.#queuedBytes >= HIGH_WATER_BYTES;
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
