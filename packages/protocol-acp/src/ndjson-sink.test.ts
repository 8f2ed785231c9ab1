import { describe, expect, it } from 'vitest';
import { NdjsonSink, NotificationBatch, TextChunkRun } from './ndjson-sink.js';

function recordingOutput(options: { fail?: boolean; hold?: Promise<void> } = {}) {
  const writes: string[] = [];
  const decoder = new TextDecoder();
  const output = new WritableStream<Uint8Array>({
    async write(chunk) {
      await options.hold;
      if (options.fail) throw new Error('EPIPE');
      writes.push(decoder.decode(chunk));
    },
  });
  return { output, writes };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('NdjsonSink', () => {
  it('sends the messages and raw lines of one event-loop turn as one write, in call order', async () => {
    const { output, writes } = recordingOutput();
    const sink = new NdjsonSink(output);
    const messages = sink.messages.getWriter();
    const bytes = sink.bytes.getWriter();
    void messages.write({ jsonrpc: '2.0', id: 1, result: {} });
    void bytes.write(new TextEncoder().encode('{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}\n'));
    void messages.write({ jsonrpc: '2.0', method: 'session/update', params: { text: 'a\nb' } });
    await turn();
    await turn();
    void messages.write({ jsonrpc: '2.0', id: 2, result: {} });
    await sink.close();
    expect(writes).toEqual([
      '{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}\n{"jsonrpc":"2.0","method":"session/update","params":{"text":"a\\nb"}}\n',
      '{"jsonrpc":"2.0","id":2,"result":{}}\n',
    ]);
  });

  it('writes a notification batch as the exact lines of its notifications sent one by one', async () => {
    const entries = [
      { sessionId: 's', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'a"\n' } } },
      { sessionId: 's', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'é' } } },
    ];
    const one = recordingOutput();
    const oneSink = new NdjsonSink(one.output);
    const oneWriter = oneSink.messages.getWriter();
    for (const params of entries) void oneWriter.write({ jsonrpc: '2.0', method: 'session/update', params });
    await turn();
    await oneSink.close();
    const batched = recordingOutput();
    const batchedSink = new NdjsonSink(batched.output);
    void batchedSink.messages
      .getWriter()
      .write({ jsonrpc: '2.0', method: 'session/update', params: new NotificationBatch(entries) });
    await turn();
    await batchedSink.close();
    expect(batched.writes.join('')).toBe(one.writes.join(''));
    expect(batched.writes.join('').split('\n')).toHaveLength(3);
    // The session-update form encodes `{ sessionId, update }` without building it: the same lines.
    const wrapped = recordingOutput();
    const wrappedSink = new NdjsonSink(wrapped.output);
    void wrappedSink.messages.getWriter().write({
      jsonrpc: '2.0',
      method: 'session/update',
      params: NotificationBatch.sessionUpdates(
        's',
        entries.map((entry) => entry.update),
      ),
    });
    await turn();
    await wrappedSink.close();
    expect(wrapped.writes.join('')).toBe(one.writes.join(''));
    expect(() => JSON.stringify(new NotificationBatch(entries))).toThrow(/only be written by NdjsonSink/);
  });

  it('writes text chunks of every shape exactly as JSON.stringify does (ADR 0072)', async () => {
    // A run of chunks a lagging client gets as one update (ADR 0025): its text joined.
    const run = new TextChunkRun('agent_message_chunk', 'x"', 'm-run');
    run.push('\n');
    run.push('é');
    const withToJSON = { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'j' } };
    Object.defineProperty(withToJSON, 'toJSON', { value: () => ({ replaced: true }) });
    const contentToJSON = { type: 'text', text: 'k' };
    Object.defineProperty(contentToJSON, 'toJSON', { value: () => 'content replaced' });
    const updates: unknown[] = [
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'a"\\\n\u2028é中' }, messageId: 'm"1' },
      { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'think' } },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'u' }, messageId: undefined },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'n' }, messageId: null },
      { sessionUpdate: 'agent_message_chunk', messageId: 'first', content: { type: 'text', text: 'order' } },
      { sessionUpdate: 'agent_message_chunk', content: { text: 'swapped', type: 'text' } },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x', annotations: { priority: 1 } } },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'image', data: 'AA==', mimeType: 'image/png' } },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'extra' }, messageId: 'm', _meta: {} },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 42 } },
      withToJSON,
      { sessionUpdate: 'agent_message_chunk', content: contentToJSON },
      { sessionUpdate: 'plan', entries: [] },
      run,
      new TextChunkRun('agent_thought_chunk', 'alone', undefined),
    ];
    const { output, writes } = recordingOutput();
    const sink = new NdjsonSink(output);
    void sink.messages.getWriter().write({
      jsonrpc: '2.0',
      method: 'session/update',
      params: NotificationBatch.sessionUpdates('s', updates),
    });
    await turn();
    await sink.close();
    const expected = updates
      .map(
        (update) =>
          `${JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's', update } })}\n`,
      )
      .join('');
    expect(writes.join('')).toBe(expected);
    expect(expected).toContain(
      '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x\\"\\né"},"messageId":"m-run"}',
    );
  });

  it('makes writers wait for the output once 1 MiB is queued', async () => {
    let release: () => void = () => {};
    const { output, writes } = recordingOutput({
      hold: new Promise<void>((resolve) => {
        release = resolve;
      }),
    });
    const sink = new NdjsonSink(output);
    const writer = sink.messages.getWriter();
    let settled = false;
    const big = writer.write({ text: 'x'.repeat(1024 * 1024) }).then(() => {
      settled = true;
    });
    await turn();
    expect(settled).toBe(false);
    release();
    await big;
    await sink.close();
    expect(writes).toHaveLength(1);
  });

  it('fails later writes once the output failed', async () => {
    const { output } = recordingOutput({ fail: true });
    const sink = new NdjsonSink(output);
    const writer = sink.messages.getWriter();
    await writer.write({ id: 1 });
    await turn();
    await turn();
    await expect(writer.write({ id: 2 })).rejects.toThrow('EPIPE');
  });
});
