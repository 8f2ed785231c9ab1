import { describe, expect, it } from 'vitest';
import { cutOverlongLines } from './serve-acp.js';

async function through(chunks: string[], maxLineBytes: number): Promise<{ text: string; cuts: number }> {
  let cuts = 0;
  const encoder = new TextEncoder();
  const output = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  }).pipeThrough(cutOverlongLines(maxLineBytes, () => (cuts += 1)));
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of output) text += decoder.decode(chunk, { stream: true });
  return { text, cuts };
}

describe('cutOverlongLines', () => {
  it('passes lines up to the cap unchanged, across chunks', async () => {
    expect(await through(['{"a"', ':1}\n{"b":2}\n', '{"c":3}'], 7)).toEqual({
      text: '{"a":1}\n{"b":2}\n{"c":3}',
      cuts: 0,
    });
  });

  it('cuts a longer line at the cap with a NUL and a line feed, drops its rest, and reads on', async () => {
    const { text, cuts } = await through(['{"a":1}\n0123', '456789', 'abcdef\n{"b":2}\n'], 8);
    expect(text).toBe('{"a":1}\n01234567\u0000\n{"b":2}\n');
    expect(cuts).toBe(1);
    // The cut line is no JSON text: the SDK answers it with its parse error.
    expect(() => JSON.parse('01234567\u0000')).toThrow();
  });
});
