import type { StreamingApi } from 'hono/utils/stream';

/** Idle time after which a `: keepalive` comment is written (spec §10). */
export const KEEPALIVE_MS = 10_000;

/** Standard SSE response headers (spec §10). */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
};

/** Buffered characters above which a frame waits for the buffer to be written (back-pressure). */
const HIGH_WATER_CHARS = 64 * 1024;

/**
 * Writes SSE frames over hono's streaming API, in call order, with a keepalive comment after every idle interval.
 * The frames queued during one turn of the event loop go out as one write: a streamed reply is thousands of small
 * frames, and one write each (encoder, web stream, socket write) costs more than the rest of the path. A frame waits at
 * most one macrotask; once 64 KiB are buffered, the caller waits for the write, so a slow client holds the turn back
 * instead of growing the buffer.
 */
export class SseWriter {
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private finished = false;
  private buffer = '';
  private flushScheduled = false;

  constructor(
    private readonly stream: StreamingApi,
    private readonly keepaliveMs: number = KEEPALIVE_MS,
  ) {
    this.armKeepalive();
  }

  /** Restarts the idle timer: a keepalive goes out exactly one interval after the last write. */
  private armKeepalive(): void {
    clearTimeout(this.timer);
    if (this.finished) return;
    this.timer = setTimeout(() => void this.raw(': keepalive\n\n'), this.keepaliveMs);
    this.timer.unref();
  }

  /** True once the client went away or the stream was closed. */
  get closed(): boolean {
    return this.finished || this.stream.aborted;
  }

  /** Queues one raw frame; resolves at once, or once written when the buffer is over its high-water mark. */
  raw(frame: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.armKeepalive();
    this.buffer += frame;
    if (this.buffer.length >= HIGH_WATER_CHARS) return this.flush();
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => void this.flush());
    }
    return Promise.resolve();
  }

  /** Writes the buffered frames as one chunk; resolves once everything queued so far is written. */
  private flush(): Promise<void> {
    this.flushScheduled = false;
    if (this.buffer !== '') {
      const text = this.buffer;
      this.buffer = '';
      this.queue = this.queue
        .then(() => (this.stream.aborted ? undefined : this.stream.write(text)))
        .catch(() => undefined);
    }
    return this.queue.then(() => undefined);
  }

  /** A comment frame such as `: open`. */
  comment(text: string): Promise<void> {
    return this.raw(`: ${text}\n\n`);
  }

  /** A frame with optional `event:` and `id:` lines; the data is single-line JSON (or a literal such as `[DONE]`). */
  frame(data: unknown, options: { event?: string; id?: number | string } = {}): Promise<void> {
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    let frame = '';
    if (options.event !== undefined) frame += `event: ${options.event}\n`;
    if (options.id !== undefined) frame += `id: ${options.id}\n`;
    return this.raw(`${frame}data: ${payload}\n\n`);
  }

  /** Stops the keepalive and waits for queued frames. */
  async finish(): Promise<void> {
    clearTimeout(this.timer);
    await this.flush();
    this.finished = true;
    clearTimeout(this.timer);
  }
}
