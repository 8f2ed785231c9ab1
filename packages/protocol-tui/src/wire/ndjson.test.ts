import { describe, expect, it } from 'vitest';
import { createNdjsonDecoder, encodeFrame, type InboundFrame } from './ndjson.js';

async function decode(chunks: (string | Uint8Array)[], maxLineBytes?: number): Promise<InboundFrame[]> {
  const stream = new ReadableStream<string | Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  }).pipeThrough(createNdjsonDecoder(maxLineBytes === undefined ? {} : { maxLineBytes }));
  const out: InboundFrame[] = [];
  for await (const frame of stream as unknown as AsyncIterable<InboundFrame>) out.push(frame);
  return out;
}

describe('NDJSON codec', () => {
  it('splits on LF only: U+2028 inside a string does not split a frame', async () => {
    const frames = await decode(['{"a":"x\u2028y"}\n{"b":1}\n']);
    expect(frames).toEqual([
      { kind: 'message', message: { a: 'x\u2028y' } },
      { kind: 'message', message: { b: 1 } },
    ]);
  });

  it('joins frames split across chunks, even inside a multi-byte character', async () => {
    const bytes = new TextEncoder().encode('{"text":"héllo"}\n');
    const frames = await decode([bytes.subarray(0, 10), bytes.subarray(10)]);
    expect(frames).toEqual([{ kind: 'message', message: { text: 'héllo' } }]);
  });

  it('trims CR and whitespace, skips blank lines, reports bad JSON as data', async () => {
    const frames = await decode(['  {"a":1}\r\n\n\n{bad\n']);
    expect(frames[0]).toEqual({ kind: 'message', message: { a: 1 } });
    expect(frames[1]?.kind).toBe('parse_error');
    expect(frames).toHaveLength(2);
  });

  it('caps the line size and recovers at the next LF', async () => {
    const frames = await decode([`{"a":"${'x'.repeat(100)}"}\n{"ok":true}\n`], 50);
    expect(frames[0]?.kind).toBe('parse_error');
    expect(frames[1]).toEqual({ kind: 'message', message: { ok: true } });
  });

  it('reads a chunk of many frames, with an over-long line between good ones, and a frame split after it', async () => {
    const good = (index: number) => `{"i":${index}}`;
    const first = `${good(1)}\n${good(2)}\n{"a":"${'x'.repeat(80)}"}\n${good(3)}\n{"i":`;
    const frames = await decode([first, '4}\n', `${good(5)}\n`], 50);
    expect(frames).toEqual([
      { kind: 'message', message: { i: 1 } },
      { kind: 'message', message: { i: 2 } },
      { kind: 'parse_error', reason: 'line exceeds 50 bytes' },
      { kind: 'message', message: { i: 3 } },
      { kind: 'message', message: { i: 4 } },
      { kind: 'message', message: { i: 5 } },
    ]);
  });

  it('drops a line that grows over the cap across chunks, up to its LF', async () => {
    const frames = await decode(['{"a":"', 'x'.repeat(40), 'x'.repeat(40), '"}\n{"ok":1}\n'], 50);
    expect(frames).toEqual([
      { kind: 'parse_error', reason: 'line exceeds 50 bytes' },
      { kind: 'message', message: { ok: 1 } },
    ]);
  });

  it('decodes a broken UTF-8 sequence before an LF as that line alone would, and reads a last line without LF', async () => {
    const encoder = new TextEncoder();
    const broken = Uint8Array.of(...encoder.encode('{"t":"a'), 0xc3, ...encoder.encode('"}\n{"t":"é"}\n{"end":true}'));
    const frames = await decode([broken]);
    expect(frames).toEqual([
      { kind: 'message', message: { t: 'a\ufffd' } },
      { kind: 'message', message: { t: 'é' } },
      { kind: 'message', message: { end: true } },
    ]);
  });

  it('encodes without raw line breaks and keeps non-ASCII raw', () => {
    const line = encodeFrame({ text: 'a\nb\u2028é' });
    expect(line.includes('\n')).toBe(false);
    expect(line).toContain('é');
  });
});
