import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** One server-sent event, or a comment line (`: open`, `: keepalive`, `: stream closed`). */
export type SseItem = { kind: 'event'; message: EventSourceMessage } | { kind: 'comment'; comment: string };

/**
 * Reads a `text/event-stream` body into events and comments, in order. Parsing is done by
 * eventsource-parser (CRLF, multi-line `data:`, split chunks); this only adapts it to an async iterable.
 */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseItem> {
  for await (const items of readServerSentEventBatches(body)) yield* items;
}

/**
 * {@link readServerSentEvents} a chunk of the body at a time: the items each chunk completes, in
 * order (a fast stream's chunk holds hundreds of events, and one iteration per event costs more than the parse).
 */
export async function* readServerSentEventBatches(body: ReadableStream<Uint8Array>): AsyncGenerator<SseItem[]> {
  let items: SseItem[] = [];
  const parser = createParser({
    onEvent: (message) => items.push({ kind: 'event', message }),
    onComment: (comment) => items.push({ kind: 'comment', comment: comment.trim() }),
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  const take = () => {
    const batch = items;
    items = [];
    return batch;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
      if (items.length > 0) yield take();
    }
    parser.feed(decoder.decode());
    if (items.length > 0) yield take();
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
