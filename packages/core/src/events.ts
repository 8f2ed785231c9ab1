import type { TurnResult } from './turn-types.js';
import type {
  ApprovalChoice,
  ApprovalRequest,
  ClarifyAnswer,
  ClarifyRequest,
  CostStatus,
  FileDiff,
  JsonValue,
  ModelRoute,
  TodoItem,
  ToolKind,
  ToolLocation,
  Usage,
} from './types.js';

/** Phases of a turn, as in `AgentStatus.phase`. */
export type AgentPhase =
  | 'idle'
  | 'lease_wait'
  | 'preparing'
  | 'model'
  | 'tools'
  | 'awaiting_approval'
  | 'awaiting_clarify'
  | 'compressing'
  | 'finishing';

/** Classified reasons of provider failures (spec/core.md §7.6). */
export type FailoverReason =
  | 'rate_limit'
  | 'overloaded'
  | 'server_error'
  | 'timeout'
  | 'network'
  | 'empty_response'
  | 'unknown'
  | 'auth'
  | 'billing'
  | 'model_not_found'
  | 'content_policy'
  | 'format_error'
  | 'context_overflow'
  | 'payload_too_large';

/** Fields every event carries (spec/core.md §6.1). */
export interface EventBase {
  sessionId: string;
  /** null for out-of-turn events. */
  turnId: string | null;
  /** Strictly increasing per Agent, starting at 1. */
  seq: number;
  ts: number;
}

/** Event payloads by type (spec/core.md §6.2). */
export interface AgentEventPayloads {
  'turn.start': {
    input: { text: string; attachments: number };
    model: ModelRoute | null;
    maxIterations: number;
    /** Present when the turn was given a long-term memory scope. */
    memoryScope?: string;
  };
  'prompt.stored': {
    rowId: number | null;
    text: string;
    displayKind: string | null;
    displayMetadata: Record<string, JsonValue> | null;
  };
  status: { phase: AgentPhase; text: string };
  'message.start': { messageId: string; iteration: number };
  'message.delta': { messageId: string; text: string };
  'message.end': {
    messageId: string;
    text: string;
    finishReason: string | null;
    hasToolCalls: boolean;
    rowId: number | null;
    interrupted: boolean;
    discarded: boolean;
  };
  'reasoning.delta': { messageId: string; text: string };
  'reasoning.end': { messageId: string; text: string };
  'tool.generating': { messageId: string; callId: string; name: string };
  'tool.start': {
    callId: string;
    name: string;
    args: JsonValue;
    kind: ToolKind;
    title: string;
    locations: ToolLocation[];
    parallel: boolean;
    batchIndex: number;
    batchSize: number;
  };
  'tool.progress': { callId: string; output?: string; message?: string };
  'tool.end': {
    callId: string;
    name: string;
    status: 'completed' | 'failed' | 'denied' | 'cancelled';
    result: string;
    structured?: JsonValue;
    diffs?: FileDiff[];
    locations?: ToolLocation[];
    truncated: boolean;
    durationMs: number;
    rowId: number | null;
  };
  'todo.updated': { todos: TodoItem[] };
  'approval.request': { request: ApprovalRequest };
  'approval.resolved': {
    requestId: string;
    callId: string;
    choice: ApprovalChoice | null;
    source:
      | 'user'
      | 'timeout'
      | 'error'
      | 'no_callback'
      | 'cancelled'
      | 'policy'
      | 'yolo'
      | 'allowlist'
      | 'session_grant'
      | 'smart';
  };
  'clarify.request': { request: ClarifyRequest };
  'clarify.resolved': {
    requestId: string;
    answer: ClarifyAnswer | Record<string, ClarifyAnswer>;
    source: 'user' | 'timeout' | 'error' | 'cancelled';
  };
  retry: {
    attempt: number;
    maxRetries: number;
    delayMs: number;
    reason: FailoverReason;
    status?: number;
    message: string;
    discardMessageId?: string;
  };
  fallback: { from: ModelRoute; to: ModelRoute; reason: FailoverReason };
  'steer.delivered': { text: string; rowId: number | null; afterCallIds: string[] };
  usage: {
    call: Usage;
    turn: Usage;
    session: Usage;
    costUsd: { call: number | null; turn: number | null; session: number | null };
    costStatus: CostStatus;
    contextTokens: number;
    contextWindow: number;
  };
  'compaction.start': {
    trigger: 'preflight' | 'pressure' | 'post_tool' | 'overflow' | 'manual';
    tokensBefore: number;
    threshold: number;
  };
  'compaction.end': {
    ok: boolean;
    tokensAfter: number;
    archivedRows: number;
    summaryRowId: number | null;
    error?: { code: string; message: string };
  };
  'model.switched': { from: ModelRoute | null; to: ModelRoute; appliesFrom: 'now' | 'next_turn' };
  title: { title: string; source: 'user' | 'llm' | 'derived' | 'branch' };
  'subagent.start': {
    childId: string;
    childSessionId: string;
    parentCallId: string;
    taskIndex: number;
    goal: string;
    model: ModelRoute | null;
  };
  'subagent.progress': { childId: string; kind: 'tool' | 'text' | 'status'; name?: string; text: string };
  'subagent.end': { childId: string; status: string; summary: string; exitReason: string; usage: Usage };
  notice: { level: 'info' | 'warning' | 'error'; key: string; text: string; data?: Record<string, JsonValue> };
  'turn.end': { result: TurnResult };
}

/** Event type names. */
export type AgentEventType = keyof AgentEventPayloads;

/** One event of the union, discriminated by `type`. */
export type AgentEventOf<T extends AgentEventType> = EventBase & { type: T } & AgentEventPayloads[T];

/** Every event an Agent emits. */
export type AgentEvent = { [T in AgentEventType]: AgentEventOf<T> }[AgentEventType];
