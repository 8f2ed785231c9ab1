import { randomUUID } from 'node:crypto';
import { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError } from './http-error.js';
import { ALREADY_SENT_HEADER, SECURITY_HEADERS } from './pipeline.js';
import type { TurnAdmission } from './turn-admission.js';

/** Idle time after which a `: keepalive` comment is written (spec §10). */
export const KEEPALIVE_MS = 10_000;

/** Standard SSE response headers (spec §10). */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
};

/** The SSE and security headers with lower-case names, as node writes them: built once instead of per response head. */
const SSE_HEAD: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries({ ...SSE_HEADERS, ...SECURITY_HEADERS }).map(([name, value]) => [name.toLowerCase(), value]),
);

let alreadySent: Response | undefined;

/**
 * The one response every directly written stream returns, as `@hono/node-server`'s own `RESPONSE_ALREADY_SENT` is one
 * constant: nothing of it is sent, so nothing of it differs between requests, and no middleware changes it
 * (the security-headers stage leaves it alone). Made on first use rather than at import: while the adapter serves, the
 * global `Response` is its own class, whose fresh instance answers from a cache that skips the already-sent check and
 * would write a second head; reading `body` turns it into a regular response, as hono does whenever a middleware wraps
 * the handler. On the global Response it is a no-op.
 */
function alreadySentResponse(): Response {
  if (alreadySent === undefined) {
    alreadySent = new Response(null, { headers: { [ALREADY_SENT_HEADER]: 'true' } });
    void alreadySent.body;
  }
  return alreadySent;
}

/** Buffered characters above which a frame waits for the buffer to be written (back-pressure). */
const HIGH_WATER_CHARS = 64 * 1024;

/**
 * A frame whose JSON is at least this many characters is queued as chunks of its own instead of being appended to the
 * buffered text. Appended, it made a rope of the buffer and the frame that node flattened (a second copy of the whole
 * frame on V8's heap) to count its bytes before writing it; a long answer's final events are each the whole answer
 * (ADR 0097).
 */
const OWN_CHUNK_CHARS = 16 * 1024;

/**
 * Stands for the shared text in a frame's JSON while it is encoded (see {@link SseFrameOptions.shared}): a random
 * string per process, which no data holds, and whose occurrences are counted against the replacements made anyway.
 */
const SHARED_MARK = `\u0000hermes-shared-${randomUUID()}\u0000`;
const SHARED_MARK_JSON = JSON.stringify(SHARED_MARK);

/** Characters JSON.stringify writes escaped (lone surrogates included; paired ones too, to keep the test simple). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what JSON escapes.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * The JSON encoding of a string as UTF-8 bytes. Text that needs no escaping is copied straight from the string:
 * JSON.stringify of a long string returns a rope of its parts, which the copy to bytes would flatten, one more copy on
 * V8's heap.
 */
export function jsonStringBytes(text: string): Buffer {
  if (NEEDS_ESCAPE.test(text)) return Buffer.from(JSON.stringify(text));
  const bytes = Buffer.allocUnsafe(Buffer.byteLength(text) + 2);
  bytes[0] = 0x22;
  bytes.write(text, 1);
  bytes[bytes.length - 1] = 0x22;
  return bytes;
}

/** How {@link SseWriter.frame} frames its data. */
export interface SseFrameOptions {
  event?: string;
  id?: number | string;
  /**
   * A long string the data holds (an answer's text) that other frames of the same writer hold too, such as a Responses
   * message's closing events and its terminal one. It is JSON-encoded once per writer, to bytes written as they are,
   * instead of once in each frame's JSON (ADR 0097).
   */
  shared?: string;
}

/** Default of `api_server.stream_buffer_bytes`: what one stream may hold for a client that does not read (ADR 0038). */
export const STREAM_BUFFER_BYTES = 1024 * 1024;

/** What a writer needs of a stream: hono's `StreamingApi` has it, and so does the node response sink. */
export interface SseSink {
  /** True once the client went away. */
  readonly aborted: boolean;
  onAbort(listener: () => void | Promise<void>): void;
  /** Resolves once the chunk is handed to the socket, or once the socket can take more (back-pressure). */
  write(chunk: string | Uint8Array): Promise<unknown>;
  /** Cuts the connection at once; the client sees the stream end without its terminal frame. */
  destroy?(): void;
}

/** How a writer treats a client that reads slower than the stream is produced (ADR 0038). */
export interface SseWriterOptions {
  /**
   * `wait` (the runs event stream, which reads a bounded backlog): a frame waits for the socket once 64 KiB are
   * buffered, so the reader falls behind the backlog instead. `hold` (a turn's own stream, whose events the core
   * queues without bound): frames never wait; while the socket is congested they are held, and text passed to
   * {@link SseWriter.mergeable} joins one frame however many turns of the event loop the congestion lasts.
   */
  pace?: 'wait' | 'hold';
  /**
   * `hold` pace: the bytes one stream may hold while its socket has not taken the last chunk (its own buffer and the
   * text being merged): past it the connection is cut, as a client gone. Default {@link STREAM_BUFFER_BYTES}; 0 for no
   * bound. A `wait` stream holds at most 64 KiB, so the bound does not apply to it.
   */
  limitBytes?: number;
  /** Told once, when the bound cut the connection. */
  onOverflow?: (heldBytes: number) => void;
}

/**
 * An SSE body written straight to the node `ServerResponse`: one `write` per batch of frames, with no web stream,
 * encoder or adapter pump between the handler and the socket. A write the socket cannot take at once waits for
 * `drain`; the response's `close` before it finished is the client's disconnect.
 */
class NodeSseSink implements SseSink {
  aborted = false;
  private readonly listeners: (() => void | Promise<void>)[] = [];

  constructor(private readonly response: ServerResponse) {
    // A client that left before the stream began (a turn that waited its turn, ADR 0028) has no `close` to come.
    if (response.destroyed) this.aborted = true;
    response.once('close', () => {
      if (response.writableFinished || this.aborted) return;
      this.aborted = true;
      for (const listener of this.listeners.splice(0)) void listener();
    });
  }

  onAbort(listener: () => void | Promise<void>): void {
    if (this.aborted) void listener();
    else this.listeners.push(listener);
  }

  destroy(): void {
    this.response.destroy();
  }

  write(chunk: string | Uint8Array): Promise<void> {
    const { response } = this;
    if (this.aborted || response.writableEnded || response.destroyed) return Promise.resolve();
    if (response.write(chunk)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        response.off('drain', done);
        response.off('close', done);
        resolve();
      };
      response.once('drain', done);
      response.once('close', done);
    });
  }

  end(): void {
    if (!this.response.writableEnded && !this.response.destroyed) this.response.end();
  }
}

/** The node response of a request served by `@hono/node-server` (`context.env.outgoing`), or null under another adapter. */
function nodeResponse(context: Context): ServerResponse | null {
  const outgoing = (context.env as { outgoing?: unknown } | undefined)?.outgoing;
  return outgoing instanceof ServerResponse ? outgoing : null;
}

/**
 * Waits for an admitted turn's start (`TurnAdmission.paceStart`, ADR 0028), then throws a 499 (nginx's "client closed
 * request", which nobody receives) when the client closed its connection meanwhile, so no turn is set up for nobody.
 */
export async function paceClientTurn(admission: TurnAdmission, context: Context): Promise<void> {
  await admission.paceStart();
  if (nodeResponse(context)?.destroyed)
    throw new ApiError(
      499 as ContentfulStatusCode,
      'client_closed_request',
      'The client closed the connection before its turn began.',
    );
}

/**
 * Answers with an SSE body that `body` writes through a sink; `onError` may still write once `body` threw. Served by
 * `@hono/node-server` (the node response in `context.env.outgoing`), the head and frames are written directly on the
 * node response, and the security headers a middleware would add after the handler are set here, since the head is
 * sent before then; elsewhere this is hono's `stream()`. The head has the headers set on the context so far and
 * {@link SSE_HEADERS}.
 */
export function streamSse(
  context: Context,
  body: (sink: SseSink) => Promise<void>,
  onError?: (error: Error, sink: SseSink) => Promise<void>,
): Response {
  const outgoing = nodeResponse(context);
  if (outgoing === null || outgoing.headersSent) {
    for (const [name, value] of Object.entries(SSE_HEADERS)) context.header(name, value);
    return stream(context, body, onError);
  }
  const head: Record<string, string> = {};
  // `newResponse` carries the headers set on the context so far without becoming the context's response: read through
  // `context.res`, they would make one that hono then copies, header by header, into the response returned here.
  context.newResponse(null).headers.forEach((value, name) => {
    head[name] = value;
  });
  Object.assign(head, SSE_HEAD);
  outgoing.writeHead(200, head);
  const sink = new NodeSseSink(outgoing);
  void (async () => {
    try {
      await body(sink);
    } catch (error) {
      if (error instanceof Error && onError) await onError(error, sink).catch(() => undefined);
      else if (error !== undefined) console.error(error);
    } finally {
      sink.end();
    }
  })();
  return alreadySentResponse();
}

/**
 * Writes SSE frames over a sink, in call order, with a keepalive comment after every idle interval.
 * The frames queued during one turn of the event loop go out as one write: a streamed reply is thousands of small
 * frames, and one write each costs more than the rest of the path. A frame waits at most one macrotask. A client that
 * reads slowly is paced by {@link SseWriterOptions.pace}, and one that stops reading is cut once the stream holds
 * {@link SseWriterOptions.limitBytes} for it (ADR 0038).
 */
export class SseWriter {
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private finished = false;
  /** True while a write waits for the socket: frames are held (and text merged) until it is done. */
  private writing = false;
  private overflowed = false;
  private readonly pace: 'wait' | 'hold';
  private readonly limitBytes: number;
  private readonly onOverflow: ((heldBytes: number) => void) | undefined;
  private buffer = '';
  /**
   * What is queued ahead of `buffer`: earlier buffered text and the chunks of large frames, written in order
   * ({@link OWN_CHUNK_CHARS}); `chunkBytes` is their size (characters for text, bytes for bytes).
   */
  private chunks: (string | Uint8Array)[] = [];
  private chunkBytes = 0;
  /** The last {@link SseFrameOptions.shared} text and its JSON encoding as bytes. */
  private sharedText: string | null = null;
  private sharedBytes: Uint8Array | null = null;
  /** Text queued by {@link SseWriter.mergeable} that a later call in the same turn may still join. */
  private mergingText = '';
  private mergingEncode: ((text: string) => string) | null = null;
  private mergingEvent: string | undefined;
  private flushScheduled = false;
  /** When the last frame was queued; the keepalive timer re-arms itself from it instead of per frame. */
  private lastFrameAt = 0;
  private readonly flushLater = () => void this.flush();

  constructor(
    private readonly stream: SseSink,
    private readonly keepaliveMs: number = KEEPALIVE_MS,
    options: SseWriterOptions = {},
  ) {
    this.pace = options.pace ?? 'wait';
    this.limitBytes = options.limitBytes ?? STREAM_BUFFER_BYTES;
    this.onOverflow = options.onOverflow;
    this.lastFrameAt = performance.now();
    this.armKeepalive(keepaliveMs);
  }

  /** A keepalive goes out one interval after the last frame; the one timer is re-armed for what is left of it. */
  private armKeepalive(delayMs: number): void {
    if (this.finished) return;
    this.timer = setTimeout(() => {
      if (this.closed) return;
      const idleMs = performance.now() - this.lastFrameAt;
      // Timers may fire up to a millisecond early.
      if (idleMs >= this.keepaliveMs - 1) {
        void this.raw(': keepalive\n\n');
        this.armKeepalive(this.keepaliveMs);
      } else this.armKeepalive(this.keepaliveMs - idleMs);
    }, delayMs);
    this.timer.unref();
  }

  /** True once the client went away or the stream was closed. */
  get closed(): boolean {
    return this.finished || this.overflowed || this.stream.aborted;
  }

  /**
   * What this stream holds for its client beyond the chunk the socket has: frames not yet written and text being
   * merged (characters, which is bytes for ASCII text).
   */
  heldBytes(): number {
    return this.chunkBytes + this.buffer.length + this.mergingText.length;
  }

  /**
   * Cuts the connection when frames piled up behind a write the socket has not taken passed the bound before `adding`
   * more; true when it did. A frame is taken whenever what is held is within the bound, whatever its own size, so a
   * long answer's final event (its whole output) still reaches a slow client.
   */
  private overLimit(adding: number): boolean {
    if (!this.writing || this.limitBytes <= 0 || this.stream.destroy === undefined) return false;
    const held = this.heldBytes();
    if (held - adding <= this.limitBytes) return false;
    this.overflowed = true;
    this.buffer = '';
    this.chunks = [];
    this.chunkBytes = 0;
    this.sharedText = null;
    this.sharedBytes = null;
    this.mergingText = '';
    this.mergingEncode = null;
    clearTimeout(this.timer);
    this.onOverflow?.(held);
    // The response's `close` that follows is the client's disconnect: the turn ends as for a client gone.
    this.stream.destroy();
    return true;
  }

  /** Queues one raw frame; resolves at once, or once written when the buffer is over its high-water mark. */
  raw(frame: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closeMerge();
    this.buffer += frame;
    return this.queued(0, frame.length);
  }

  /**
   * Queues text for a frame (with an `event:` line when `event` is given) that the text of the next calls in the same
   * turn of the event loop may join, when they pass the same `encode`, which turns the joined text into the frame's
   * JSON when the frame closes. A frame of any other kind, a different `encode`, {@link SseWriter.closeMerge} or the
   * end of the turn closes the frame. Text that arrives in one burst (a model's network chunk of many deltas) becomes
   * one frame instead of hundreds the client must parse; text that arrives at its own pace still goes out a frame
   * each, as soon as before.
   */
  mergeable(text: string, encode: (text: string) => string, event?: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.mergingEncode !== encode) this.closeMerge();
    this.mergingEncode = encode;
    this.mergingEvent = event;
    this.mergingText += text;
    return this.queued(this.mergingText.length, text.length);
  }

  /**
   * Closes the frame being merged, if any: its text is encoded into the buffer now. A caller whose frames carry a
   * counter (a sequence number) closes it before numbering the next frame.
   */
  closeMerge(): void {
    if (this.mergingEncode === null) return;
    const event = this.mergingEvent === undefined ? '' : `event: ${this.mergingEvent}\n`;
    this.buffer += `${event}data: ${this.mergingEncode(this.mergingText)}\n\n`;
    this.mergingText = '';
    this.mergingEncode = null;
    this.mergingEvent = undefined;
  }

  /** After a frame was queued: a flush at the end of this turn, or now when the buffer is over its high-water mark. */
  private queued(merging: number, added: number): Promise<void> {
    this.lastFrameAt = performance.now();
    if (this.overLimit(added)) return Promise.resolve();
    if (this.chunkBytes + this.buffer.length + merging >= HIGH_WATER_CHARS) {
      const written = this.flush();
      return this.pace === 'wait' ? written : Promise.resolve();
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushLater);
    }
    return Promise.resolve();
  }

  /**
   * Writes the buffered frames as one chunk; resolves once everything queued so far is written. In `hold` pace a
   * flush while a write waits for the socket writes nothing itself: the write under way sends what is held, merged,
   * once the socket took its chunk.
   */
  private flush(): Promise<void> {
    this.flushScheduled = false;
    if (this.pace === 'hold') {
      if (!this.writing) this.queue = this.writeHeld();
      return this.queue.then(() => undefined);
    }
    this.closeMerge();
    if (this.buffer !== '' || this.chunks.length > 0) {
      const taken = this.take();
      this.queue = this.queue.then(() => (this.stream.aborted ? undefined : this.send(taken))).catch(() => undefined);
    }
    return this.queue.then(() => undefined);
  }

  /** Takes everything queued for writing: the buffered text alone, or the chunks with it. */
  private take(): string | (string | Uint8Array)[] {
    const text = this.buffer;
    this.buffer = '';
    if (this.chunks.length === 0) return text;
    const taken = this.chunks;
    if (text !== '') taken.push(text);
    this.chunks = [];
    this.chunkBytes = 0;
    return taken;
  }

  /** Hands what {@link SseWriter.take} took to the sink, one write per chunk, in order. */
  private send(taken: string | (string | Uint8Array)[]): Promise<unknown> {
    if (typeof taken === 'string') return this.stream.write(taken);
    return Promise.all(taken.map((chunk) => this.stream.write(chunk)));
  }

  /** `hold` pace: writes until nothing is held, one chunk per time the socket takes one. */
  private async writeHeld(): Promise<void> {
    this.writing = true;
    try {
      for (;;) {
        this.closeMerge();
        if ((this.buffer === '' && this.chunks.length === 0) || this.stream.aborted || this.overflowed) return;
        await this.send(this.take()).catch(() => undefined);
      }
    } finally {
      this.writing = false;
    }
  }

  /** A comment frame such as `: open`. */
  comment(text: string): Promise<void> {
    return this.raw(`: ${text}\n\n`);
  }

  /**
   * A frame with optional `event:` and `id:` lines; the data is single-line JSON (or a literal such as `[DONE]`, or
   * JSON the caller already encoded).
   */
  frame(data: unknown, options: SseFrameOptions = {}): Promise<void> {
    // A cut or finished stream does not encode what it will not send (a long answer's final events are large).
    if (this.closed) return Promise.resolve();
    let head = '';
    if (options.event !== undefined) head += `event: ${options.event}\n`;
    if (options.id !== undefined) head += `id: ${options.id}\n`;
    const { shared } = options;
    if (typeof data !== 'string' && shared !== undefined && shared.length >= OWN_CHUNK_CHARS) {
      const parts = this.encodeSharing(data, shared);
      if (parts !== null) return this.ownChunks(head, parts);
    }
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    if (payload.length >= OWN_CHUNK_CHARS) return this.ownChunks(head, [payload]);
    return this.raw(`${head}data: ${payload}\n\n`);
  }

  /**
   * The JSON of `data` as pieces, the encoding of `shared` (made once per shared text) where the data holds it; null
   * when the data does not hold it, or when the mark turned up elsewhere (then the caller encodes it whole).
   */
  private encodeSharing(data: unknown, shared: string): (string | Uint8Array)[] | null {
    let replaced = 0;
    const json = JSON.stringify(data, (_key, value: unknown) => {
      if (value !== shared) return value;
      replaced += 1;
      return SHARED_MARK;
    });
    if (replaced === 0) return null;
    const pieces = json.split(SHARED_MARK_JSON);
    if (pieces.length !== replaced + 1) return null;
    if (this.sharedText !== shared) {
      this.sharedText = shared;
      this.sharedBytes = jsonStringBytes(shared);
    }
    const bytes = this.sharedBytes as Uint8Array;
    const parts: (string | Uint8Array)[] = [];
    for (let index = 0; index < pieces.length; index += 1) {
      if (index > 0) parts.push(bytes);
      parts.push(pieces[index] as string);
    }
    return parts;
  }

  /**
   * Queues a large frame's data as chunks of their own, after what is buffered ({@link OWN_CHUNK_CHARS}); its lines go
   * as chunks of their own too, since joining them to a large piece is the copy this avoids.
   */
  private ownChunks(head: string, parts: (string | Uint8Array)[]): Promise<void> {
    this.closeMerge();
    if (this.buffer !== '') {
      this.chunks.push(this.buffer);
      this.chunkBytes += this.buffer.length;
      this.buffer = '';
    }
    const opening = `${head}data: `;
    let added = opening.length + 2;
    this.chunks.push(opening);
    for (const part of parts) {
      // An empty write would be the end of a chunked body.
      if (part.length === 0) continue;
      this.chunks.push(part);
      added += typeof part === 'string' ? part.length : part.byteLength;
    }
    this.chunks.push('\n\n');
    this.chunkBytes += added;
    return this.queued(0, added);
  }

  /** Stops the keepalive and waits for queued frames. */
  async finish(): Promise<void> {
    clearTimeout(this.timer);
    await this.flush();
    this.finished = true;
    clearTimeout(this.timer);
  }
}

/**
 * The writer options of a turn's own stream (chat completions, Responses, a session chat stream): frames never wait
 * for the client, text deltas merge while its socket is congested, and past `limitBytes` the connection is cut and
 * the turn ends as for a client gone (ADR 0038). `warn` is told why.
 */
export function turnStreamOptions(
  limitBytes: number,
  warn: (message: string, fields: { route: string; heldBytes: number; limitBytes: number; reason: string }) => void,
  route: string,
): SseWriterOptions {
  return {
    pace: 'hold',
    limitBytes,
    onOverflow: (heldBytes) =>
      warn('stream cut: the client does not read', { route, heldBytes, limitBytes, reason: 'slow_consumer' }),
  };
}
