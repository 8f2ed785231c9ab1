import { describe, expect, it } from 'vitest';
import { createWebSocketTransport, type WebSocketLike } from './websocket-transport.js';

function fakeSocket(log: string[]): WebSocketLike {
  return {
    send: (data) => log.push(`send ${data}`),
    close: () => {},
    bufferedAmount: 0,
    on: () => undefined,
  };
}

describe('WebSocket transport', () => {
  it('sends each frame of a batch as its own message, with the underlying stream corked around the batch', () => {
    const log: string[] = [];
    const transport = createWebSocketTransport(fakeSocket(log), {
      underlying: { cork: () => log.push('cork'), uncork: () => log.push('uncork') },
    });
    transport.writeMany?.([{ a: 1 }, { b: 2 }, { c: 3 }]);
    transport.writeMany?.([{ d: 4 }]);
    expect(log).toEqual(['cork', 'send {"a":1}', 'send {"b":2}', 'send {"c":3}', 'uncork', 'send {"d":4}']);
  });

  it('sends a batch frame by frame when it has no underlying stream', () => {
    const log: string[] = [];
    const transport = createWebSocketTransport(fakeSocket(log));
    transport.writeMany?.([{ a: 1 }, { b: 2 }]);
    expect(log).toEqual(['send {"a":1}', 'send {"b":2}']);
  });

  it('queues the messages that arrive together as one batch of frames, and flushes a batch when the socket closes', async () => {
    const listeners = new Map<string, (...args: unknown[]) => void>();
    const socket: WebSocketLike = {
      send: () => {},
      close: () => {},
      bufferedAmount: 0,
      on: ((event: string, listener: (...args: unknown[]) => void) => {
        listeners.set(event, listener);
      }) as WebSocketLike['on'],
    };
    const transport = createWebSocketTransport(socket);
    const batches: unknown[][] = [];
    const reading = (async () => {
      for await (const batch of transport.frameBatches as unknown as AsyncIterable<unknown[]>) batches.push(batch);
    })();
    const message = (text: string) => listeners.get('message')?.(Buffer.from(text), false);
    message('{"a":1}');
    message('not json');
    message('{"b":2}');
    await Promise.resolve();
    message('{"c":3}');
    listeners.get('close')?.(1000, Buffer.from(''));
    await reading;
    expect(batches).toEqual([
      [
        { kind: 'message', message: { a: 1 } },
        expect.objectContaining({ kind: 'parse_error' }),
        { kind: 'message', message: { b: 2 } },
      ],
      [{ kind: 'message', message: { c: 3 } }],
    ]);
  });
});
