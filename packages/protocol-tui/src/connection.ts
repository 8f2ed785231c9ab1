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
  private readonly pending: { frame: unknown; delta: boolean }[] = [];
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

  /** Queues a frame. Deltas are batched; a control frame flushes everything before it. */
  send(frame: unknown, delta = false): void {
    if (!this.open) return;
    this.pending.push({ frame, delta });
    if (delta) {
      if (this.isCongested()) this.dropExcessDeltas();
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
    if (this.flushTimer) clearTimeout(this.flushTimer);
    if (this.congestionTimer) clearTimeout(this.congestionTimer);
    this.flushTimer = null;
    this.congestionTimer = null;
  }

  private isCongested(): boolean {
    return this.transport.bufferedAmount() > this.options.congestionBytes;
  }

  private dropExcessDeltas(): void {
    let held = 0;
    for (const entry of this.pending) if (entry.delta) held += 1;
    while (held > this.options.maxHeldDeltas) {
      const index = this.pending.findIndex((entry) => entry.delta);
      if (index < 0) break;
      this.pending.splice(index, 1);
      held -= 1;
    }
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
          this.pending.splice(0).map((entry) => entry.frame),
        );
        break;
      }
      const entry = this.pending.shift();
      if (!entry) break;
      this.writer.write(entry.frame).catch(() => {});
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
