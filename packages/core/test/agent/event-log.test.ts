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
});
