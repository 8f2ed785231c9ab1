/** Who holds a session's turn: the surface that started it and that surface's own id for it. */
export interface TurnHolder {
  /** The surface that started the turn: `gateway`, `chat`, `responses`, `runs`, `session_chat`, `core`, … */
  readonly surface: string;
  /** The surface's id of the turn (a run id, a completion id, a gateway runtime id, a turn id). */
  readonly id: string;
}

/** A session's turn slot, held from the moment a surface accepts a turn until the turn has ended. */
export interface TurnClaim {
  readonly sessionId: string;
  readonly holder: TurnHolder;
  /** True once released. */
  readonly released: boolean;
  /** Frees the session for the next turn; later calls do nothing. */
  release(): void;
}

/** What a listener of {@link TurnsInFlight.onRelease} is told. */
export interface TurnReleased {
  sessionId: string;
  holder: TurnHolder;
}

/**
 * Which sessions of one host have a turn in flight, whichever surface started it (spec/core.md §9.4, ADR 0037). A
 * surface claims the session when it accepts a turn, before it builds the agent or waits for anything, and releases it
 * when the turn has ended, so that every other surface of the process sees the session busy for the whole time: the
 * HTTP API answers 409 `session_busy`, the gateway applies its busy-input policy. `Agent.runTurn` takes a claim itself
 * for callers that did not, so a turn started directly on an agent counts too. Across processes the session's turn
 * lease serialises turns; this registry is the in-process view.
 */
export class TurnsInFlight {
  private readonly claims = new Map<string, TurnClaim>();
  private readonly releaseListeners = new Set<(released: TurnReleased) => void>();

  /** Number of sessions with a turn in flight. */
  get size(): number {
    return this.claims.size;
  }

  /** The holder of the session's turn, or undefined when the session is idle. */
  holder(sessionId: string): TurnHolder | undefined {
    return this.claims.get(sessionId)?.holder;
  }

  /** The current claim of a session, if any: a turn's owner passes it to `Agent.runTurn` to show the slot is its own. */
  current(sessionId: string): TurnClaim | undefined {
    return this.claims.get(sessionId);
  }

  /** True when `claim` is the session's current claim. */
  holds(claim: TurnClaim): boolean {
    return this.claims.get(claim.sessionId) === claim;
  }

  /** Claims the session for a turn; null when another turn holds it. Synchronous, so a check and a claim never race. */
  claim(sessionId: string, holder: TurnHolder): TurnClaim | null {
    if (this.claims.has(sessionId)) return null;
    let released = false;
    const claim: TurnClaim = {
      sessionId,
      holder,
      get released() {
        return released;
      },
      release: () => {
        if (released) return;
        released = true;
        if (this.claims.get(sessionId) !== claim) return;
        this.claims.delete(sessionId);
        for (const listener of this.releaseListeners) {
          try {
            listener({ sessionId, holder });
          } catch {
            // One listener's failure must not keep the others from seeing the session free.
          }
        }
      },
    };
    this.claims.set(sessionId, claim);
    return claim;
  }

  /** Calls `listener` each time a session's turn ends (after the session is free). Returns the unsubscribe. */
  onRelease(listener: (released: TurnReleased) => void): () => void {
    this.releaseListeners.add(listener);
    return () => this.releaseListeners.delete(listener);
  }
}
