import type { EventEnvelope } from './wire/index.js';

/**
 * The recorded events of one session, oldest first, in a circular buffer that grows when full: the ring drops its
 * oldest event for every new one once at its cap, and shifting an array for that moved the whole array's slots on
 * every streamed delta (ADR 0024). Each event's size and process-wide emission order (to find the oldest event
 * across rings) sit in parallel slots, so recording one allocates nothing.
 */
class EventQueue {
  private params: (EventEnvelope | undefined)[] = new Array(16);
  /**
   * For a delta that follows a delta of the same type: its text, its seq in `seqs`, and in `params` the first delta
   * of the run, from which the envelope is made again when read. A 512-event ring of envelope objects promoted two
   * objects per delta of a long answer into the old generation; a string per delta is what is left (ADR 0059).
   */
  private texts: (string | null | undefined)[] = new Array(16);
  private seqs = new Float64Array(16);
  private bytes = new Float64Array(16);
  private order = new Float64Array(16);
  private head = 0;
  length = 0;

  push(params: EventEnvelope, bytes: number, order: number): void {
    if (this.length === this.params.length) this.grow();
    const slot = (this.head + this.length) % this.params.length;
    const run = this.length > 0 ? this.params[(slot + this.params.length - 1) % this.params.length] : undefined;
    if (
      run !== undefined &&
      isDelta(params) &&
      isDelta(run) &&
      run.type === params.type &&
      run.session_id === params.session_id
    ) {
      this.params[slot] = run;
      this.texts[slot] = params.payload.text as string;
      this.seqs[slot] = params.seq ?? 0;
    } else {
      this.params[slot] = params;
      this.texts[slot] = null;
    }
    this.bytes[slot] = bytes;
    this.order[slot] = order;
    this.length += 1;
  }

  /** The envelope in a slot, made again for a delta kept as its text. */
  private at(slot: number): EventEnvelope {
    const params = this.params[slot] as EventEnvelope;
    const text = this.texts[slot];
    if (text === null || text === undefined) return params;
    return { ...params, payload: { ...params.payload, text }, seq: this.seqs[slot] as number };
  }

  /** Size of the oldest event (0 when empty). */
  firstBytes(): number {
    return this.length === 0 ? 0 : (this.bytes[this.head] as number);
  }

  /**
   * Removes the oldest event and returns its seq (undefined when empty). Only the seq: a ring at its cap drops one
   * event per delta, and making the envelope of each dropped delta again cost two objects per delta.
   */
  dropFirst(): number | undefined {
    if (this.length === 0) return undefined;
    const slot = this.head;
    const text = this.texts[slot];
    const seq = text === null || text === undefined ? (this.params[slot]?.seq ?? 0) : (this.seqs[slot] as number);
    this.params[slot] = undefined;
    this.texts[slot] = null;
    this.head = (slot + 1) % this.params.length;
    this.length -= 1;
    return seq;
  }

  /** Emission order of the oldest event, or null when empty. */
  firstOrder(): number | null {
    return this.length === 0 ? null : (this.order[this.head] as number);
  }

  /** The newest event and its emission order, or null when empty. */
  last(): { params: EventEnvelope; order: number } | null {
    if (this.length === 0) return null;
    const slot = (this.head + this.length - 1) % this.params.length;
    return { params: this.at(slot), order: this.order[slot] as number };
  }

  /** The events, oldest first. */
  toArray(): EventEnvelope[] {
    const events: EventEnvelope[] = [];
    for (let index = 0; index < this.length; index += 1) events.push(this.at((this.head + index) % this.params.length));
    return events;
  }

  private grow(): void {
    const capacity = this.params.length * 2;
    const params: (EventEnvelope | undefined)[] = new Array(capacity);
    const texts: (string | null | undefined)[] = new Array(capacity);
    const seqs = new Float64Array(capacity);
    const bytes = new Float64Array(capacity);
    const order = new Float64Array(capacity);
    for (let index = 0; index < this.length; index += 1) {
      const slot = (this.head + index) % this.params.length;
      params[index] = this.params[slot];
      texts[index] = this.texts[slot];
      seqs[index] = this.seqs[slot] as number;
      bytes[index] = this.bytes[slot] as number;
      order[index] = this.order[slot] as number;
    }
    this.params = params;
    this.texts = texts;
    this.seqs = seqs;
    this.bytes = bytes;
    this.order = order;
    this.head = 0;
  }
}

/** A delta event whose payload is its text alone: kept as the text when it follows one of its kind. */
function isDelta(params: EventEnvelope): boolean {
  if (params.type !== 'message.delta' && params.type !== 'reasoning.delta') return false;
  const payload = params.payload;
  if (typeof payload.text !== 'string') return false;
  for (const key in payload) if (key !== 'text') return false;
  return true;
}

interface Ring {
  events: EventQueue;
  bytes: number;
  evictedThrough: number;
}

/** Limits of the replay ring (§9.3). */
export interface ReplayLimits {
  perSessionEvents: number;
  perSessionBytes: number;
  sessions: number;
  totalBytes: number;
}

const DEFAULT_LIMITS: ReplayLimits = {
  perSessionEvents: 512,
  perSessionBytes: 4 * 1024 * 1024,
  sessions: 64,
  totalBytes: 64 * 1024 * 1024,
};

/**
 * The per-session replay rings and seq counters of one process (§9.3). Counters never restart, even
 * when a ring is evicted or its session is finalized, so a watermark stays meaningful.
 */
export class ReplayRings {
  private readonly counters = new Map<string, number>();
  private readonly rings = new Map<string, Ring>();
  private readonly evictedMarks = new Map<string, number>();
  private totalBytes = 0;
  private readonly limits: ReplayLimits;

  constructor(limits: Partial<ReplayLimits> = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** Issues the next seq of a session. */
  nextSeq(sessionId: string): number {
    const next = (this.counters.get(sessionId) ?? 0) + 1;
    this.counters.set(sessionId, next);
    return next;
  }

  /**
   * Records an emitted event. `bytes` is its encoded size when the caller already encoded it (the
   * gateway encodes each event frame once, ADR 0023).
   */
  record(params: EventEnvelope, bytes = Buffer.byteLength(JSON.stringify(params))): void {
    const sessionId = params.session_id;
    const seq = params.seq ?? 0;
    if (bytes > this.limits.perSessionBytes) {
      this.raiseMark(sessionId, seq);
      return;
    }
    let ring = this.rings.get(sessionId);
    if (!ring) {
      if (this.rings.size >= this.limits.sessions) this.evictOldestRing();
      ring = { events: new EventQueue(), bytes: 0, evictedThrough: this.evictedMarks.get(sessionId) ?? 0 };
      this.rings.set(sessionId, ring);
    }
    ring.events.push(params, bytes, globalOrder++);
    ring.bytes += bytes;
    this.totalBytes += bytes;
    while (ring.events.length > this.limits.perSessionEvents || ring.bytes > this.limits.perSessionBytes) {
      this.dropOldest(ring);
    }
    while (this.totalBytes > this.limits.totalBytes) {
      let oldest: { id: string; ring: Ring; seqTime: number } | null = null;
      for (const [id, candidate] of this.rings) {
        const first = candidate.events.firstOrder();
        if (first === null) continue;
        // Oldest event across the process: rings are independent, so compare by insertion via a global order.
        if (!oldest || first < oldest.seqTime) oldest = { id, ring: candidate, seqTime: first };
      }
      if (!oldest) break;
      this.dropOldest(oldest.ring);
    }
  }

  /** Events after `lastSeen`, for `session.events.since`. */
  since(sessionId: string, lastSeen: number): { events: EventEnvelope[]; latestSeq: number; truncated: boolean } {
    const latestSeq = this.counters.get(sessionId) ?? 0;
    const ring = this.rings.get(sessionId);
    const evictedThrough = ring?.evictedThrough ?? this.evictedMarks.get(sessionId) ?? 0;
    const events = (ring?.events.toArray() ?? []).filter((params) => (params.seq ?? 0) > lastSeen);
    return { events, latestSeq, truncated: lastSeen < evictedThrough || lastSeen > latestSeq };
  }

  private dropOldest(ring: Ring): void {
    const bytes = ring.events.firstBytes();
    const removedSeq = ring.events.dropFirst();
    if (removedSeq === undefined) return;
    ring.bytes -= bytes;
    this.totalBytes -= bytes;
    ring.evictedThrough = Math.max(ring.evictedThrough, removedSeq);
    // evictedMarks is read only when the ring is gone; evictOldestRing writes it when it drops one.
  }

  private raiseMark(sessionId: string, seq: number): void {
    const ring = this.rings.get(sessionId);
    if (ring) ring.evictedThrough = Math.max(ring.evictedThrough, seq);
    this.evictedMarks.set(sessionId, Math.max(this.evictedMarks.get(sessionId) ?? 0, seq));
  }

  private evictOldestRing(): void {
    let victim: { id: string; order: number } | null = null;
    for (const [id, ring] of this.rings) {
      const last = ring.events.last();
      const order = last ? last.order : -1;
      if (!victim || order < victim.order) victim = { id, order };
    }
    if (!victim) return;
    const ring = this.rings.get(victim.id);
    if (!ring) return;
    this.totalBytes -= ring.bytes;
    const newest = ring.events.last()?.params.seq ?? ring.evictedThrough;
    this.evictedMarks.set(victim.id, Math.max(ring.evictedThrough, newest));
    this.rings.delete(victim.id);
  }
}

let globalOrder = 0;
