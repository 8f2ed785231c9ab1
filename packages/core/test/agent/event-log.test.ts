import { describe, expect, it } from 'vitest';
import { AgentEventLog, EVENT_BUFFER_SIZE } from '../../src/agent/event-stream.js';
import { silentLogger } from '../../src/logger.js';
import type { Clock } from '../../src/types.js';

const clock = { now: () => 1_000 } as unknown as Clock;

describe('AgentEventLog', () => {
  it('keeps the last EVENT_BUFFER_SIZE events in seq order, and since(n) returns those after n', () => {
    const log = new AgentEventLog(() => 'session-1', clock, silentLogger);
    const total = EVENT_BUFFER_SIZE + 500;
    for (let index = 0; index < total; index += 1) log.emit('notice', null, { key: `k${index}` } as never);
    expect(log.lastSeq).toBe(total);
    const kept = log.since(0);
    expect(kept).toHaveLength(EVENT_BUFFER_SIZE);
    expect(kept.map((event) => event.seq)).toEqual(
      Array.from({ length: EVENT_BUFFER_SIZE }, (_, index) => 501 + index),
    );
    expect((kept[0] as unknown as { key: string }).key).toBe('k500');
    expect(log.since(total - 3).map((event) => event.seq)).toEqual([total - 2, total - 1, total]);
    expect(log.since(total)).toEqual([]);
    expect(log.since(-7)).toEqual(kept);
  });

  it('before the buffer fills, since(0) returns every event', () => {
    const log = new AgentEventLog(() => 'session-1', clock, silentLogger);
    for (let index = 0; index < 3; index += 1) log.emit('notice', null, { key: `k${index}` } as never);
    expect(log.since(0).map((event) => event.seq)).toEqual([1, 2, 3]);
    expect(log.since(1).map((event) => event.seq)).toEqual([2, 3]);
  });

  it('deltas of one message come back from since() with their own text, seq and time, before and after the ring wraps', () => {
    let now = 5_000;
    const ticking = { now: () => now } as unknown as Clock;
    const log = new AgentEventLog(() => 'session-1', ticking, silentLogger);
    const delta = (text: string) => {
      now += 1;
      log.emit('message.delta', 'turn-1', { messageId: 'message-1', text } as never);
    };
    log.emit('notice', null, { key: 'before' } as never);
    for (let index = 0; index < 3; index += 1) delta(`d${index}`);
    const early = log.since(0) as unknown as { type: string; seq: number; ts: number; text?: string }[];
    expect(early.map((event) => [event.type, event.seq, event.ts, event.text])).toEqual([
      ['notice', 1, 5_000, undefined],
      ['message.delta', 2, 5_001, 'd0'],
      ['message.delta', 3, 5_002, 'd1'],
      ['message.delta', 4, 5_003, 'd2'],
    ]);
    for (let index = 3; index < EVENT_BUFFER_SIZE + 10; index += 1) delta(`d${index}`);
    const late = log.since(log.lastSeq - 2) as unknown as { seq: number; ts: number; text: string }[];
    expect(late.map((event) => [event.seq, event.ts, event.text])).toEqual([
      [log.lastSeq - 1, now - 1, `d${EVENT_BUFFER_SIZE + 8}`],
      [log.lastSeq, now, `d${EVENT_BUFFER_SIZE + 9}`],
    ]);
    expect(log.since(0)).toHaveLength(EVENT_BUFFER_SIZE);
  });
});
