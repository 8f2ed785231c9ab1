import type { TurnClaim } from './turns-in-flight.js';
import type { ContentPart, CostStatus, FinishReason, HostCallbacks, JsonObject, ModelRoute, Usage } from './types.js';

/** Input of one turn (spec/core.md §5.4). */
export interface TurnInput {
  text?: string;
  content?: ContentPart[];
  /** A cleaner version of the user message to store, with its own display fields. */
  persistAs?: { text?: string; displayKind?: string; displayMetadata?: JsonObject };
  /** Sent with this turn's requests only, never stored. */
  ephemeralSystemPrompt?: string;
}

/** Options of one turn. */
export interface RunTurnOptions {
  /** Abort = interrupt; the issuer comes from `signal.reason.issuer`, else `caller`. */
  signal?: AbortSignal;
  turnId?: string;
  maxIterations?: number;
  /** Model spec for this turn only. */
  model?: string;
  /** Callbacks for this turn only. */
  callbacks?: HostCallbacks;
  /**
   * The turn's long-term memory scope: the user identity that memory providers and tools key their
   * memory by (for example the HTTP API's `X-Hermes-Session-Key`). Independent of the session id.
   */
  memoryScope?: string;
  /**
   * The session's claim in `AgentHost.turns`, taken by the surface that accepted this turn (ADR 0037). Without it
   * the agent claims the session itself for the turn; with it the claim must be the session's current one, else the
   * turn is refused with `session_busy`. The caller releases its own claim once the turn's result has settled.
   */
  claim?: TurnClaim;
}

/** How a turn ended (spec/core.md §5.4, §8). */
export interface TurnResult {
  turnId: string;
  sessionId: string;
  outcome: 'completed' | 'cancelled' | 'failed';
  exitReason: string;
  finishReason: FinishReason | null;
  finalText: string;
  lastReasoning: string | null;
  partial: boolean;
  interruptedBy?: { issuer: string; reason: string; hard: boolean };
  interruptMessage?: string;
  pendingSteer?: string;
  error?: { code: string; message: string; provider?: string; status?: number; retryable: boolean };
  iterations: number;
  maxIterations: number;
  apiCalls: number;
  usage: { turn: Usage; session: Usage };
  cost: { turnUsd: number | null; sessionUsd: number | null; status: CostStatus };
  route: (ModelRoute & { fallbackUsed: boolean }) | null;
  userRowId: number | null;
  rowIds: number[];
  durationMs: number;
}

/** Result of `steer` and `redirect`. */
export interface SteerResult {
  status: 'queued' | 'redirected' | 'rejected';
  reason?: 'no_active_turn' | 'empty' | 'closed';
}

/** Options of `interrupt`. */
export interface InterruptOptions {
  /** Default 'user'; otherwise lowercase [a-z0-9_]+. */
  issuer?: string;
  reason?: string;
  message?: string;
  hard?: boolean;
}
