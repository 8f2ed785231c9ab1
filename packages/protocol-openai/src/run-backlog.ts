/**
 * A run's in-memory event backlog (spec §19.3, §19.9): its last {@link RunBacklog.limit} events, for readers that
 * attach late or resume with `Last-Event-ID`.
 *
 * Kept as event objects, a streamed answer left one object per delta alive for the next thousand events: long enough
 * to be promoted to the old generation, where each became garbage only a full collection takes. With 20 turns
 * streaming at once that was one of the largest sources of the server's peak memory (ADR 0062, ADR 0069). Here a
 * stretch of consecutive text deltas keeps only their texts (the strings the core's events already hold) and times, in
 * arrays; the events are made again, with the same fields in the same order, when a reader asks for them.
 */

/** One event of a run's stream (spec §19.2): `event`, `run_id`, `timestamp`, `seq`, then its own fields. */
export type BacklogEvent = Record<string, unknown> & { event: string; run_id: string; timestamp: number; seq: number };

/** The events kept as text: their only own field is `delta`. */
const DELTA_EVENTS = new Set(['message.delta', 'reasoning.delta']);

/** Deltas per block: a block is let go of whole once its last delta is older than the backlog keeps. */
const BLOCK_DELTAS = 256;

/** Consecutive deltas of one kind, from `firstSeq`; those before `start` are no longer retained. */
interface DeltaBlock {
  event: string;
  runId: string;
  firstSeq: number;
  start: number;
  texts: string[];
  times: number[];
}

type Entry = BacklogEvent | DeltaBlock;

const isBlock = (entry: Entry): entry is DeltaBlock => 'texts' in entry;

/**
 * Characters of delta text a backlog keeps by default, whatever its event count: the core joins the deltas that reach
 * it in one body chunk into one event (ADR 0078), so 1,000 events no longer bound the text they carry (a fast model's
 * 6 MB answer came as a few hundred events of ~20 KB each, kept an hour per run). 1 Mi characters keeps every event of
 * an ordinary answer; past it the oldest go, as past the event count, and a late reader gets `replay.truncated`.
 */
export const RUN_BACKLOG_TEXT_CHARS = 1024 * 1024;

/**
 * The last `limit` events of one run, and at most `textLimit` characters of their delta text (the newest event is
 * always kept), oldest first; seqs rise by exactly one from event to event.
 */
export class RunBacklog {
  private readonly entries: Entry[] = [];
  private count = 0;
  private textChars = 0;
  private lastEvent: BacklogEvent | undefined;

  constructor(
    readonly limit: number,
    readonly textLimit: number = RUN_BACKLOG_TEXT_CHARS,
  ) {}

  /** How many events are retained. */
  get length(): number {
    return this.count;
  }

  /** Appends the run's next event, letting go of the oldest past the limit. */
  push(event: BacklogEvent): void {
    this.lastEvent = event;
    this.count += 1;
    const delta = event.delta;
    if (DELTA_EVENTS.has(event.event) && typeof delta === 'string' && Object.keys(event).length === 5) {
      this.textChars += delta.length;
      const tail = this.entries.at(-1);
      if (
        tail !== undefined &&
        isBlock(tail) &&
        tail.event === event.event &&
        tail.texts.length < BLOCK_DELTAS &&
        tail.firstSeq + tail.texts.length === event.seq
      ) {
        tail.texts.push(delta);
        tail.times.push(event.timestamp);
      } else
        this.entries.push({
          event: event.event,
          runId: event.run_id,
          firstSeq: event.seq,
          start: 0,
          texts: [delta],
          times: [event.timestamp],
        });
    } else this.entries.push(event);
    if (this.count > this.limit) this.dropOldest();
    while (this.textChars > this.textLimit && this.count > 1) this.dropOldest();
  }

  /** The seq of the oldest retained event. */
  firstSeq(): number | undefined {
    const head = this.entries[0];
    if (head === undefined) return undefined;
    return isBlock(head) ? head.firstSeq + head.start : head.seq;
  }

  /** The newest event. */
  last(): BacklogEvent | undefined {
    return this.count === 0 ? undefined : this.lastEvent;
  }

  /** The retained events from `seq` on (all of them when `seq` is older than the oldest), oldest first. */
  since(seq: number): BacklogEvent[] {
    const events: BacklogEvent[] = [];
    for (const entry of this.entries) {
      if (!isBlock(entry)) {
        if (entry.seq >= seq) events.push(entry);
        continue;
      }
      const from = Math.max(entry.start, seq - entry.firstSeq);
      for (let index = from; index < entry.texts.length; index += 1)
        events.push({
          event: entry.event,
          run_id: entry.runId,
          timestamp: entry.times[index] as number,
          seq: entry.firstSeq + index,
          delta: entry.texts[index],
        });
    }
    return events;
  }

  private dropOldest(): void {
    this.count -= 1;
    const head = this.entries[0] as Entry;
    if (!isBlock(head)) {
      this.entries.shift();
      return;
    }
    // The text goes now, not with its block: the backlog holds no more text than its last `limit` events'.
    this.textChars -= (head.texts[head.start] as string).length;
    head.texts[head.start] = '';
    head.start += 1;
    if (head.start === head.texts.length) this.entries.shift();
  }
}
