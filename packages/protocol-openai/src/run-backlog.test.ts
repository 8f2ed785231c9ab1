import { describe, expect, it } from 'vitest';
import { type BacklogEvent, RunBacklog } from './run-backlog.js';

/** A run's events as `RunRegistry.emit` makes them: deltas in stretches, other events between them. */
function events(count: number): BacklogEvent[] {
  const made: BacklogEvent[] = [];
  for (let seq = 0; seq < count; seq += 1) {
    const base = { event: '', run_id: 'run_1', timestamp: 1_700_000_000 + seq / 1000, seq };
    if (seq % 700 === 0) made.push({ ...base, event: 'tool.started', tool: 'terminal', tool_call_id: `call_${seq}` });
    else if (seq % 300 < 40) made.push({ ...base, event: 'reasoning.delta', delta: `thinking ${seq} ` });
    else made.push({ ...base, event: 'message.delta', delta: `text ${seq} ` });
  }
  return made;
}

describe('RunBacklog', () => {
  it('returns exactly the events a plain array of the last 1,000 would, field for field and in order', () => {
    const backlog = new RunBacklog(1_000);
    const plain: BacklogEvent[] = [];
    for (const event of events(3_210)) {
      backlog.push(event);
      plain.push(event);
      if (plain.length > 1_000) plain.shift();
      if (event.seq % 97 !== 0) continue;
      expect(backlog.length).toBe(plain.length);
      expect(backlog.firstSeq()).toBe(plain[0]?.seq);
      expect(backlog.last()).toBe(plain.at(-1));
      // The same JSON, so the same frames on the wire (key order included).
      for (const from of [0, event.seq - 1_500, event.seq - 999, event.seq - 300, event.seq, event.seq + 1])
        expect(JSON.stringify(backlog.since(from))).toBe(JSON.stringify(plain.filter((kept) => kept.seq >= from)));
    }
  });

  it('keeps a delta carrying other fields as it is', () => {
    const backlog = new RunBacklog(10);
    const odd = { event: 'message.delta', run_id: 'run_1', timestamp: 1, seq: 0, delta: 'a', extra: true };
    backlog.push(odd);
    backlog.push({ event: 'message.delta', run_id: 'run_1', timestamp: 2, seq: 1, delta: 'b' });
    expect(backlog.since(0)).toEqual([
      odd,
      { event: 'message.delta', run_id: 'run_1', timestamp: 2, seq: 1, delta: 'b' },
    ]);
  });

  it('keeps at most its text limit of delta text, oldest events first out, and always the newest event', () => {
    const backlog = new RunBacklog(1_000, 100);
    const delta = (seq: number, text: string): BacklogEvent => ({
      event: 'message.delta',
      run_id: 'run_1',
      timestamp: seq,
      seq,
      delta: text,
    });
    for (let seq = 0; seq < 10; seq += 1) backlog.push(delta(seq, 'x'.repeat(30)));
    // 3 deltas of 30 characters fit in 100; the older 7 went.
    expect(backlog.length).toBe(3);
    expect(backlog.firstSeq()).toBe(7);
    expect(backlog.since(0).map((event) => event.seq)).toEqual([7, 8, 9]);
    // Other events carry no delta text and stay while the deltas after them fit.
    backlog.push({ event: 'tool.started', run_id: 'run_1', timestamp: 10, seq: 10, tool: 'terminal' });
    expect(backlog.since(0).map((event) => event.seq)).toEqual([7, 8, 9, 10]);
    // One delta larger than the limit is still kept, alone: a reader gets the newest event.
    backlog.push(delta(11, 'y'.repeat(500)));
    expect(backlog.since(0).map((event) => event.seq)).toEqual([11]);
    expect(backlog.last()?.seq).toBe(11);
  });

  it('is empty before the first event', () => {
    const backlog = new RunBacklog(10);
    expect([backlog.length, backlog.firstSeq(), backlog.last(), backlog.since(0)]).toEqual([
      0,
      undefined,
      undefined,
      [],
    ]);
  });
});
