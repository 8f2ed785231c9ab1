import type { StreamingApi } from 'hono/utils/stream';
import { describe, expect, it } from 'vitest';
import { SseWriter } from './sse-writer.js';

/** The part of hono's StreamingApi the writer uses, recording each write; `held` writes wait for `release()`. */
function fakeStream(held = false) {
  const writes: string[] = [];
  let release: () => void = () => {};
  const hold = held
    ? new Promise<void>((resolve) => {
        release = resolve;
      })
    : undefined;
  const stream = {
    aborted: false,
    async write(text: string) {
      await hold;
      writes.push(text);
      return stream;
    },
  };
  return { writes, stream: stream as unknown as StreamingApi, release: () => release() };
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
    const { writes, stream, release } = fakeStream(true);
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

  it('joins mergeable text queued in one turn into one frame, closed by any other frame', async () => {
    const { writes, stream } = fakeStream();
    const writer = new SseWriter(stream, 60_000);
    const encode = (text: string) => JSON.stringify({ content: text });
    const other = (text: string) => JSON.stringify({ reasoning: text });
    void writer.mergeable('a', encode);
    void writer.mergeable('b', encode);
    void writer.frame({ tool: 1 });
    void writer.mergeable('c', encode);
    void writer.mergeable('d', other);
    void writer.mergeable('e', encode);
    void writer.mergeable('f', encode);
    await new Promise((resolve) => setImmediate(resolve));
    void writer.mergeable('g', encode);
    await writer.finish();
    expect(writes).toEqual([
      'data: {"content":"ab"}\n\ndata: {"tool":1}\n\ndata: {"content":"c"}\n\ndata: {"reasoning":"d"}\n\n' +
        'data: {"content":"ef"}\n\n',
      'data: {"content":"g"}\n\n',
    ]);
  });

  it('closes a merged frame and makes the caller wait once it reaches 64 KiB', async () => {
    const { writes, stream, release } = fakeStream(true);
    const writer = new SseWriter(stream, 60_000);
    const encode = (text: string) => JSON.stringify(text);
    let waited = 0;
    for (let index = 0; index < 70; index += 1) {
      const queued = writer.mergeable('x'.repeat(1024), encode);
      let settled = false;
      void queued.then(() => {
        settled = true;
      });
      await Promise.resolve();
      if (!settled) {
        waited += 1;
        release();
        await queued;
      }
    }
    await writer.finish();
    expect(waited).toBe(1);
    expect(writes).toEqual([`data: "${'x'.repeat(64 * 1024)}"\n\n`, `data: "${'x'.repeat(6 * 1024)}"\n\n`]);
  });

  it('gives a merged frame its event line, and closeMerge closes it before the next number is taken', async () => {
    const { writes, stream } = fakeStream();
    const writer = new SseWriter(stream, 60_000);
    let sequence = 0;
    const encode = (text: string) => JSON.stringify({ delta: text, n: sequence++ });
    void writer.mergeable('a', encode, 'text');
    void writer.mergeable('b', encode, 'text');
    writer.closeMerge();
    void writer.frame({ n: sequence++ }, { event: 'other' });
    await writer.finish();
    expect(writes).toEqual(['event: text\ndata: {"delta":"ab","n":0}\n\nevent: other\ndata: {"n":1}\n\n']);
  });
});
