import type { TurnClaim } from './turns-in-flight.js';
import type {
  ContentPart,
  CostStatus,
  FinishReason,
  HostCallbacks,
  JsonObject,
  ModelRoute,
  StoredToolCall,
  Usage,
} from './types.js';

/**
 * A function tool that the caller's own client runs (ADR 0052): offered to the model beside the server's tools, never
 * executed by the core. A model call to one ends the turn's run with {@link TurnResult.clientToolCalls}; the caller's
 * next run on the session answers it with {@link TurnInput.toolResults}.
 */
export interface ClientTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments, passed to the model as given. */
  inputSchema: JsonObject;
}

/** The client's result for one of its tool calls (ADR 0052). */
export interface ClientToolResult {
  /** The id of a call in {@link TurnResult.clientToolCalls} of the run that stopped for it. */
  callId: string;
  content: string;
  /** The client reported a failure: stored with status `failed`. */
  isError?: boolean;
}

/** Input of one turn (spec/core.md §5.4). */
export interface TurnInput {
  text?: string;
  content?: ContentPart[];
  /** A cleaner version of the user message to store, with its own display fields. */
  persistAs?: { text?: string; displayKind?: string; displayMetadata?: JsonObject };
  /** Sent with this turn's requests only, never stored. */
  ephemeralSystemPrompt?: string;
  /**
   * Results of client tool calls the session's transcript is waiting for (ADR 0052). With them the run continues the
   * turn that stopped for those calls (same turn id unless `RunTurnOptions.turnId` says otherwise): their tool rows
   * are stored first, then the user row when `text` or `content` is given too, then the loop goes on. A pending call
   * without a result is answered with an error row; a result for a call that is not pending is ignored.
   */
  toolResults?: ClientToolResult[];
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
  /**
   * Function tools the caller's client runs itself (ADR 0052), offered beside the session's tools. A name equal to one
   * of the session's active tools makes `runTurn` throw `tool_name_conflict`.
   */
  clientTools?: ClientTool[];
  /**
   * Forces the first model step of this run to call a tool: any tool (`required`), or the named one. Later steps of
   * the run choose freely, so that server-run tools and the answer can follow.
   */
  toolChoice?: 'required' | { toolName: string };
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
  /**
   * The client tool calls the run stopped for (exit reason `client_tool_calls`, outcome `completed`, finish reason
   * `tool_calls`), in the model's order; absent otherwise. Their assistant row is stored without results until the
   * next run brings them (ADR 0052).
   */
  clientToolCalls?: StoredToolCall[];
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
