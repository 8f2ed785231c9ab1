import { type TurnClaim, TurnsInFlight } from '@hermes/core';
import { ApiError } from './http-error.js';

/**
 * A slot held by an admitted turn: a place under the concurrency cap and, for a turn on a session, the session's claim
 * in the core's registry of turns in flight. {@link TurnSlot.release} is the one place both are given back; it is
 * idempotent, so every path out of a request may call it (ADR 0037).
 */
export interface TurnSlot {
  /** The session's claim, to pass to `Agent.runTurn`; null for a turn on no session. */
  readonly claim: TurnClaim | null;
  /** Gives the slot back (later calls do nothing). */
  release(): void;
  /**
   * Runs the setup of the turn up to the moment its result promise exists; a setup that throws gives the slot back
   * before the error goes on to the client. The result's settle is then {@link TurnSlot.releaseWhen}'s business.
   */
  guard<T>(setup: () => Promise<T> | T): Promise<T>;
  /** Gives the slot back once `settled` settles, fulfilled or rejected. */
  releaseWhen(settled: Promise<unknown>): void;
}

/** The 409 of a session with a turn in flight on any surface (spec §13.3). */
export function sessionBusy(sessionId: string): ApiError {
  return new ApiError(409, 'session_busy', `Session ${sessionId} already has a turn in flight.`);
}

/**
 * Draining, the concurrency cap and per-session serialisation for the turn-starting routes (spec §6.3, §6.4, §13.3).
 * The cap is per process; the busy state of a session is the host's {@link TurnsInFlight}, which the gateway and the
 * agent itself consult too, so a turn started on any surface makes every other one answer `session_busy`.
 */
export class TurnAdmission {
  active = 0;
  draining = false;
  private readonly idle = new Set<() => void>();

  constructor(
    private readonly cap: () => number,
    /** The host's registry (`AgentHost.turns`); a private one when the admission is used alone. */
    readonly turns: TurnsInFlight = new TurnsInFlight(),
    /**
     * Called with the session of every turn whose slot comes back, after its claim is released: where the server lets
     * go of the session's live agent (`AgentHost.releaseAgent`), so that memory is held per turn in flight, not per
     * session ever served (ADR 0038).
     */
    private readonly afterTurn: (sessionId: string) => void = () => undefined,
  ) {}

  /** The surface's id of the turn in flight on a session (a run id, a completion id, …), if any. */
  busyWith(sessionId: string): string | undefined {
    return this.turns.holder(sessionId)?.id;
  }

  /** The run id of the turn in flight on a session, when a run (of `/v1/runs` or a session chat) holds it. */
  activeRunId(sessionId: string): string | undefined {
    const holder = this.turns.holder(sessionId);
    return holder && (holder.surface === 'runs' || holder.surface === 'session_chat') ? holder.id : undefined;
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

  /**
   * Admits a turn: capacity, then the session's claim (409 `session_busy` when another surface holds it). Nothing is
   * taken when it throws. `surface` names the route in the registry (`chat`, `responses`, `runs`, `session_chat`);
   * `onRelease` runs once with the release, for what the route holds beside the slot (a run's lease reservation).
   */
  admit(sessionId: string | null, marker: string, surface = 'http', onRelease?: () => void): TurnSlot {
    this.checkCapacity();
    let claim: TurnClaim | null = null;
    if (sessionId !== null) {
      claim = this.turns.claim(sessionId, { surface, id: marker });
      if (claim === null) throw sessionBusy(sessionId);
    }
    this.active += 1;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.active -= 1;
      claim?.release();
      onRelease?.();
      if (sessionId !== null) this.afterTurn(sessionId);
      if (this.active === 0) for (const resolve of [...this.idle]) resolve();
    };
    return {
      claim,
      release,
      async guard(setup) {
        try {
          return await setup();
        } catch (error) {
          release();
          throw error;
        }
      },
      releaseWhen(settled) {
        settled.then(release, release);
      },
    };
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
