import type { EventEnvelope } from './wire/index.js';

interface Ring {
  /** `order`: the process-wide emission order, to find the oldest event across rings. */
  events: { params: EventEnvelope; bytes: number; order: number }[];
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
      ring = { events: [], bytes: 0, evictedThrough: this.evictedMarks.get(sessionId) ?? 0 };
      this.rings.set(sessionId, ring);
    }
    ring.events.push({ params, bytes, order: globalOrder++ });
    ring.bytes += bytes;
    this.totalBytes += bytes;
    while (ring.events.length > this.limits.perSessionEvents || ring.bytes > this.limits.perSessionBytes) {
      this.dropOldest(ring);
    }
    while (this.totalBytes > this.limits.totalBytes) {
      let oldest: { id: string; ring: Ring; seqTime: number } | null = null;
      for (const [id, candidate] of this.rings) {
        const first = candidate.events[0];
        if (!first) continue;
        // Oldest event across the process: rings are independent, so compare by insertion via a global order.
        if (!oldest || first.order < oldest.seqTime) oldest = { id, ring: candidate, seqTime: first.order };
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
    const events = (ring?.events ?? [])
      .filter((entry) => (entry.params.seq ?? 0) > lastSeen)
      .map((entry) => entry.params);
    return { events, latestSeq, truncated: lastSeen < evictedThrough || lastSeen > latestSeq };
  }

  private dropOldest(ring: Ring): void {
    const removed = ring.events.shift();
    if (!removed) return;
    ring.bytes -= removed.bytes;
    this.totalBytes -= removed.bytes;
    ring.evictedThrough = Math.max(ring.evictedThrough, removed.params.seq ?? 0);
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
      const last = ring.events[ring.events.length - 1];
      const order = last ? last.order : -1;
      if (!victim || order < victim.order) victim = { id, order };
    }
    if (!victim) return;
    const ring = this.rings.get(victim.id);
    if (!ring) return;
    this.totalBytes -= ring.bytes;
    const newest = ring.events[ring.events.length - 1]?.params.seq ?? ring.evictedThrough;
    this.evictedMarks.set(victim.id, Math.max(ring.evictedThrough, newest));
    this.rings.delete(victim.id);
  }
}

let globalOrder = 0;
