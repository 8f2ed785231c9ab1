// The interfaces the parts of agent/ talk through (ADR 0015): the host as an agent sees it, the
// session as the turn loop, compression, titles, approvals and delegation see it, and the running
// turn as its session sees it. HostImpl, AgentCore and TurnRunner implement them; the parts import
// only these, so no file of agent/ imports a file that imports it back.
import type { LanguageModelV3, SharedV3ProviderOptions } from '@ai-sdk/provider';
import type { Agent, AgentHost, CompressionResult, SessionOptions, SubagentInfo } from '../api/types.js';
import type { CommandAllowlistEntry } from '../approvals/allowlist.js';
import type { FileCheckpointStore } from '../checkpoints/file-checkpoints.js';
import type { AgentEventPayloads, AgentEventType, AgentPhase } from '../events.js';
import type { ProviderAdapter, ResolvedRoute } from '../providers/types.js';
import type { SecretRedactor } from '../security/secret-redactor.js';
import type {
  NewMessage,
  SessionModelConfig,
  SessionRow,
  StoredMessage,
  TurnCommit,
  TurnFence,
  TurnLease,
  UsageEntry,
  WriteOptions,
} from '../store/types.js';
import type { CommandSandbox } from '../tools/sandbox.js';
import type { CommandRunner, FileAccess, ToolContext, ToolDefinition, ToolSettings } from '../tools/types.js';
import type { TurnInput, TurnResult } from '../turn-types.js';
import type { CostStatus, HostCallbacks, Usage } from '../types.js';
import type { InterruptReason } from './interrupt.js';
import type { HermesSettings } from './settings.js';
import type { SpawnGate } from './spawn-gate.js';
import type { TranscriptRow } from './transcript.js';

/**
 * What an Agent needs from its host. The host implements it; keeping it an interface lets the turn
 * loop be read (and tested) without the whole host.
 */
export interface HostContext extends AgentHost {
  readonly fetch: typeof globalThis.fetch;
  readonly callbacks: HostCallbacks;
  /** Current settings (replaced by reloadConfig; turns keep the object they started with). */
  settings(): HermesSettings;
  toolSettings(): ToolSettings;
  /** Resolves a spec to a route; throws HermesError invalid_model_spec / unknown_provider / missing_credentials. */
  resolveRoute(spec: string, currentProvider?: string | null): ResolvedRoute;
  /** The default model spec (§10.2 without the turn and session parts), or null. */
  defaultModelSpec(): string | null;
  createModel(route: ResolvedRoute): LanguageModelV3;
  providerAdapter(id: string): ProviderAdapter | undefined;
  providerOptions(route: ResolvedRoute, reasoningEffort: string | null): SharedV3ProviderOptions | undefined;
  /** Cost of one call on a route. */
  cost(route: ResolvedRoute, usage: Usage): { costUsd: number; status: CostStatus };
  /** Environment for subprocesses (spec/core.md §20), built from the `terminal.env` allowlist. */
  subprocessEnv(): Record<string, string>;
  /** Redacts the values of the host's secrets from tool output (issue 32). */
  secretRedactor(): SecretRedactor;
  /** The OS sandbox for a command of a session working in `workspace`, or undefined when commands run unconfined. */
  commandSandbox(workspace: string): CommandSandbox | undefined;
  /** Appends an exact command to `command_allowlist` in config.yaml, keeping comments (docs/adr/0034). */
  persistAllowlist(entry: CommandAllowlistEntry): Promise<void>;
  /** Saves a secret the user supplied to HERMES_HOME/.env and makes it visible at once (spec/core.md §24.7). */
  storeSecret(envVar: string, value: string): Promise<void>;
  /** Whether config.yaml can be written (the `always` choice is offered only then). */
  configWritable(): boolean;
  /** Writes `model.default` / `model.provider` to config.yaml. */
  persistDefaultModel(route: ResolvedRoute): Promise<void>;
  defaultFileAccess: FileAccess;
  defaultCommandRunner: CommandRunner;
  /** File checkpoints taken before each file-tool write (rollback). */
  checkpoints: FileCheckpointStore;
  /** Tools visible to a session (built-ins, extra tools, MCP tools of the host and the session). */
  toolsForSession(sessionId: string): ToolDefinition[];
  emitHostEvent(event: {
    type: 'session.created' | 'session.updated' | 'session.deleted';
    sessionId: string;
    fields?: string[];
  }): void;
  /** Creates an Agent on this host (children of delegate_task use it). */
  createAgent(options: SessionOptions, extra?: Partial<AgentInit>): SessionInternals;
  /** Holds new delegation children while `pauseDelegation(true)` is in force. */
  readonly spawnGate: SpawnGate;
  /** Called by an Agent when it closes, so the host forgets it. */
  forgetAgent(sessionId: string): void;
}

/** Everything an Agent is created from. */
export interface AgentInit {
  host: HostContext;
  sessionId: string;
  options: SessionOptions;
  /** Present when resuming a stored session. */
  row?: SessionRow;
  rows?: StoredMessage[];
  /** The turn lease the session was created with (`AgentHost.openSession`, issue 34.2), for its first turn. */
  bornLease?: { turnId: string; lease: TurnLease };
  ownsHost?: boolean;
  kind?: 'root' | 'branch' | 'subagent';
  /** For subagents: the root agent whose approve callback and grants are used. */
  approvalRoot?: SessionInternals;
  subagentInfo?: { childId: string; goal: string };
  delegateFrom?: string;
}

/** What a compression during a turn was started by. */
export type CompressionTrigger = 'preflight' | 'pressure' | 'post_tool' | 'overflow';

/** A running turn as its session, compression and delegation see it (TurnRunner implements it). */
export interface ActiveTurn {
  readonly turnId: string;
  readonly signal: AbortSignal;
  /** The turn's long-term memory scope (`RunTurnOptions.memoryScope`), null when none was given. */
  readonly memoryScope: string | null;
  phase: AgentPhase;
  iteration: number;
  streamingText: string;
  steerBuffer: string[];
  /** Aborts the turn. Returns false when it already ended or was already interrupted. */
  interrupt(reason: InterruptReason): boolean;
  /** Aborts only the running model request. Returns false when no request runs. */
  redirect(text: string): boolean;
  /** Rows of the transcript written by this turn. */
  turnRows(): TranscriptRow[];
  /** The fencing token of the turn's lease once it holds one (issue 33.3, ADR 0049); its writes carry it. */
  readonly fence: TurnFence | null;
}

/**
 * A session as the turn loop, compression, titles, smart approvals and delegation see it: the
 * public Agent plus the internals they drive (AgentCore implements it).
 */
export interface SessionInternals extends Agent {
  readonly host: HostContext;
  readonly ephemeral: boolean;
  readonly source: string;
  /** For subagents: the root session whose approve callback and grants are used. */
  readonly approvalRoot: SessionInternals | null;
  transcript: TranscriptRow[];
  maxIterations: number | undefined;
  reasoningEffort: 'none' | 'low' | 'medium' | 'high' | null;
  modelSpec: string | null;
  route: ResolvedRoute | null;
  persisted: boolean;
  systemPromptText(): string;
  ensureSystemPrompt(route: ResolvedRoute | null): Promise<void>;
  writePendingModelSwitch(turnId: string): Promise<void>;
  reloadIfChanged(known?: { lastRowId: number; rewindCount: number } | null): Promise<void>;
  /** The lease the session was created with, once, for the turn `turnId` it was taken for; else null. */
  takeBornLease(turnId: string): TurnLease | null;
  createRow(): Promise<void>;
  userRowFor(input: TurnInput, turnId: string): NewMessage;
  appendRows(rows: NewMessage[]): Promise<(number | null)[]>;
  readonly storesWrites: boolean;
  stageRows(rows: NewMessage[]): TranscriptRow[];
  stageUsage(entry: UsageEntry): void;
  stageDisplay(row: TranscriptRow): void;
  commitWrites(lease?: TurnCommit['lease'] | 'touch'): Promise<void>;
  /** The store options of a write the running turn makes: its lease's fence, when it holds one (ADR 0049). */
  writeOptions(): WriteOptions;
  /**
   * Stops the running turn with `interrupted_by_system(session_turn_lease_lost)` when `error` is a write its fence
   * refused (another process took the session's lease over); other errors are left alone. The caller rethrows.
   */
  noteRefusedWrite(error: unknown): void;
  uniqueCallId(id: string): string;
  activeTools(): ToolDefinition[];
  toolContext(turn: ActiveTurn, callId: string, signal: AbortSignal): ToolContext;
  askForMissingSecret(turn: ActiveTurn, error: unknown): Promise<boolean>;
  emitTurnEvent<T extends AgentEventType>(turn: ActiveTurn, type: T, payload: AgentEventPayloads[T]): void;
  emitEvent<T extends AgentEventType>(type: T, payload: AgentEventPayloads[T]): void;
  turnFinished(turn: ActiveTurn, result: TurnResult): void;
  noteUsage(route: ResolvedRoute, usage: Usage, costUsd: number, status: CostStatus, task: string): void;
  notePromptTokens(tokens: number): void;
  noteSubagentUsage(route: ResolvedRoute | null, usage: Usage, costUsd: number, status: CostStatus): Promise<void>;
  contextEstimate(): number;
  contextWindow(): number;
  compressNow(trigger: CompressionTrigger, turn: ActiveTurn, force: boolean): Promise<CompressionResult>;
  getModelConfig(): SessionModelConfig;
  saveModelConfig(): Promise<void>;
  afterCompaction(): Promise<void>;
  /** Stores a generated title with the usage of the call that wrote it (one write, ADR 0056). */
  applyGeneratedTitle(title: string, source: 'llm' | 'derived', usage?: UsageEntry[]): Promise<void>;
  spawnChild(input: {
    goal: string;
    childId: string;
    callId: string;
    model: string | null;
    maxIterations: number;
    approvalRoot: SessionInternals;
  }): Promise<SessionInternals>;
  registerChild(info: SubagentInfo): void;
}
