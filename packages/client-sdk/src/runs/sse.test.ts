import { describe, expect, it } from 'vitest';
import { readServerSentEventBatches, readServerSentEvents, type SseItem } from './sse.js';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

describe('readServerSentEvents', () => {
  it('yields comments and events in order across chunk boundaries, CRLF included', async () => {
    const items: SseItem[] = [];
    const body = streamOf([
      ': open\n\nid: 0\nda',
      'ta: {"event":"a","seq":0}\r\n\r\n: keep',
      'alive\n\nid: 1\ndata: {"seq":1}\n\n',
    ]);
    for await (const item of readServerSentEvents(body)) items.push(item);
    expect(items).toEqual([
      { kind: 'comment', comment: 'open' },
      { kind: 'event', message: { id: '0', data: '{"event":"a","seq":0}', event: undefined } },
      { kind: 'comment', comment: 'keepalive' },
      { kind: 'event', message: { id: '1', data: '{"seq":1}', event: undefined } },
    ]);
  });

  it('in batches: the items each chunk completes, none for a chunk that completes nothing, the same items in order', async () => {
    const chunks = [': open\n\nid: 0\ndata: {"seq":0}\n\nid: 1\nda', 'ta: {"seq":1}', '\n\n: stream closed\n\n'];
    const batches: SseItem[][] = [];
    for await (const batch of readServerSentEventBatches(streamOf(chunks))) batches.push(batch);
    expect(batches.map((batch) => batch.length)).toEqual([2, 2]);
    const items: SseItem[] = [];
    for await (const item of readServerSentEvents(streamOf(chunks))) items.push(item);
    expect(batches.flat()).toEqual(items);
    expect(items.map((item) => (item.kind === 'event' ? item.message.data : item.comment))).toEqual([
      'open',
      '{"seq":0}',
      '{"seq":1}',
      'stream closed',
    ]);
  });
});
