import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createStdioTransport } from './stdio-transport.js';

function sink() {
  const writes: string[] = [];
  return {
    writes,
    output: {
      write(chunk: string, callback?: (error?: Error | null) => void) {
        writes.push(chunk);
        callback?.(null);
        return true;
      },
      on() {
        return undefined;
      },
    },
  };
}

describe('stdio transport', () => {
  it('writeMany sends several frames as one write, each followed by exactly one LF, in order', () => {
    const { writes, output } = sink();
    const transport = createStdioTransport({ input: new PassThrough(), output });
    transport.writeMany?.([{ a: 1 }, { b: 'x\ny' }, { c: [3] }]);
    expect(writes).toEqual(['{"a":1}\n{"b":"x\\ny"}\n{"c":[3]}\n']);
  });

  it('frames through writable and writeMany come out the same', async () => {
    const one = sink();
    const many = sink();
    const frames = [
      { jsonrpc: '2.0', method: 'event', params: { text: 'é\u2028' } },
      { id: 1, result: {} },
    ];
    const writer = createStdioTransport({ input: new PassThrough(), output: one.output }).writable.getWriter();
    for (const frame of frames) await writer.write(frame);
    createStdioTransport({ input: new PassThrough(), output: many.output }).writeMany?.(frames);
    expect(many.writes.join('')).toBe(one.writes.join(''));
  });
});
