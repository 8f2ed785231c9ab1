import type { AgentEvent } from '../events.js';
import type { McpServerConfig } from '../mcp/types.js';
import type { RewindResult, StoredMessage } from '../store/types.js';
import type { CommandRunner, FileAccess } from '../tools/types.js';
import type {
  ApprovalRequest,
  ChatMessage,
  ClarifyRequest,
  CostStatus,
  HostCallbacks,
  ModelRoute,
  Usage,
} from '../types.js';
import type { InterruptOptions, RunTurnOptions, SteerResult, TurnInput, TurnResult } from './turn-types.js';

/** Options of a new session (spec/core.md §5.2). */
export interface SessionOptions {
  source?: string;
  cwd?: string;
  model?: string;
  title?: string;
  seed?: ChatMessage[];
  systemPrompt?: string;
  parentSessionId?: string;
  hidden?: boolean;
  ephemeral?: boolean;
  toolsets?: string[];
  disabledTools?: string[];
  callbacks?: HostCallbacks;
  maxIterations?: number;
  yolo?: boolean;
  skipContextFiles?: boolean;
  /** Reasoning effort for this session (spec/core.md §24.3). */
  reasoningEffort?: 'none' | 'low' | 'medium' | 'high' | null;
  /** File access seam for this session's file tools (spec/core.md §24.1). */
  fileAccess?: FileAccess;
  /** Command runner seam for this session's foreground terminal commands (spec/core.md §24.2). */
  commandRunner?: CommandRunner;
  /** MCP servers visible only to this session (spec/core.md §15.2). */
  mcpServers?: McpServerConfig[];
}

/** Options of `resumeSession`. */
export interface ResumeOptions {
  callbacks?: HostCallbacks;
  cwd?: string;
  fileAccess?: FileAccess;
  commandRunner?: CommandRunner;
}

/** A running turn: its events and its result. */
export interface TurnRun extends AsyncIterable<AgentEvent> {
  readonly turnId: string;
  /** Resolves exactly once, never rejects. */
  readonly result: Promise<TurnResult>;
}

/** What `status()` returns: enough to rebuild an in-flight view (spec/core.md §5.3). */
export interface AgentStatus {
  sessionId: string;
  persisted: boolean;
  busy: boolean;
  turnId: string | null;
  phase:
    | 'idle'
    | 'lease_wait'
    | 'preparing'
    | 'model'
    | 'tools'
    | 'awaiting_approval'
    | 'awaiting_clarify'
    | 'compressing'
    | 'finishing';
  iteration: number;
  maxIterations: number;
  streamingText: string;
  pendingApproval: ApprovalRequest | null;
  pendingClarify: ClarifyRequest | null;
  pendingSteer: string | null;
  model: ModelRoute | null;
  title: string | null;
  cwd: string;
  lastSeq: number;
  reasoningEffort: 'none' | 'low' | 'medium' | 'high' | null;
}

/** Usage of a session (spec/core.md §17.3). */
export interface UsageSnapshot {
  session: Usage;
  costUsd: number;
  costStatus: CostStatus;
  byModel: { provider: string; model: string; task: string; usage: Usage; costUsd: number }[];
  context: {
    lastPromptTokens: number;
    estimatedTokens: number;
    contextWindow: number;
    ratio: number;
    threshold: number;
  };
  subagents: Usage & { costUsd: number };
}

/** Result of `switchModel` (spec/core.md §10.6). */
export interface ModelSwitchResult {
  ok: boolean;
  from: ModelRoute | null;
  to?: ModelRoute;
  providerChanged?: boolean;
  contextWindow?: number;
  appliesFrom?: 'now' | 'next_turn';
  persisted?: 'session' | 'global';
  warning?: string;
  error?: { code: string; message: string };
}

/** Result of `compress` (spec/core.md §18). */
export interface CompressionResult {
  ok: boolean;
  skipped?: 'below_threshold' | 'cooldown' | 'too_short' | 'busy';
  tokensBefore: number;
  tokensAfter: number;
  archivedRows: number;
  summaryRowId: number | null;
  error?: { code: string; message: string };
}

/** A delegated child (spec/core.md §14). */
export interface SubagentInfo {
  childId: string;
  childSessionId: string;
  parentCallId: string;
  goal: string;
  status: 'running' | 'completed' | 'failed' | 'interrupted';
  startedAt: number;
  iterations: number;
  steer(text: string): SteerResult;
  interrupt(options?: InterruptOptions): boolean;
}

/** The live handle of one session (spec/core.md §5.3). */
export interface Agent {
  readonly sessionId: string;
  readonly host: import('./host.js').AgentHost;
  readonly persisted: boolean;
  readonly busy: boolean;
  readonly model: ModelRoute | null;
  readonly cwd: string;

  runTurn(input: TurnInput, options?: RunTurnOptions): TurnRun;
  steer(text: string): SteerResult;
  redirect(text: string): SteerResult;
  interrupt(options?: InterruptOptions): boolean;

  switchModel(spec: string, options?: { persist?: 'session' | 'global' }): Promise<ModelSwitchResult>;
  compress(options?: { force?: boolean; focus?: string; keepLastN?: number }): Promise<CompressionResult>;
  branch(options?: { title?: string; upToRowId?: number }): Promise<Agent>;
  rewind(options: { beforeRowId: number }): Promise<RewindResult>;
  undo(): Promise<RewindResult>;
  retry(options?: RunTurnOptions): Promise<TurnRun>;
  /** Creates the stored row now instead of at the first prompt (no-op when it exists; not for ephemeral sessions). */
  persist(): Promise<void>;

  title(): string | null;
  setTitle(title: string | null): Promise<string | null>;
  setCwd(cwd: string): Promise<void>;
  setYolo(on: boolean): void;
  setToolEnabled(nameOrToolset: string, enabled: boolean): void;
  setReasoningEffort(effort: 'none' | 'low' | 'medium' | 'high' | null): Promise<void>;

  usage(): UsageSnapshot;
  status(): AgentStatus;
  history(options?: { includeInactive?: boolean }): Promise<StoredMessage[]>;
  subagents(): SubagentInfo[];
  todos(): import('../types.js').TodoItem[];
  subscribe(listener: (event: AgentEvent) => void): () => void;
  eventsSince(seq: number): AgentEvent[];
  close(options?: { endReason?: string }): Promise<void>;
}
