import type { AgentEvent, AgentEventPayloads, AgentEventType } from '../events.js';
import type { Clock, Logger } from '../types.js';

/** How many past events an Agent keeps for `eventsSince` (spec/core.md §5.3). */
export const EVENT_BUFFER_SIZE = 2000;

/**
 * The event log of one Agent: assigns `seq`, keeps the last {@link EVENT_BUFFER_SIZE} events for
 * reconnecting clients, and fans every event out to subscribers. Listener errors are logged and
 * ignored so one bad observer never breaks a turn.
 */
export class AgentEventLog {
  private seq = 0;
  /**
   * The last events, as a ring: the event of seq `s` sits at `(s - 1) % EVENT_BUFFER_SIZE` (seqs go up by one per
   * event). Dropping the oldest from the front of an array moved the other 1,999 on every event of a long answer.
   */
  private readonly ring: AgentEvent[] = [];
  /**
   * For a slot holding a delta: its text, its time and its seq, the slot itself pointing at the first delta of its
   * run (same type, session, turn and message). A long answer then keeps a string per delta in the ring rather than
   * an event object: objects that live 2,000 events get promoted out of the young generation, and a 50,000-delta
   * answer filled the old generation with dead ones (ADR 0059). `null` marks a slot holding its event itself.
   */
  private readonly deltaTexts: (string | null)[] = [];
  /**
   * The times of those deltas, made on the first delta that joins a run: 16 KB made with every Agent took an idle
   * gateway session, which never streams, from about 10 to 26 KB of RSS (issue 34's memory row, ADR 0084).
   */
  private deltaTimes: Float64Array | null = null;
  private lastDelta: AgentEvent | null = null;
  private readonly listeners = new Set<(event: AgentEvent) => void>();

  constructor(
    private readonly sessionId: () => string,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Receives every event besides the subscribers, without counting as one (the host's live-session hub). */
    private readonly sink: ((event: AgentEvent) => void) | null = null,
  ) {}

  get lastSeq(): number {
    return this.seq;
  }

  /** Creates, records and delivers one event. */
  emit<T extends AgentEventType>(type: T, turnId: string | null, payload: AgentEventPayloads[T]): AgentEvent {
    this.seq += 1;
    const event = {
      type,
      sessionId: this.sessionId(),
      turnId,
      seq: this.seq,
      ts: this.clock.now(),
      ...payload,
    } as AgentEvent;
    this.keep(event);
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.logger.warn('event listener threw', { error: String(error) });
      }
    }
    this.sink?.(event);
    return event;
  }

  subscribe(listener: (event: AgentEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Whether anyone listens (a gateway or ACP session attached to the agent, a parent watching its child). */
  get observed(): boolean {
    return this.listeners.size > 0;
  }

  /** Buffered events with a larger `seq`. */
  since(seq: number): AgentEvent[] {
    const events: AgentEvent[] = [];
    for (let next = Math.max(seq + 1, this.seq - EVENT_BUFFER_SIZE + 1, 1); next <= this.seq; next += 1) {
      const slot = (next - 1) % EVENT_BUFFER_SIZE;
      const kept = this.ring[slot] as AgentEvent;
      const text = this.deltaTexts[slot];
      events.push(
        text === null || text === undefined
          ? kept
          : ({ ...kept, seq: next, ts: (this.deltaTimes as Float64Array)[slot] as number, text } as AgentEvent),
      );
    }
    return events;
  }

  private keep(event: AgentEvent): void {
    const slot = (event.seq - 1) % EVENT_BUFFER_SIZE;
    const last = this.lastDelta;
    if (
      (event.type === 'message.delta' || event.type === 'reasoning.delta') &&
      last !== null &&
      last.type === event.type &&
      last.sessionId === event.sessionId &&
      last.turnId === event.turnId &&
      (last as { messageId: string }).messageId === event.messageId
    ) {
      this.ring[slot] = last;
      this.deltaTexts[slot] = event.text;
      this.deltaTimes ??= new Float64Array(EVENT_BUFFER_SIZE);
      this.deltaTimes[slot] = event.ts;
      return;
    }
    this.ring[slot] = event;
    this.deltaTexts[slot] = null;
    this.lastDelta = event.type === 'message.delta' || event.type === 'reasoning.delta' ? event : null;
  }
}

/**
 * The events of one turn as an async iterable with an unbounded buffer: the loop never waits for a
 * consumer, and a turn nobody reads still completes (spec/core.md §5.4).
 */
export class TurnEventQueue implements AsyncIterable<AgentEvent> {
  private readonly items: AgentEvent[] = [];
  private waiting: ((result: IteratorResult<AgentEvent>) => void) | null = null;
  private ended = false;
  private iterated = false;

  push(event: AgentEvent): void {
    if (this.ended) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      resolve({ value: event, done: false });
    } else {
      this.items.push(event);
    }
    if (event.type === 'turn.end') this.end();
  }

  private end(): void {
    this.ended = true;
    if (this.waiting && this.items.length === 0) {
      const resolve = this.waiting;
      this.waiting = null;
      resolve({ value: undefined, done: true });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<AgentEvent> {
    if (this.iterated) throw new Error('The events of a turn can be iterated once.');
    this.iterated = true;
    return {
      next: () => {
        const item = this.items.shift();
        if (item !== undefined) return Promise.resolve({ value: item, done: false });
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.waiting = resolve;
        });
      },
      return: () => {
        // Leaving the loop early does not cancel the turn; it only stops this reader.
        this.items.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
