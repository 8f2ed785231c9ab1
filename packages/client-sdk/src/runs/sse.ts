import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** One server-sent event, or a comment line (`: open`, `: keepalive`, `: stream closed`). */
export type SseItem = { kind: 'event'; message: EventSourceMessage } | { kind: 'comment'; comment: string };

/**
 * Reads a `text/event-stream` body into events and comments, in order. Parsing is done by
 * eventsource-parser (CRLF, multi-line `data:`, split chunks); this only adapts it to an async iterable.
 */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseItem> {
  const items: SseItem[] = [];
  const parser = createParser({
    onEvent: (message) => items.push({ kind: 'event', message }),
    onComment: (comment) => items.push({ kind: 'comment', comment: comment.trim() }),
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
      while (items.length > 0) yield items.shift() as SseItem;
    }
    parser.feed(decoder.decode());
    while (items.length > 0) yield items.shift() as SseItem;
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
