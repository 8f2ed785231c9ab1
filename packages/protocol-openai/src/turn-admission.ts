import { ApiError } from './http-error.js';

/** A slot held by an admitted turn until it settles. */
export interface TurnSlot {
  release(): void;
}

/**
 * Draining, the concurrency cap and per-session serialisation for the turn-starting routes (spec §6.3, §6.4, §13.3).
 * In memory, per process.
 */
export class TurnAdmission {
  active = 0;
  draining = false;
  private readonly busy = new Map<string, string>();
  private readonly idle = new Set<() => void>();

  constructor(private readonly cap: () => number) {}

  /** Run id (or other marker) of the turn in flight on a session, if any. */
  busyWith(sessionId: string): string | undefined {
    return this.busy.get(sessionId);
  }

  /** Throws 503 when draining and 429 at the cap (stages 9 and 10). */
  checkCapacity(): void {
    if (this.draining)
      throw new ApiError(503, 'gateway_draining', 'The server is shutting down.', { headers: { 'Retry-After': '1' } });
    const cap = this.cap();
    if (cap > 0 && this.active >= cap)
      throw new ApiError(429, 'rate_limit_exceeded', `Too many concurrent runs (max ${cap})`, {
        headers: { 'Retry-After': '1' },
      });
  }

  /** Admits a turn: capacity, then the session lock. */
  admit(sessionId: string | null, marker: string): TurnSlot {
    this.checkCapacity();
    if (sessionId !== null && this.busy.has(sessionId))
      throw new ApiError(409, 'session_busy', `Session ${sessionId} already has a turn in flight.`);
    this.active += 1;
    if (sessionId !== null) this.busy.set(sessionId, marker);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.active -= 1;
        if (sessionId !== null && this.busy.get(sessionId) === marker) this.busy.delete(sessionId);
        if (this.active === 0) for (const resolve of this.idle) resolve();
      },
    };
  }

  /** Moves the session lock of an admitted turn, when its placement is decided after admission. */
  lockSession(sessionId: string, marker: string): void {
    if (this.busy.has(sessionId))
      throw new ApiError(409, 'session_busy', `Session ${sessionId} already has a turn in flight.`);
    this.busy.set(sessionId, marker);
  }

  /** Drops a session lock taken with `lockSession`. */
  unlockSession(sessionId: string, marker: string): void {
    if (this.busy.get(sessionId) === marker) this.busy.delete(sessionId);
  }

  /**
   * Paces the setup of admitted turns: one begins per turn of the event loop, so a burst of new requests is set up
   * between rounds of I/O instead of in one long run that stalls the streams already flowing. Null when this turn
   * may begin at once (nothing else began in this turn of the loop), else a promise that resolves when it may.
   */
  paceStart(): Promise<void> | null {
    if (this.startWaiters.length === 0 && !this.startedThisTick) {
      this.startedThisTick = true;
      this.scheduleStarts();
      return null;
    }
    const waiting = new Promise<void>((resolve) => this.startWaiters.push(resolve));
    this.scheduleStarts();
    return waiting;
  }

  private readonly startWaiters: (() => void)[] = [];
  private startedThisTick = false;
  private startsScheduled = false;

  private scheduleStarts(): void {
    if (this.startsScheduled) return;
    this.startsScheduled = true;
    setImmediate(() => {
      this.startsScheduled = false;
      this.startedThisTick = false;
      const next = this.startWaiters.shift();
      if (next === undefined) return;
      this.startedThisTick = true;
      next();
      this.scheduleStarts();
    });
  }

  /** Resolves once no turn is in flight. */
  whenIdle(): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.idle.delete(done);
        resolve();
      };
      this.idle.add(done);
    });
  }
}
