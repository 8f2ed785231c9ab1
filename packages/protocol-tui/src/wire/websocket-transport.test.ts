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
});
