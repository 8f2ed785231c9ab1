import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_BACK_PRESSURE, GatewayConnection } from './connection.js';
import type { Transport } from './wire/index.js';

/** A transport that records each batch written and when (fake time), and is never congested. */
function recordingTransport(buffered = () => 0): {
  transport: Transport;
  writes: { at: number; frames: unknown[] }[];
} {
  const writes: { at: number; frames: unknown[] }[] = [];
  const transport: Transport = {
    readable: new ReadableStream(),
    writable: new WritableStream({
      write(frame) {
        writes.push({ at: Date.now(), frames: [frame] });
      },
    }),
    writeMany(messages) {
      writes.push({ at: Date.now(), frames: [...messages] });
    },
    bufferedAmount: buffered,
    close: async () => {},
    closed: new Promise(() => {}),
    kind: 'stdio',
  };
  return { transport, writes };
}

describe('GatewayConnection delta batches (spec tui-gateway §1.4)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes a delta after a quiet interval at once, and batches the ones that follow it until the interval ends', () => {
    const { transport, writes } = recordingTransport();
    const connection = new GatewayConnection(transport, DEFAULT_BACK_PRESSURE, () => {});
    const start = Date.now();
    connection.send('d1', true);
    expect(writes).toEqual([{ at: start, frames: ['d1'] }]);
    vi.advanceTimersByTime(5);
    connection.send('d2', true);
    vi.advanceTimersByTime(5);
    connection.send('d3', true);
    expect(writes).toHaveLength(1);
    vi.advanceTimersByTime(23);
    expect(writes[1]).toEqual({ at: start + 33, frames: ['d2', 'd3'] });
    // Quiet for longer than the interval: the next delta goes out as it comes.
    vi.advanceTimersByTime(100);
    connection.send('d4', true);
    expect(writes[2]).toEqual({ at: start + 133, frames: ['d4'] });
  });

  it('keeps delta batches at least one interval apart on a steady stream, every delta in order', () => {
    const { transport, writes } = recordingTransport();
    const connection = new GatewayConnection(transport, DEFAULT_BACK_PRESSURE, () => {});
    const sent: string[] = [];
    for (let index = 0; index < 40; index += 1) {
      sent.push(`d${index}`);
      connection.send(`d${index}`, true);
      vi.advanceTimersByTime(7);
    }
    vi.advanceTimersByTime(DEFAULT_BACK_PRESSURE.coalesceMs);
    expect(writes.flatMap((write) => write.frames)).toEqual(sent);
    for (let index = 1; index < writes.length; index += 1) {
      expect((writes[index]?.at ?? 0) - (writes[index - 1]?.at ?? 0)).toBeGreaterThanOrEqual(
        DEFAULT_BACK_PRESSURE.coalesceMs,
      );
    }
    // 40 deltas over 280 ms: about one batch per interval, not one write per delta.
    expect(writes.length).toBeLessThanOrEqual(10);
  });

  it('writes held deltas before a control frame, and a control frame does not hold back the next delta', () => {
    const { transport, writes } = recordingTransport();
    const connection = new GatewayConnection(transport, DEFAULT_BACK_PRESSURE, () => {});
    const start = Date.now();
    connection.send('start');
    expect(writes).toEqual([{ at: start, frames: ['start'] }]);
    // The turn's first delta follows its control frames at once.
    vi.advanceTimersByTime(1);
    connection.send('d1', true);
    expect(writes[1]).toEqual({ at: start + 1, frames: ['d1'] });
    vi.advanceTimersByTime(1);
    connection.send('d2', true);
    connection.send('complete');
    expect(writes[2]).toEqual({ at: start + 2, frames: ['d2', 'complete'] });
    // d2 went out in the control frame's write: the next batch waits one interval from there.
    connection.send('d3', true);
    expect(writes).toHaveLength(3);
    vi.advanceTimersByTime(DEFAULT_BACK_PRESSURE.coalesceMs);
    expect(writes[3]).toEqual({ at: start + 2 + DEFAULT_BACK_PRESSURE.coalesceMs, frames: ['d3'] });
  });

  it('holds deltas while the peer is congested, keeps the newest 512, and writes them once it drains', () => {
    let buffered = DEFAULT_BACK_PRESSURE.congestionBytes + 1;
    const { transport, writes } = recordingTransport(() => buffered);
    const connection = new GatewayConnection(transport, DEFAULT_BACK_PRESSURE, () => {});
    for (let index = 0; index < 600; index += 1) {
      connection.send(`d${index}`, true);
      vi.advanceTimersByTime(1);
    }
    expect(writes).toHaveLength(0);
    buffered = 0;
    vi.advanceTimersByTime(10);
    expect(writes).toHaveLength(1);
    expect(writes[0]?.frames).toEqual(Array.from({ length: 512 }, (_, index) => `d${index + 88}`));
    // Written just now: the next delta waits for the interval.
    connection.send('after', true);
    expect(writes).toHaveLength(1);
    vi.advanceTimersByTime(DEFAULT_BACK_PRESSURE.coalesceMs);
    expect(writes[1]?.frames).toEqual(['after']);
  });
});
