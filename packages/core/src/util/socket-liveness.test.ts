import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pingSockets } from './socket-liveness.js';

class FakeSocket extends EventEmitter {
  pings = 0;
  terminated = false;
  constructor(private readonly answers: boolean) {
    super();
  }
  ping(): void {
    this.pings += 1;
    if (this.answers) queueMicrotask(() => this.emit('pong'));
  }
  terminate(): void {
    this.terminated = true;
  }
}

describe('pingSockets', () => {
  afterEach(() => vi.useRealTimers());

  it('terminates a socket that missed a ping and keeps one that answers', async () => {
    vi.useFakeTimers();
    const live = new FakeSocket(true);
    const gone = new FakeSocket(false);
    const stop = pingSockets({ clients: [live, gone] }, 1_000);
    for (let tick = 0; tick < 3; tick += 1) await vi.advanceTimersByTimeAsync(1_000);
    stop();
    expect(live.terminated).toBe(false);
    expect(live.pings).toBe(3);
    expect(gone.terminated).toBe(true);
    expect(gone.pings).toBe(1);
  });

  it('does nothing when the interval is 0', async () => {
    vi.useFakeTimers();
    const socket = new FakeSocket(false);
    pingSockets({ clients: [socket] }, 0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(socket.pings).toBe(0);
  });
});
