// The public interfaces of the agent API: what agent/ implements and commands/ programs against
// (ADR 0015). They refer to each other (an Agent has its host, the host has its commands, a
// command receives the agent and the host), so they are declared in one module.

import type { CommandAllowlistEntry, CommandAllowlistListing } from '../approvals/allowlist.js';
import type { FileCheckpointStore } from '../checkpoints/file-checkpoints.js';
import type { HermesConfig as HermesSettings } from '../config/index.js';
import type { AgentEvent } from '../events.js';
import type { LiveSessionHub } from '../live-session-hub.js';
import type { McpManager, McpServerConfig } from '../mcp/types.js';
import type { SkillRegistry } from '../skills/types.js';
import type { BornRun, RewindResult, SessionStore, StoredMessage, StoredSession } from '../store/types.js';
import type { CommandRunner, FileAccess, ProcessRegistry, ToolRegistry } from '../tools/types.js';
import type { InterruptOptions, RunTurnOptions, SteerResult, TurnInput, TurnResult } from '../turn-types.js';
import type { TurnsInFlight } from '../turns-in-flight.js';
import type {
  ApprovalRequest,
  ChatMessage,
  ClarifyRequest,
  Clock,
  CostStatus,
  HostCallbacks,
  JsonValue,
  Logger,
  ModelOption,
  ModelRoute,
  TodoItem,
  Usage,
} from '../types.js';

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
  /**
   * The stored session as `SessionStore.readSession` read it, when the caller has just read it to look at the session
   * itself: the resume then reads none of it again (issue 34, ADR 0065). Used only when `session.id` is the id resumed.
   */
  stored?: StoredSession;
}

/** Options of {@link AgentHost.openSession}: those of a resume, and whether a missing session is created. */
export interface OpenSessionOptions extends ResumeOptions {
  /**
   * Creates the session with this source when it is missing (another caller creating it meanwhile is no error). With
   * `run`, that run's queued row is written too: with a session it creates, in the same statement (ADR 0088), else on
   * its own; either way it is there once the open returns.
   */
  create?: { source: string; run?: BornRun };
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
  readonly host: AgentHost;
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
  todos(): TodoItem[];
  subscribe(listener: (event: AgentEvent) => void): () => void;
  eventsSince(seq: number): AgentEvent[];
  close(options?: { endReason?: string }): Promise<void>;
}

/** Host-level events. */
export type HostEvent =
  | { type: 'session.created'; sessionId: string }
  | { type: 'session.updated'; sessionId: string; fields: string[] }
  | { type: 'session.deleted'; sessionId: string };

/** Owns configuration, the store, providers, tools, MCP, processes, commands and live agents (spec/core.md §5.1). */
export interface AgentHost {
  readonly homeDir: string;
  readonly config: Readonly<HermesSettings>;
  readonly store: SessionStore;
  readonly tools: ToolRegistry;
  readonly commands: CommandRegistry;
  /** SKILL.md skills from HERMES_HOME/skills and the projects' `.hermes/skills`. */
  readonly skills: SkillRegistry;
  readonly mcp: McpManager;
  readonly processes: ProcessRegistry;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly holderId: string;
  /**
   * The OS sandbox commands run in (`terminal.sandbox`, probed at start): for `--check` output and
   * health reports.
   */
  readonly sandbox: import('../tools/sandbox.js').SandboxStatus;
  /**
   * Which sessions have a turn in flight, whichever surface started it (ADR 0037): every protocol claims a session
   * here when it accepts a turn and consults it before starting one.
   */
  readonly turns: TurnsInFlight;
  /**
   * A new session id in the spec's `YYYYMMDD_HHMMSS_xxxxxx` form (from `AgentHostOptions.generateSessionId` when set)
   * that no live agent, no turn in flight of this host and no stored session holds (ADR 0087): for a caller that creates
   * a stored session under an id it picks. A store that cannot answer is not asked (the session's write reports it).
   */
  newStoredSessionId(): Promise<string>;
  /**
   * The live sessions of this host (ADR 0053): the events of every turn, keyed by stored session id, whichever surface
   * started it, and the approvals those turns wait for, answerable from any surface. Protocols subscribe to the
   * sessions they show; apps/server shares it with the other instances through the run bus.
   */
  readonly live: LiveSessionHub;
  newSession(options?: SessionOptions): Promise<Agent>;
  resumeSession(idOrTitle: string, options?: ResumeOptions): Promise<Agent>;
  /**
   * The agent of the stored session with this id (never a title): the live one, else resumed, else (with `create`)
   * a new stored session's. `null` when it is missing and not created. What a caller that names sessions by id on
   * every request needs without the reads `resumeSession` makes to resolve a title, and, for a session it has just
   * created, without reading back the rows and usage it cannot have yet.
   */
  openSession(sessionId: string, options?: OpenSessionOptions): Promise<Agent | null>;
  getAgent(sessionId: string): Agent | undefined;
  liveAgents(): Agent[];
  /**
   * Lets go of the live agent of a stored session without ending the session: the host forgets it, its memory (the
   * transcript, the event ring) can be collected, and the next `resumeSession` loads the session again from the store.
   * Does nothing and returns false while a turn runs on it, or when a surface is attached to it (someone subscribes
   * to its events, or it was opened with callbacks or its own MCP servers, as the gateway and ACP open theirs): those
   * agents live until closed. For a surface that brings agents to life per request (the HTTP API), after each turn.
   */
  releaseAgent(sessionId: string): boolean;
  /** Throws invalid_model_spec / unknown_provider / missing_credentials. */
  resolveModel(spec: string): ModelRoute & { contextWindow: number };
  listModels(): ModelOption[];
  /**
   * Loads what the first call to a model needs (its AI SDK provider package, the fetch API classes the SDK builds
   * requests with) in the background, so that a session's first reply does not wait for it. `spec` defaults to the
   * default model. New and resumed sessions warm their own model by themselves; a server calls this once it is up.
   * Never rejects: a model that cannot be resolved or loaded reports that on its first turn instead.
   */
  warmModel(spec?: string): Promise<void>;
  /**
   * Saves an API key for a provider as its key variable in HERMES_HOME/.env, usable at once.
   * Throws `unknown_provider`, or `invalid_input` when the provider reads no key variable.
   */
  saveProviderKey(provider: string, apiKey: string): Promise<{ provider: string; variable: string }>;
  /**
   * Blanks a provider's key variable in HERMES_HOME/.env. `present` stays true when the key also
   * comes from elsewhere (the process environment or config.yaml), which this cannot change.
   */
  removeProviderKey(provider: string): Promise<{ provider: string; variable: string | null; present: boolean }>;
  /** File checkpoints taken before each file-tool write, for rollback (ADR 0006). */
  readonly checkpoints: FileCheckpointStore;
  /** The user's own OpenAI-compatible providers (`custom` when configured, then `providers:` entries). */
  customProviders(): string[];
  /** Asks a provider's endpoint for its model ids (`GET <base_url>/models`); throws `provider_error`. */
  remoteModels(provider: string, options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<string[]>;
  /** Whether new `delegate_task` children are held (see {@link AgentHost.pauseDelegation}). */
  readonly delegationPaused: boolean;
  /**
   * Holds (true) or releases (false) new `delegate_task` children across every session of this host:
   * while held, a child about to start waits without spawning; running children continue.
   */
  pauseDelegation(paused: boolean): void;
  /**
   * The permanent command allowlist (`command_allowlist`, docs/adr/0034): exact commands approved
   * with `always`, classes the user allowed explicitly, and legacy bare keys (listed, not honoured).
   */
  commandAllowlist(): CommandAllowlistListing[];
  /**
   * Adds an entry to the allowlist in config.yaml and in memory. `{ pattern }` allows a whole class:
   * only for an explicit user choice, never for an `always` answer. Throws `config_invalid` when the
   * file cannot be written, and `invalid_input` for an empty command or an unknown class.
   */
  allowCommands(entry: CommandAllowlistEntry): Promise<void>;
  /** Removes an entry (`{ pattern }` also removes a legacy bare key); returns how many were removed. */
  revokeCommands(entry: CommandAllowlistEntry): Promise<number>;
  /** Raw value of a protocol-owned config section (display, tui_gateway, acp, api_server, server). */
  configSection(name: string): unknown;
  /** Looks a variable up in the environment, then HERMES_HOME/.env. */
  lookupEnv(name: string): string | undefined;
  subscribe(listener: (event: HostEvent) => void): () => void;
  reloadConfig(): Promise<void>;
  close(): Promise<void>;
}

/** What a command returns (spec/core.md §16). */
export interface CommandResult {
  kind: 'text' | 'error' | 'session' | 'turn' | 'ui';
  /** Markdown to show. */
  text?: string;
  /** 'session': the session the client should switch to. */
  agent?: Agent;
  /** 'turn': a turn the command started. */
  turn?: TurnRun;
  /** Structured payload (usage numbers, session lists…). */
  data?: JsonValue;
  /** 'ui': for the front end to handle. */
  ui?: { name: string; args: string };
}

/** A slash command. */
export interface CommandDef {
  name: string;
  aliases?: string[];
  description: string;
  argsHint?: string;
  scope: 'core' | 'ui';
  allowedWhileBusy: boolean | ((args: string) => boolean);
  handler?: (context: { agent: Agent; host: AgentHost }, args: string) => Promise<CommandResult>;
}

/** The registry every surface shares. */
export interface CommandRegistry {
  list(): CommandDef[];
  register(definition: CommandDef): void;
  parse(line: string): { name: string; args: string } | null;
  find(name: string): CommandDef | undefined;
  execute(agent: Agent, line: string): Promise<CommandResult>;
}
