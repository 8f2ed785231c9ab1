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

  it('encodes without raw line breaks and keeps non-ASCII raw', () => {
    const line = encodeFrame({ text: 'a\nb\u2028é' });
    expect(line.includes('\n')).toBe(false);
    expect(line).toContain('é');
  });
});
