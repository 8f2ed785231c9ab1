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
    // A frame this large goes out as chunks of its own (ADR 0097).
    expect(writes.join('')).toBe(`data: ${'x'.repeat(70_000)}\n\n`);
  });

  it('writes a large frame as chunks of its own, in order with the frames around it', async () => {
    const { writes, stream } = fakeStream();
    const writer = new SseWriter(stream, 60_000);
    const long = 'y'.repeat(20_000);
    void writer.frame({ before: 1 });
    void writer.frame({ text: long }, { event: 'big' });
    void writer.frame({ after: 2 });
    await writer.finish();
    expect(writes.join('')).toBe(
      `data: {"before":1}\n\nevent: big\ndata: ${JSON.stringify({ text: long })}\n\ndata: {"after":2}\n\n`,
    );
    // The frame's JSON is a chunk of its own, not joined to the text around it.
    expect(writes).toContain(JSON.stringify({ text: long }));
  });

  it('encodes a shared text once, as bytes, for every frame that holds it; the frames read as JSON.stringify wrote them', async () => {
    const writes: (string | Uint8Array)[] = [];
    const stream = {
      aborted: false,
      async write(chunk: string | Uint8Array) {
        writes.push(chunk);
      },
    } as unknown as StreamingApi;
    const writer = new SseWriter(stream, 60_000);
    const text = `${'answer '.repeat(4_000)}ünïcode`;
    const part = { type: 'output_text', text };
    const first = { type: 'done', text, part, n: 1 };
    const second = { type: 'completed', output: [{ content: [part] }], copy: `${text}`, other: 'x' };
    void writer.frame(first, { event: 'done', shared: text });
    void writer.frame(second, { event: 'completed', shared: text });
    await writer.finish();
    const decoded = writes.map((chunk) => (typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString())).join('');
    expect(decoded).toBe(
      `event: done\ndata: ${JSON.stringify(first)}\n\nevent: completed\ndata: ${JSON.stringify(second)}\n\n`,
    );
    const byteChunks = writes.filter((chunk) => typeof chunk !== 'string');
    // Four places hold the text (one of them an equal copy); all of them are the one encoding.
    expect(byteChunks).toHaveLength(4);
    expect(new Set(byteChunks).size).toBe(1);
  });

  it('a shared text that needs escaping, or data that holds the mark elsewhere, still reads as JSON.stringify wrote it', async () => {
    const { writes, stream } = fakeStream();
    const writer = new SseWriter(stream, 60_000);
    const text = `"quoted"\\ line\n\u0000 ${'z'.repeat(20_000)} \ud800`;
    const data = { text, again: text, '\u0000hermes-shared-': 'key' };
    void writer.frame(data, { shared: text });
    await writer.finish();
    const decoded = (writes as unknown[])
      .map((chunk) => (typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString()))
      .join('');
    expect(decoded).toBe(`data: ${JSON.stringify(data)}\n\n`);
    expect(JSON.parse(decoded.slice(6))).toEqual(data);
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

  it('hold pace: frames never wait, text merges while the socket is congested, and all of it goes out in order', async () => {
    const { writes, stream, release } = fakeStream(true);
    const writer = new SseWriter(stream, 60_000, { pace: 'hold' });
    const encode = (text: string) => JSON.stringify({ content: text });
    let waited = false;
    for (let turn = 0; turn < 5; turn += 1) {
      const queued = writer.mergeable('x'.repeat(20_000), encode);
      let settled = false;
      void queued.then(() => {
        settled = true;
      });
      await new Promise((resolve) => setImmediate(resolve));
      if (!settled) waited = true;
    }
    void writer.frame({ done: true });
    expect(waited).toBe(false);
    release();
    await writer.finish();
    // The first turn's text went out as it came; the four turns behind the congested write became one frame.
    expect(writes).toEqual([
      `data: {"content":"${'x'.repeat(20_000)}"}\n\n`,
      `data: {"content":"${'x'.repeat(80_000)}"}\n\ndata: {"done":true}\n\n`,
    ]);
  });

  it('hold pace: past the bound behind a congested write, the connection is cut and the writer closes', async () => {
    const { writes, stream } = fakeStream(true);
    let destroyed = 0;
    const told: number[] = [];
    Object.assign(stream, { destroy: () => (destroyed += 1) });
    const writer = new SseWriter(stream, 60_000, {
      pace: 'hold',
      limitBytes: 100_000,
      onOverflow: (held) => told.push(held),
    });
    const encode = (text: string) => JSON.stringify(text);
    // A single frame larger than the bound goes out whole while the socket is free.
    void writer.frame('y'.repeat(150_000));
    for (let index = 0; index < 200 && !writer.closed; index += 1) {
      await writer.mergeable('x'.repeat(1_000), encode);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(writer.closed).toBe(true);
    expect(destroyed).toBe(1);
    expect(told).toHaveLength(1);
    expect(told[0]).toBeGreaterThan(100_000);
    expect(writer.heldBytes()).toBe(0);
    // Nothing is queued once cut.
    await writer.frame({ late: true });
    expect(writer.heldBytes()).toBe(0);
    expect(writes).toEqual([]);
  });

  it('hold pace: a frame larger than the bound is taken behind a congested write when little else is held', async () => {
    const { writes, stream, release } = fakeStream(true);
    let destroyed = 0;
    Object.assign(stream, { destroy: () => (destroyed += 1) });
    const writer = new SseWriter(stream, 60_000, { pace: 'hold', limitBytes: 1_000 });
    void writer.frame({ first: true });
    await new Promise((resolve) => setImmediate(resolve));
    // The socket has not taken the first chunk yet: a long answer's final event still goes in whole.
    void writer.frame({ output: 'y'.repeat(5_000) });
    expect(writer.closed).toBe(false);
    release();
    await writer.finish();
    expect(destroyed).toBe(0);
    expect(writes.join('')).toContain('y'.repeat(5_000));
  });
});
