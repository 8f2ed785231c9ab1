import { HermesError } from '../errors.js';
import type { AgentEvent, AgentEventPayloads, AgentEventType } from '../events.js';
import type { ResolvedRoute } from '../providers/types.js';
import type { SessionModelConfig, SessionRow, StoredMessage, TurnLease } from '../store/types.js';
import type { CommandRunner, FileAccess } from '../tools/types.js';
import type {
  ApprovalRequest,
  ClarifyRequest,
  ContentPart,
  CostStatus,
  HostCallbacks,
  ModelRoute,
  TodoItem,
  Usage,
} from '../types.js';
import { addUsage, zeroUsage } from '../usage.js';
import { AgentEventLog, type TurnEventQueue } from './event-stream.js';
import type { AgentInit, HostContext, SessionInternals } from './internals.js';
import { rowChars, type TranscriptRow } from './transcript.js';
import { publicRoute, type TurnRunner } from './turn.js';
import type { SessionOptions, SubagentInfo } from './types.js';

function toTranscriptRow(row: StoredMessage): TranscriptRow {
  const {
    sessionId: _sessionId,
    tokenCount: _tokenCount,
    active: _active,
    compacted: _compacted,
    supersededBy: _supersededBy,
    ...transcriptRow
  } = row;
  return transcriptRow;
}

function usageFromRow(row: SessionRow): Usage {
  return {
    inputTokens: row.inputTokens,
    outputTokens: row.outputTokens,
    cacheReadTokens: row.cacheReadTokens,
    cacheWriteTokens: row.cacheWriteTokens,
    reasoningTokens: row.reasoningTokens,
    totalTokens: row.inputTokens + row.outputTokens,
    apiCalls: row.apiCallCount,
  };
}

/**
 * The state of one session and its read-only side: what {@link AgentCore} is made of. The layers
 * above add the transcript and usage ({@link AgentTranscript}), tool contexts and approvals
 * ({@link AgentApprovals}) and the session's operations ({@link AgentCore}).
 */
export abstract class AgentState {
  readonly host: HostContext;
  readonly ephemeral: boolean;
  readonly source: string;
  readonly kind: 'root' | 'branch' | 'subagent';
  readonly events: AgentEventLog;
  transcript: TranscriptRow[] = [];
  maxIterations: number | undefined;
  reasoningEffort: 'none' | 'low' | 'medium' | 'high' | null;
  modelSpec: string | null;
  route: ResolvedRoute | null = null;
  persisted: boolean;
  readonly ownsHost: boolean;
  protected currentSessionId: string;
  protected currentCwd: string;
  protected callbacks: HostCallbacks;
  protected readonly options: SessionOptions;
  protected systemPrompt: string | null;
  protected modelConfig: SessionModelConfig;
  protected titleValue: string | null;
  protected titleSourceValue: string | null;
  protected pendingTitle: string | null;
  protected readonly createdAt: number;
  protected generation = { lastRowId: 0, rewindCount: 0 };
  /** The turn lease the session was created with, until its first turn takes it or the agent lets it go. */
  protected bornLease: { turnId: string; lease: TurnLease } | null;
  protected turn: TurnRunner | null = null;
  protected turnQueues = new Map<TurnRunner, TurnEventQueue>();
  protected closed = false;
  protected yolo: boolean;
  protected readonly disabled = new Set<string>();
  protected readonly enabledOverride = new Set<string>();
  protected readonly sessionGrants = new Set<string>();
  /** Exact commands granted for the session (an `always` answer, or `session` for an unjudgeable command). */
  protected readonly sessionCommandGrants = new Set<string>();
  protected noCallbackNoticeSent = false;
  protected pendingApproval: ApprovalRequest | null = null;
  protected pendingClarify: ClarifyRequest | null = null;
  protected pendingModelSwitch: { from: string; to: string } | null = null;
  protected todoList: TodoItem[] = [];
  protected sessionUsage: Usage = zeroUsage();
  protected sessionCost = 0;
  protected sessionCostStatus: CostStatus = 'included';
  protected hasCalls = false;
  protected byModel = new Map<
    string,
    { provider: string; model: string; task: string; usage: Usage; costUsd: number }
  >();
  protected subagentUsage: Usage & { costUsd: number } = { ...zeroUsage(), costUsd: 0 };
  protected lastPromptTokens = 0;
  protected charsSinceLastCall = 0;
  protected readonly usedCallIds = new Set<string>();
  protected readonly children = new Map<string, SubagentInfo>();
  readonly fileAccess: FileAccess;
  /** `fileAccess` with a checkpoint before every write; what file tools get. */
  protected readonly checkpointedFiles: FileAccess;
  readonly commandRunner: CommandRunner;
  readonly approvalRoot: SessionInternals | null;
  readonly subagentInfo: { childId: string; goal: string } | null;
  readonly delegateFrom: string | null;
  protected readonly parentSessionId: string | null;
  protected hidden: boolean;
  protected readonly turnCallbacks = new WeakMap<TurnRunner, HostCallbacks>();

  constructor(init: AgentInit) {
    const { host, options, row } = init;
    this.host = host;
    this.options = options;
    this.ownsHost = init.ownsHost ?? false;
    this.currentSessionId = init.sessionId;
    this.ephemeral = options.ephemeral ?? false;
    this.source = row?.source ?? options.source ?? 'library';
    this.kind = row?.kind ?? init.kind ?? 'root';
    this.currentCwd = options.cwd ?? row?.cwd ?? process.cwd();
    this.callbacks = options.callbacks ?? {};
    this.maxIterations = options.maxIterations;
    this.modelConfig = { ...(row?.modelConfig ?? {}) };
    this.reasoningEffort = options.reasoningEffort ?? this.modelConfig.reasoning_effort ?? null;
    this.modelSpec = options.model ?? row?.model ?? null;
    this.systemPrompt = row?.systemPrompt ?? null;
    this.persisted = row !== undefined;
    this.titleValue = row?.title ?? null;
    this.titleSourceValue = row?.titleSource ?? null;
    this.pendingTitle = row ? null : (options.title ?? null);
    this.createdAt = row?.startedAt ?? host.clock.now();
    this.yolo = options.yolo ?? this.modelConfig.yolo ?? false;
    this.parentSessionId = row?.parentSessionId ?? options.parentSessionId ?? null;
    this.hidden = row?.hidden ?? options.hidden ?? false;
    for (const name of options.disabledTools ?? this.modelConfig.disabled_tools ?? []) this.disabled.add(name);
    this.fileAccess = options.fileAccess ?? host.defaultFileAccess;
    // Only the local file system is checkpointed: a client-supplied file access (an IDE over ACP)
    // keeps its own undo, and a checkpoint read would cost it an extra round trip per write.
    this.checkpointedFiles = options.fileAccess
      ? this.fileAccess
      : host.checkpoints.wrap(this.fileAccess, () => this.cwd);
    this.commandRunner = options.commandRunner ?? host.defaultCommandRunner;
    this.approvalRoot = init.approvalRoot ?? null;
    this.subagentInfo = init.subagentInfo ?? null;
    this.delegateFrom = init.delegateFrom ?? null;
    this.bornLease = init.bornLease ?? null;
    // Every event also reaches the host's live-session hub, where any protocol showing the session sees it (ADR 0053).
    this.events = new AgentEventLog(
      () => this.currentSessionId,
      host.clock,
      host.logger,
      (event) => host.live.publish(event),
    );
    if (row) {
      this.sessionUsage = usageFromRow(row);
      this.sessionCost = row.estimatedCostUsd;
      this.sessionCostStatus = row.costStatus;
      this.hasCalls = row.apiCallCount > 0;
    }
    if (init.rows) this.loadRows(init.rows, row?.rewindCount ?? 0);
    if (this.modelSpec !== null) {
      try {
        this.route = host.resolveRoute(this.modelSpec);
      } catch {
        // resolved again at turn start, where the failure is reported
      }
    } else {
      const fallback = host.defaultModelSpec();
      if (fallback !== null) {
        try {
          this.route = host.resolveRoute(fallback);
        } catch {
          this.route = null;
        }
      }
    }
    if (options.seed) {
      for (const message of options.seed) {
        if ((message.role as string) === 'system')
          throw new HermesError('invalid_input', 'A seed cannot contain a system row; use systemPrompt.');
        this.transcript.push({
          rowId: null,
          turnId: null,
          role: message.role,
          content: typeof message.content === 'string' ? message.content : joinText(message.content),
          contentParts: typeof message.content === 'string' ? null : message.content,
          toolCalls: message.toolCalls ?? null,
          toolCallId: message.toolCallId ?? null,
          toolName: message.toolName ?? null,
          reasoning: message.reasoning ?? null,
          providerMetadata: null,
          finishReason: null,
          displayKind: message.displayKind ?? null,
          displayMetadata: message.displayMetadata ?? null,
          timestamp: host.clock.now(),
        });
        for (const call of message.toolCalls ?? []) this.usedCallIds.add(call.id);
      }
    }
  }

  protected loadRows(rows: StoredMessage[], rewindCount: number): void {
    this.transcript = rows.filter((row) => row.active).map(toTranscriptRow);
    this.generation = {
      lastRowId: this.transcript.reduce((max, row) => Math.max(max, row.rowId ?? 0), 0),
      rewindCount,
    };
    this.usedCallIds.clear();
    for (const row of this.transcript) for (const call of row.toolCalls ?? []) this.usedCallIds.add(call.id);
    // The todo list is restored from the last todo row (spec/core.md §11.9).
    for (let index = this.transcript.length - 1; index >= 0; index -= 1) {
      const row = this.transcript[index];
      const todos = row?.toolName === 'todo' ? row.displayMetadata?.todos : undefined;
      if (Array.isArray(todos)) {
        this.todoList = todos as unknown as TodoItem[];
        break;
      }
    }
    this.charsSinceLastCall = this.transcript.reduce((sum, row) => sum + rowChars(row), 0);
  }

  // ---- Agent: read-only state -------------------------------------------------------------

  get sessionId(): string {
    return this.currentSessionId;
  }

  get busy(): boolean {
    return this.turn !== null;
  }

  get model(): ModelRoute | null {
    return this.route ? publicRoute(this.route) : null;
  }

  get cwd(): string {
    return this.currentCwd;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Whether a surface is attached to this agent: someone subscribes to its events, it was opened with callbacks (the
   * gateway's and ACP's seams) or with its own MCP servers. Such an agent is never released (AgentHost.releaseAgent).
   */
  get attached(): boolean {
    return this.events.observed || this.options.callbacks !== undefined || (this.options.mcpServers?.length ?? 0) > 0;
  }

  get currentTurn(): TurnRunner | null {
    return this.turn;
  }

  title(): string | null {
    return this.titleValue ?? this.pendingTitle;
  }

  todos(): TodoItem[] {
    return [...this.todoList];
  }

  subscribe(listener: (event: AgentEvent) => void): () => void {
    return this.events.subscribe(listener);
  }

  eventsSince(seq: number): AgentEvent[] {
    return this.events.since(seq);
  }

  subagents(): SubagentInfo[] {
    return [...this.children.values()];
  }

  /** Creates a hidden subagent session for one delegated task (spec/core.md §14). */
  async spawnChild(input: {
    goal: string;
    childId: string;
    callId: string;
    model: string | null;
    maxIterations: number;
    approvalRoot: SessionInternals;
  }): Promise<SessionInternals> {
    const options: SessionOptions = {
      source: 'subagent',
      cwd: this.cwd,
      parentSessionId: this.sessionId,
      hidden: true,
      maxIterations: input.maxIterations,
      fileAccess: this.fileAccess,
      commandRunner: this.commandRunner,
    };
    if (input.model !== null) options.model = input.model;
    if (this.options.toolsets) options.toolsets = this.options.toolsets;
    if (this.disabled.size > 0) options.disabledTools = [...this.disabled];
    if (this.ephemeral) options.ephemeral = true;
    return this.host.createAgent(options, {
      kind: 'subagent',
      approvalRoot: input.approvalRoot,
      subagentInfo: { childId: input.childId, goal: input.goal },
      delegateFrom: input.callId,
    });
  }

  /** Restores per-model usage of a resumed session. */
  restoreUsageByModel(rows: import('../store/types.js').UsageByModelRow[]): void {
    for (const row of rows) {
      const key = `${row.provider}\u0000${row.model}\u0000${row.task}`;
      this.byModel.set(key, {
        provider: row.provider,
        model: row.model,
        task: row.task,
        usage: { ...row.usage },
        costUsd: row.costUsd,
      });
      if (row.task === 'subagent') {
        const { costUsd: previousCost, ...previous } = this.subagentUsage;
        this.subagentUsage = { ...addUsage(previous, row.usage), costUsd: previousCost + row.costUsd };
      }
    }
  }

  /** Registers a delegated child so `subagents()` lists it. */
  registerChild(info: SubagentInfo): void {
    this.children.set(info.childId, info);
  }

  protected assertOpen(): void {
    if (this.closed) throw new HermesError('session_closed', `Session ${this.sessionId} is closed.`);
  }

  protected assertIdle(operation: string): void {
    this.assertOpen();
    if (this.turn) throw new HermesError('session_busy', `Cannot ${operation} while a turn is running.`);
  }

  /** Emits an event of a turn to the log and to that turn's iterator. */
  emitTurnEvent<T extends AgentEventType>(turn: TurnRunner, type: T, payload: AgentEventPayloads[T]): void {
    const event = this.events.emit(type, turn.turnId, payload);
    this.turnQueues.get(turn)?.push(event);
  }

  /** Emits an out-of-turn event. */
  emitEvent<T extends AgentEventType>(type: T, payload: AgentEventPayloads[T]): void {
    this.events.emit(type, null, payload);
  }
}

export function joinText(parts: ContentPart[]): string {
  return parts
    .filter((part): part is Extract<ContentPart, { type: 'text' }> => part.type === 'text')
    .map((part) => part.text)
    .join('\n');
}
