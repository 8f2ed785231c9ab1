import type { StreamingApi } from 'hono/utils/stream';
import { describe, expect, it } from 'vitest';
import { SseWriter } from './sse-writer.js';

/** The part of hono's StreamingApi the writer uses, recording each write. */
function fakeStream(hold?: Promise<void>) {
  const writes: string[] = [];
  const stream = {
    aborted: false,
    async write(text: string) {
      await hold;
      writes.push(text);
      return stream;
    },
  };
  return { writes, stream: stream as unknown as StreamingApi };
}

describe('SseWriter', () => {
  it('sends the frames of one event-loop turn as one write, in order', async () => {
    const { writes, stream } = fakeStream();
    const writer = new SseWriter(stream, 60_000);
    void writer.frame({ a: 1 });
    void writer.frame('[DONE]', { event: 'x', id: 7 });
    await new Promise((resolve) => setImmediate(resolve));
    void writer.comment('later');
    await writer.finish();
    expect(writes).toEqual(['data: {"a":1}\n\nevent: x\nid: 7\ndata: [DONE]\n\n', ': later\n\n']);
  });

  it('makes the caller wait for the write once 64 KiB are buffered', async () => {
    let release: () => void = () => {};
    const { writes, stream } = fakeStream(
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    const writer = new SseWriter(stream, 60_000);
    let settled = false;
    const big = writer.frame('x'.repeat(70_000)).then(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    release();
    await big;
    await writer.finish();
    expect(writes).toHaveLength(1);
  });
});
