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

/**
 * Writes SSE frames over hono's streaming API: one write per frame, in call order, with a keepalive comment after
 * every idle interval.
 */
export class SseWriter {
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private finished = false;

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

  /** Queues one raw frame; resolves once written. */
  raw(frame: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.armKeepalive();
    const next = this.queue.then(() => (this.stream.aborted ? undefined : this.stream.write(frame)));
    this.queue = next.catch(() => undefined);
    return next.then(() => undefined);
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
    await this.queue;
    this.finished = true;
    clearTimeout(this.timer);
  }
}
