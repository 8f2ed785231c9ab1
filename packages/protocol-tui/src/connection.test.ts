import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_BACK_PRESSURE, type DeltaParts, GatewayConnection } from './connection.js';
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

  /** A delta frame of one stream as the gateway state hands it over: a frame and the parts to join it by. */
  function deltaOf(key: string, text: string, seq: number): [unknown, DeltaParts] {
    const rebuild = (joined: string, firstSeq: number | null = null) =>
      firstSeq === null ? { key, text: joined, seq } : { key, text: joined, seq, first_seq: firstSeq };
    return [rebuild(text), { key, text, seq, rebuild }];
  }

  it('joins the deltas held while the peer is congested into one frame with all their text, the newest seq and the first one’s', () => {
    let buffered = DEFAULT_BACK_PRESSURE.congestionBytes + 1;
    const { transport, writes } = recordingTransport(() => buffered);
    const connection = new GatewayConnection(transport, DEFAULT_BACK_PRESSURE, () => {});
    let expected = '';
    for (let index = 0; index < 5_000; index += 1) {
      const character = String.fromCharCode(97 + (index % 26));
      expected += character;
      connection.send(...deltaOf('message.delta s1', character, index + 1));
      vi.advanceTimersByTime(index % 10 === 0 ? 1 : 0);
    }
    expect(writes).toHaveLength(0);
    buffered = 0;
    vi.advanceTimersByTime(10);
    expect(writes.flatMap((write) => write.frames)).toEqual([
      { key: 'message.delta s1', text: expected, seq: 5_000, first_seq: 1 },
    ]);
  });

  it('never joins across streams or across a control frame, and keeps their order', () => {
    let buffered = DEFAULT_BACK_PRESSURE.congestionBytes + 1;
    const { transport, writes } = recordingTransport(() => buffered);
    const connection = new GatewayConnection(transport, DEFAULT_BACK_PRESSURE, () => {});
    connection.send(...deltaOf('reasoning.delta s1', 'th', 1));
    connection.send(...deltaOf('reasoning.delta s1', 'ink', 2));
    connection.send(...deltaOf('message.delta s1', 'he', 3));
    connection.send(...deltaOf('message.delta s2', 'other', 1));
    connection.send(...deltaOf('message.delta s1', 'llo', 4));
    connection.send('control');
    connection.send(...deltaOf('message.delta s1', '!', 5));
    connection.send(...deltaOf('message.delta s1', '!', 6));
    buffered = 0;
    vi.advanceTimersByTime(10);
    expect(writes.flatMap((write) => write.frames)).toEqual([
      { key: 'reasoning.delta s1', text: 'think', seq: 2, first_seq: 1 },
      { key: 'message.delta s1', text: 'he', seq: 3 },
      { key: 'message.delta s2', text: 'other', seq: 1 },
      { key: 'message.delta s1', text: 'llo', seq: 4 },
      'control',
      { key: 'message.delta s1', text: '!!', seq: 6, first_seq: 5 },
    ]);
  });

  it('joins the deltas queued in one interval when the peer turns out congested at its end, instead of dropping them', () => {
    let buffered = 0;
    const { transport, writes } = recordingTransport(() => buffered);
    const connection = new GatewayConnection(transport, DEFAULT_BACK_PRESSURE, () => {});
    // The first delta after a quiet interval goes out at once; the next 3,000 wait for the interval's end.
    connection.send(...deltaOf('message.delta s1', '>', 1));
    let expected = '';
    for (let index = 0; index < 3_000; index += 1) {
      const character = String.fromCharCode(97 + (index % 26));
      expected += character;
      connection.send(...deltaOf('message.delta s1', character, index + 2));
    }
    // The reader fell behind meanwhile: at the interval's end the deltas are held, more than 512 of them.
    buffered = DEFAULT_BACK_PRESSURE.congestionBytes + 1;
    vi.advanceTimersByTime(DEFAULT_BACK_PRESSURE.coalesceMs);
    expect(writes).toHaveLength(1);
    buffered = 0;
    vi.advanceTimersByTime(10);
    expect(writes.flatMap((write) => write.frames)).toEqual([
      { key: 'message.delta s1', text: '>', seq: 1 },
      { key: 'message.delta s1', text: expected, seq: 3_001, first_seq: 2 },
    ]);
  });

  it('holds at most the congestion bound of joined text for a peer that stopped reading, the newest text kept', () => {
    const options = { ...DEFAULT_BACK_PRESSURE, congestionBytes: 10_000 };
    let buffered = options.congestionBytes + 1;
    const { transport, writes } = recordingTransport(() => buffered);
    const connection = new GatewayConnection(transport, options, () => {});
    let sent = '';
    for (let index = 0; index < 2_000; index += 1) {
      const chunk = `${index}`.padStart(50, '.');
      sent += chunk;
      connection.send(...deltaOf('message.delta s1', chunk, index + 1));
    }
    buffered = 0;
    vi.advanceTimersByTime(10);
    const frames = writes.flatMap((write) => write.frames) as { text: string; seq: number; first_seq?: number }[];
    expect(frames).toHaveLength(1);
    expect(frames[0]?.seq).toBe(2_000);
    // Text was dropped: the frame does not claim the seqs it no longer covers, so the client sees the gap.
    expect(frames[0]?.first_seq).toBeUndefined();
    expect(frames[0]?.text.length).toBeLessThanOrEqual(options.congestionBytes);
    expect(frames[0]?.text.length).toBeGreaterThan(options.congestionBytes - 50);
    expect(sent.endsWith(frames[0]?.text ?? 'missing')).toBe(true);
  });
});
