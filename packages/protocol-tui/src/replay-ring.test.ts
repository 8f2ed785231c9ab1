import { describe, expect, it } from 'vitest';
import { ReplayRings } from './replay-ring.js';

function record(rings: ReplayRings, session: string, size = 10) {
  const params = { type: 'x', session_id: session, payload: { text: 'y'.repeat(size) }, seq: rings.nextSeq(session) };
  rings.record(params);
  return params;
}

describe('replay rings', () => {
  it('keeps at most the per-session event count and reports the gap', () => {
    const rings = new ReplayRings({ perSessionEvents: 3 });
    for (let index = 0; index < 5; index += 1) record(rings, 's');
    const replay = rings.since('s', 0);
    expect(replay.events.map((event) => event.seq)).toEqual([3, 4, 5]);
    expect(replay.truncated).toBe(true);
    expect(rings.since('s', 2).truncated).toBe(false);
    expect(rings.since('s', 9).truncated).toBe(true);
  });

  it('evicts the ring whose newest event is oldest when the session cap is reached', () => {
    const rings = new ReplayRings({ sessions: 2 });
    record(rings, 'a');
    record(rings, 'b');
    record(rings, 'c');
    expect(rings.since('a', 0)).toEqual({ events: [], latestSeq: 1, truncated: true });
    expect(rings.since('b', 0).events).toHaveLength(1);
  });

  it('never records an event larger than the per-session byte cap, but counts its seq', () => {
    const rings = new ReplayRings({ perSessionBytes: 100 });
    record(rings, 's', 500);
    expect(rings.since('s', 0)).toEqual({ events: [], latestSeq: 1, truncated: true });
  });

  it('answers an unknown session with latest_seq 0', () => {
    const rings = new ReplayRings();
    expect(rings.since('none', 0)).toEqual({ events: [], latestSeq: 0, truncated: false });
    expect(rings.since('none', 1).truncated).toBe(true);
  });

  it('keeps the newest events in order as its buffer wraps around and grows', () => {
    const rings = new ReplayRings({ perSessionEvents: 40, perSessionBytes: 100 * 40 });
    for (let index = 0; index < 1000; index += 1) record(rings, 's', index % 7);
    expect(rings.since('s', 0).events.map((event) => event.seq)).toEqual(Array.from({ length: 40 }, (_, i) => 961 + i));
    expect(rings.since('s', 990).events.map((event) => event.seq)).toEqual([
      991, 992, 993, 994, 995, 996, 997, 998, 999, 1000,
    ]);
    // Bigger events: the byte cap, not the count, now decides what stays.
    for (let index = 0; index < 50; index += 1) record(rings, 's', 100);
    const kept = rings.since('s', 0);
    expect(kept.events.length).toBeLessThan(40);
    expect(kept.events.map((event) => event.seq)).toEqual(
      Array.from({ length: kept.events.length }, (_, i) => 1051 - kept.events.length + i),
    );
    expect(kept.truncated).toBe(true);
  });

  it('drops the oldest event across sessions once the total byte cap is reached', () => {
    const rings = new ReplayRings({ totalBytes: 2000 });
    for (let index = 0; index < 10; index += 1) {
      record(rings, 'a', 100);
      record(rings, 'b', 100);
    }
    const a = rings.since('a', 0).events.map((event) => event.seq);
    const b = rings.since('b', 0).events.map((event) => event.seq);
    expect(a.length + b.length).toBeLessThan(20);
    expect(a.at(-1)).toBe(10);
    expect(b.at(-1)).toBe(10);
    expect(Math.abs(a.length - b.length)).toBeLessThanOrEqual(1);
  });

  it('replays runs of deltas exactly as recorded, across the wrap of the ring, runs of two types and other events', () => {
    const rings = new ReplayRings({ perSessionEvents: 300 });
    const recorded: unknown[] = [];
    const emit = (session: string, type: string, payload: Record<string, unknown>) => {
      const params = { type, session_id: session, payload, seq: rings.nextSeq(session) };
      rings.record(params);
      if (session === 's') recorded.push(params);
    };
    for (let index = 0; index < 1_000; index += 1) {
      if (index % 97 === 0) emit('s', 'tool.start', { tool_id: `t${index}`, name: 'x' });
      if (index % 13 === 0) emit('other', 'message.delta', { text: 'o' });
      emit('s', index % 50 < 10 ? 'reasoning.delta' : 'message.delta', {
        text: String.fromCharCode(97 + (index % 26)),
      });
      if (index % 211 === 0) emit('s', 'message.delta', { text: 'x', rendered: 'y' });
    }
    expect(rings.since('s', 0).events).toEqual(recorded.slice(-300));
    const middle = recorded.at(-120) as { seq: number };
    expect(rings.since('s', middle.seq).events).toEqual(recorded.slice(-119));
  });
});
