/** Plain JSON values. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A plain JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** Recursively optional version of `T`, for configuration overrides. */
export type DeepPartial<T> = T extends readonly (infer U)[]
  ? readonly U[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** A part of a multimodal message. */
export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image'; mediaType: string; data?: string; url?: string }
  | { type: 'file'; mediaType: string; data?: string; url?: string; filename?: string };

/** A tool call as stored on assistant rows. */
export interface StoredToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A message of a conversation, as seeded or exported (no `system` role: the prompt lives on the session). */
export interface ChatMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string | ContentPart[];
  toolCalls?: StoredToolCall[];
  toolCallId?: string;
  toolName?: string;
  reasoning?: string;
  /** UI hint stored with a seed row (for example `hidden` for scaffolding that is never painted). */
  displayKind?: string;
  displayMetadata?: JsonObject;
}

/** Token usage, normalized across providers (spec/core.md §17.1). */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  totalTokens: number;
  apiCalls: number;
  estimated?: boolean;
}

/** How trustworthy a cost figure is. */
export type CostStatus = 'actual' | 'estimated' | 'included' | 'unknown';

/** The provider and model a request goes to. */
export interface ModelRoute {
  spec: string;
  provider: string;
  model: string;
  baseUrl: string | null;
}

/** One entry of a model menu. */
export interface ModelOption {
  spec: string;
  provider: string;
  model: string;
  contextWindow: number;
  configured: boolean;
}

/** Tool kinds, in the ACP vocabulary. */
export type ToolKind = 'read' | 'edit' | 'delete' | 'move' | 'search' | 'execute' | 'think' | 'fetch' | 'other';

/** A file change made by a tool, with full texts up to 1 MiB each. */
export interface FileDiff {
  path: string;
  oldText: string | null;
  newText: string;
  unified: string;
  truncated?: boolean;
}

/** An item of the `todo` tool's list. */
export interface TodoItem {
  id: string;
  content: string;
  status: 'pending' | 'in_progress' | 'completed' | 'cancelled';
}

/** Finish reason of a model step. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error' | 'other';

/** Who set a session title. */
export type TitleSource = 'user' | 'llm' | 'derived' | 'branch';

/** A file location a tool touches. */
export interface ToolLocation {
  path: string;
  line?: number;
}

/** Approval choices (spec/core.md §12.4). */
export type ApprovalChoice = 'once' | 'session' | 'always' | 'deny';
/**
 * What an approve callback returns. A `deny` with `policy` was decided by the host's policy, not by a person (for
 * example a request with no approval channel); `policy` says why, and the model is told that instead of "denied by
 * the user".
 */
export type ApprovalDecision = ApprovalChoice | { choice: ApprovalChoice; comment?: string; policy?: string };
/** What a clarify callback returns; `null` means the user declined. */
export type ClarifyAnswer = string | string[] | null;

/** A request for a user decision on a dangerous command (spec/core.md §12.5). */
export interface ApprovalRequest {
  requestId: string;
  sessionId: string;
  turnId: string;
  callId: string;
  toolName: string;
  command: string;
  cwd: string;
  patternKeys: string[];
  descriptions: string[];
  choices: ApprovalChoice[];
  expiresAt: number;
  subagent?: { childId: string; goal: string };
  /**
   * Present when `always` is offered: the exact command an `always` answer allows from then on
   * (never the whole pattern class, docs/adr/0034). Surfaces show "always allow `<alwaysScope>`".
   */
  alwaysScope?: string;
}

/** One question of a batch clarify (spec/core.md §24.8). */
export interface ClarifyQuestion {
  id: string;
  question: string;
  choices?: string[];
  multiSelect?: boolean;
}

/** A question for the user from the `clarify` tool (spec/core.md §13). */
export interface ClarifyRequest {
  requestId: string;
  sessionId: string;
  turnId: string;
  callId: string;
  question: string;
  choices: string[];
  multiSelect: boolean;
  expiresAt: number;
  /** Present for a batch clarify: every question, answered together. */
  questions?: ClarifyQuestion[];
}

/** A sudo password request (spec/core.md §24.7). */
export interface SudoRequest {
  requestId: string;
  sessionId: string;
  turnId: string;
  callId: string;
  command: string;
}

/** A request for a missing secret such as an API key (spec/core.md §24.7). */
export interface SecretRequest {
  requestId: string;
  sessionId: string;
  envVar: string;
  prompt: string;
}

/** Injected callbacks that route questions to the protocol's client (spec/core.md §5.6). */
export interface HostCallbacks {
  /** `null` (per turn or per session) removes an inherited callback: dangerous commands are then denied (`no_callback`). */
  approve?: ((request: ApprovalRequest, signal: AbortSignal) => Promise<ApprovalDecision>) | null;
  clarify?: (
    request: ClarifyRequest,
    signal: AbortSignal,
  ) => Promise<ClarifyAnswer | { answers: Record<string, ClarifyAnswer> }>;
  sudo?: (request: SudoRequest, signal: AbortSignal) => Promise<{ value: string }>;
  secret?: (request: SecretRequest, signal: AbortSignal) => Promise<{ value: string }>;
  /**
   * Asks the session's client to do or answer something only it can (tui-gateway spec §6.4: read
   * its terminal or window, act in its preview, run a tour, a login code, a vault unlock, a
   * connection card). Resolves with the client's result object; rejects with a message when no
   * client can answer (the tool then fails at once with that message). Absent: the tools that need
   * it are not offered.
   */
  clientRequest?: (request: ClientRequest, signal: AbortSignal) => Promise<Record<string, unknown>>;
}

/** Methods a tool may send to the session's client through `HostCallbacks.clientRequest`. */
export type ClientRequestMethod =
  | 'terminal.read'
  | 'window.read'
  | 'preview.act'
  | 'tour'
  | 'vault.code'
  | 'vault.unlock_prompt'
  | 'connection';

/** One request of a tool to the session's client. */
export interface ClientRequest {
  method: ClientRequestMethod;
  /** The method's fields (without `session_id`, which the protocol adds). */
  params: Record<string, JsonValue>;
  sessionId: string;
  turnId: string;
  callId: string;
}

/** All timers of the core go through a Clock, so tests can drive them. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason on abort. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Runs `fn` after `ms`; returns a cancel function. */
  setTimer(fn: () => void, ms: number): () => void;
}

/** Structured logger. The core never writes to stdout. */
export interface Logger {
  debug(message: string, fields?: JsonObject): void;
  info(message: string, fields?: JsonObject): void;
  warn(message: string, fields?: JsonObject): void;
  error(message: string, fields?: JsonObject): void;
}
