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

  it('reads frames split anywhere across chunks, a bad line as a parse error, and a last line without LF at the end', async () => {
    const input = new PassThrough();
    const transport = createStdioTransport({ input, output: sink().output });
    const text = `${Array.from({ length: 200 }, (_, index) => JSON.stringify({ index, text: 'é'.repeat(index % 7) })).join('\n')}\n{bad\n{"last":true}`;
    const bytes = Buffer.from(text);
    for (let offset = 0; offset < bytes.length; offset += 97) input.write(bytes.subarray(offset, offset + 97));
    input.end();
    const frames = [];
    for await (const frame of transport.readable as unknown as AsyncIterable<unknown>) frames.push(frame);
    expect(frames).toHaveLength(202);
    expect(frames.slice(0, 200)).toEqual(
      Array.from({ length: 200 }, (_, index) => ({ kind: 'message', message: { index, text: 'é'.repeat(index % 7) } })),
    );
    expect(frames[200]).toMatchObject({ kind: 'parse_error' });
    expect(frames[201]).toEqual({ kind: 'message', message: { last: true } });
  });

  it('frameBatches: the frames a chunk completes arrive together, and the same frames as readable gives', async () => {
    const input = new PassThrough();
    const transport = createStdioTransport({ input, output: sink().output });
    const batches: unknown[][] = [];
    const reading = (async () => {
      for await (const batch of transport.frameBatches as unknown as AsyncIterable<unknown[]>) batches.push(batch);
    })();
    // One chunk ends three lines; the next ends none (no batch); the one after completes the split line.
    input.write('{"a":1}\n{"b":2}\n{bad\n{"c":');
    await new Promise((resolve) => setImmediate(resolve));
    input.write('3');
    await new Promise((resolve) => setImmediate(resolve));
    input.write('}\n{"last":true}');
    input.end();
    await reading;
    expect(batches).toHaveLength(3);
    expect(batches[0]).toEqual([
      { kind: 'message', message: { a: 1 } },
      { kind: 'message', message: { b: 2 } },
      expect.objectContaining({ kind: 'parse_error' }),
    ]);
    expect(batches[1]).toEqual([{ kind: 'message', message: { c: 3 } }]);
    expect(batches[2]).toEqual([{ kind: 'message', message: { last: true } }]);

    const again = new PassThrough();
    const other = createStdioTransport({ input: again, output: sink().output });
    again.end('{"a":1}\n{"b":2}\n{bad\n{"c":3}\n{"last":true}');
    const frames = [];
    for await (const frame of other.readable as unknown as AsyncIterable<unknown>) frames.push(frame);
    expect(frames).toEqual(batches.flat());
  });

  it('one source: once readable is read, frameBatches is locked, so no frame is read twice', () => {
    const transport = createStdioTransport({ input: new PassThrough(), output: sink().output });
    transport.readable.getReader();
    expect(transport.frameBatches?.locked).toBe(true);
  });
});
