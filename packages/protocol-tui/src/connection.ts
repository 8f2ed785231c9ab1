import type { Transport } from './wire/index.js';

/** Back-pressure settings (§1.4). */
export interface BackPressureOptions {
  coalesceMs: number;
  congestionBytes: number;
  maxHeldDeltas: number;
  controlDrainMs: number;
}

/** The §1.4 defaults. */
export const DEFAULT_BACK_PRESSURE: BackPressureOptions = {
  coalesceMs: 33,
  congestionBytes: 1024 * 1024,
  maxHeldDeltas: 512,
  controlDrainMs: 10_000,
};

let nextConnectionNumber = 1;

/**
 * What a delta frame is made of, so that held deltas of one stream can join one frame (ADR 0059): frames that
 * share `key` (one session's `message.delta` or `reasoning.delta`) concatenate their `text`, and `rebuild` makes
 * the joined frame, carrying the newest `seq` and, when it holds every joined delta's text, the first one's seq as
 * `first_seq`: a client sees that the seqs in between are in this frame, not missing.
 */
export interface DeltaParts {
  key: string;
  text: string;
  /** The delta's own seq. */
  seq: number;
  rebuild: (text: string, firstSeq: number | null) => unknown;
}

/** One queued frame; a delta held while the peer is congested may gather the text of the deltas after it. */
interface PendingFrame {
  frame: unknown;
  delta: boolean;
  parts: DeltaParts | null;
  /** The texts joined into this frame when more than its own; the frame is rebuilt from them when written. */
  joined: string[] | null;
  /** Characters in `joined`. */
  joinedLength: number;
  /** The seq of the first delta joined into this frame. */
  firstSeq: number | null;
  /** Some of the joined text was dropped (past the bound): the frame no longer covers every seq from `firstSeq`. */
  trimmed: boolean;
}

/**
 * One client connection: its transport, its capability flag, and an outbound writer that batches
 * delta frames, holds them while the peer is congested, and never reorders or drops control frames.
 */
export class GatewayConnection {
  readonly id = `c${nextConnectionNumber++}`;
  readonly transport: Transport;
  /** Whether this connection answers server requests (§4.1). */
  serverRequests: boolean;
  open = true;
  private readonly writer: WritableStreamDefaultWriter<unknown>;
  private readonly pending: PendingFrame[] = [];
  /** Characters of delta text held in joined frames, bounded by the congestion bound. */
  private heldJoinedText = 0;
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  /** When the pending delta batch is due: one interval after the last batch with a delta in it. */
  private batchDueAt = 0;
  /** When delta frames were last written (`-Infinity` before the first). */
  private lastDeltaWriteAt = Number.NEGATIVE_INFINITY;
  private congestionTimer: ReturnType<typeof setTimeout> | null = null;
  private congestedSince: number | null = null;
  private readonly options: BackPressureOptions;
  private readonly onDead: (connection: GatewayConnection) => void;

  constructor(transport: Transport, options: BackPressureOptions, onDead: (connection: GatewayConnection) => void) {
    this.transport = transport;
    this.options = options;
    this.onDead = onDead;
    this.serverRequests = transport.kind !== 'websocket';
    this.writer = transport.writable.getWriter();
    this.writer.closed.catch(() => {});
  }

  /** True for WebSocket connections (the `heartbeat` flag of `gateway.ready`). */
  get isWebSocket(): boolean {
    return this.transport.kind === 'websocket';
  }

  /**
   * Queues a frame. Deltas are batched; a control frame flushes everything before it. A delta given with its
   * {@link DeltaParts} joins the held delta before it while the peer is congested, instead of counting against
   * the held-frame bound: a reader that is behind for a moment still gets every character (ADR 0059).
   */
  send(frame: unknown, delta: boolean | DeltaParts = false): void {
    if (!this.open) return;
    const parts = typeof delta === 'object' ? delta : null;
    // Read once per frame: nothing below writes before the checks that use it.
    const congested = this.isCongested();
    if (parts && (this.congestionTimer || congested) && this.join(parts)) return;
    this.pending.push({
      frame,
      delta: delta !== false,
      parts,
      joined: null,
      joinedLength: 0,
      firstSeq: null,
      trimmed: false,
    });
    if (delta !== false) {
      if (congested) this.dropExcessDeltas();
      // While the peer is congested, the drain retry writes what is held.
      if (this.congestionTimer) return;
      const now = Date.now();
      if (!this.flushTimer) {
        // Delta batches go out at most one interval apart: a delta after a quiet interval (the first
        // of a turn, or of a model streaming slower than the interval) goes out at once, and the
        // ones after it wait for the interval to end.
        this.batchDueAt = this.lastDeltaWriteAt + this.options.coalesceMs;
        if (now >= this.batchDueAt) this.flush();
        else this.flushTimer = setTimeout(() => this.flush(), this.batchDueAt - now);
      } else if (now >= this.batchDueAt) {
        // A busy event loop (a burst of deltas parsed in one go) can hold the timer back well past
        // the interval; the deltas then go out at the interval anyway.
        this.flush();
      }
      return;
    }
    this.flush();
  }

  /** Stops writing; pending frames are discarded. */
  detach(): void {
    this.open = false;
    this.pending.length = 0;
    this.heldJoinedText = 0;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    if (this.congestionTimer) clearTimeout(this.congestionTimer);
    this.flushTimer = null;
    this.congestionTimer = null;
  }

  private isCongested(): boolean {
    return this.transport.bufferedAmount() > this.options.congestionBytes;
  }

  /** Adds a held delta's text to the last queued frame when it is a delta of the same stream. */
  private join(parts: DeltaParts): boolean {
    const last = this.pending[this.pending.length - 1];
    if (!last?.parts || last.parts.key !== parts.key) return false;
    if (!last.joined) {
      last.joined = [last.parts.text];
      last.joinedLength = last.parts.text.length;
      last.firstSeq = last.parts.seq;
      this.heldJoinedText += last.joinedLength;
    }
    last.joined.push(parts.text);
    last.joinedLength += parts.text.length;
    this.heldJoinedText += parts.text.length;
    // The newest delta's rebuild carries the newest seq: a resume from it replays nothing already shown.
    last.parts = parts;
    // A reader that stopped reading costs at most the congestion bound in joined text: past it the oldest held
    // text goes, as the 512-frame bound drops whole frames (message.complete stays authoritative, §1.4).
    while (this.heldJoinedText > this.options.congestionBytes) {
      const oldest = this.pending.find((entry) => entry.delta);
      if (oldest !== last) {
        this.dropOldestDelta();
        continue;
      }
      const dropped = last.joined.length > 1 ? (last.joined.shift() ?? '') : '';
      if (dropped === '') break;
      last.trimmed = true;
      last.joinedLength -= dropped.length;
      this.heldJoinedText -= dropped.length;
    }
    return true;
  }

  /** Drops the oldest held delta frame. */
  private dropOldestDelta(): void {
    const index = this.pending.findIndex((entry) => entry.delta);
    if (index < 0) return;
    const [entry] = this.pending.splice(index, 1);
    if (entry) this.release(entry);
  }

  /** Takes a frame that leaves the queue out of the joined-text count. */
  private release(entry: PendingFrame): void {
    if (entry.joined) this.heldJoinedText -= entry.joinedLength;
  }

  /** The frame to write: a frame that gathered held deltas is rebuilt with all their text. */
  private frameOf(entry: PendingFrame): unknown {
    if (!(entry.joined && entry.parts)) return entry.frame;
    this.release(entry);
    return entry.parts.rebuild(entry.joined.join(''), entry.trimmed ? null : entry.firstSeq);
  }

  private dropExcessDeltas(): void {
    let held = 0;
    for (const entry of this.pending) if (entry.delta) held += 1;
    if (held <= this.options.maxHeldDeltas) return;
    held = this.joinHeldRuns();
    for (; held > this.options.maxHeldDeltas; held -= 1) this.dropOldestDelta();
  }

  /**
   * Joins each run of queued deltas of one stream into its first frame, as {@link join} does for deltas that arrive
   * while the peer is congested, and returns the delta frames left. Deltas queued in one coalescing interval before
   * the peer was seen congested (thousands, from a fast model) were otherwise dropped down to the held-frame bound:
   * a reader that is only behind lost text (ADR 0071). Past the joined-text bound the oldest text still goes.
   */
  private joinHeldRuns(): number {
    let write = 0;
    let held = 0;
    for (let read = 0; read < this.pending.length; read += 1) {
      const entry = this.pending[read] as PendingFrame;
      const previous = write > 0 ? this.pending[write - 1] : undefined;
      if (entry.parts && previous?.parts && previous.parts.key === entry.parts.key) {
        if (!previous.joined) {
          previous.joined = [previous.parts.text];
          previous.joinedLength = previous.parts.text.length;
          previous.firstSeq = previous.parts.seq;
          this.heldJoinedText += previous.joinedLength;
        }
        if (entry.trimmed) previous.trimmed = true;
        const texts = entry.joined ?? [entry.parts.text];
        // A joined entry's text is counted already; only a plain delta's text is added.
        if (!entry.joined) this.heldJoinedText += entry.parts.text.length;
        for (const text of texts) previous.joined.push(text);
        previous.joinedLength += entry.joined ? entry.joinedLength : entry.parts.text.length;
        // The newest delta's rebuild carries the newest seq.
        previous.parts = entry.parts;
        continue;
      }
      this.pending[write] = entry;
      write += 1;
      if (entry.delta) held += 1;
    }
    this.pending.length = write;
    while (this.heldJoinedText > this.options.congestionBytes && held > 0) {
      this.dropOldestDelta();
      held -= 1;
    }
    return held;
  }

  private flush(): void {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    if (!this.open) return;
    const writeMany = this.transport.writeMany;
    let stamped = false;
    while (this.pending.length > 0) {
      if (this.isCongested()) {
        this.waitForDrain();
        return;
      }
      if (!stamped) {
        stamped = true;
        if (this.pending.some((entry) => entry.delta)) this.lastDeltaWriteAt = Date.now();
      }
      if (writeMany) {
        // Everything pending goes out in one call.
        writeMany.call(
          this.transport,
          this.pending.splice(0).map((entry) => this.frameOf(entry)),
        );
        break;
      }
      const entry = this.pending.shift();
      if (!entry) break;
      this.writer.write(this.frameOf(entry)).catch(() => {});
    }
    this.congestedSince = null;
  }

  private waitForDrain(): void {
    const hasControl = this.pending.some((entry) => !entry.delta);
    const now = Date.now();
    if (hasControl) {
      this.congestedSince ??= now;
      if (now - this.congestedSince >= this.options.controlDrainMs) {
        this.detach();
        this.onDead(this);
        return;
      }
    } else {
      this.dropExcessDeltas();
    }
    if (!this.congestionTimer) {
      this.congestionTimer = setTimeout(() => {
        this.congestionTimer = null;
        this.flush();
      }, 10);
    }
  }
}
