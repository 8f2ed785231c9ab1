import { detectDangerousCommand } from '../approvals/detect.js';
import { HermesError } from '../errors.js';
import type { AgentEvent, AgentEventPayloads, AgentEventType } from '../events.js';
import { newId } from '../ids.js';
import { weakestCostStatus } from '../providers/index.js';
import type { ResolvedRoute } from '../providers/types.js';
import type { NewMessage, RewindResult, SessionModelConfig, SessionRow, StoredMessage } from '../store/types.js';
import type {
  ApprovalOutcome,
  ClarifyOutcome,
  CommandRunner,
  FileAccess,
  ToolContext,
  ToolDefinition,
} from '../tools/types.js';
import type {
  ApprovalChoice,
  ApprovalRequest,
  ClarifyAnswer,
  ClarifyRequest,
  ContentPart,
  CostStatus,
  HostCallbacks,
  ModelRoute,
  TodoItem,
  Usage,
} from '../types.js';
import { addUsage, estimateTokens, zeroUsage } from '../usage.js';
import { runCompression } from './compression.js';
import { AgentEventLog, TurnEventQueue } from './event-stream.js';
import type { AgentInit, HostContext, SessionInternals } from './internals.js';
import { makeInterruptReason } from './interrupt.js';
import { buildSystemPrompt, promptFingerprint } from './system-prompt.js';
import { rowChars, startsTurn, type TranscriptRow } from './transcript.js';
import { publicRoute, TurnRunner } from './turn.js';
import type { InterruptOptions, RunTurnOptions, SteerResult, TurnInput, TurnResult } from './turn-types.js';
import type {
  Agent,
  AgentStatus,
  CompressionResult,
  ModelSwitchResult,
  SessionOptions,
  SubagentInfo,
  TurnRun,
  UsageSnapshot,
} from './types.js';

const MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024;

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
 * The live handle of one session. Public methods implement {@link Agent}; the other members are
 * what the turn runner, compression and the host use.
 */
export type { AgentInit };

export class AgentCore implements SessionInternals {
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
  private currentSessionId: string;
  private currentCwd: string;
  private callbacks: HostCallbacks;
  private readonly options: SessionOptions;
  private systemPrompt: string | null;
  private modelConfig: SessionModelConfig;
  private titleValue: string | null;
  private titleSourceValue: string | null;
  private pendingTitle: string | null;
  private readonly createdAt: number;
  private generation = { lastRowId: 0, rewindCount: 0 };
  private turn: TurnRunner | null = null;
  private turnQueues = new Map<TurnRunner, TurnEventQueue>();
  private closed = false;
  private yolo: boolean;
  private readonly disabled = new Set<string>();
  private readonly enabledOverride = new Set<string>();
  private readonly sessionGrants = new Set<string>();
  private noCallbackNoticeSent = false;
  private pendingApproval: ApprovalRequest | null = null;
  private pendingClarify: ClarifyRequest | null = null;
  private pendingModelSwitch: { from: string; to: string } | null = null;
  private todoList: TodoItem[] = [];
  private sessionUsage: Usage = zeroUsage();
  private sessionCost = 0;
  private sessionCostStatus: CostStatus = 'included';
  private hasCalls = false;
  private byModel = new Map<string, { provider: string; model: string; task: string; usage: Usage; costUsd: number }>();
  private subagentUsage: Usage & { costUsd: number } = { ...zeroUsage(), costUsd: 0 };
  private lastPromptTokens = 0;
  private charsSinceLastCall = 0;
  private readonly usedCallIds = new Set<string>();
  private readonly children = new Map<string, SubagentInfo>();
  readonly fileAccess: FileAccess;
  /** `fileAccess` with a checkpoint before every write; what file tools get. */
  private readonly checkpointedFiles: FileAccess;
  readonly commandRunner: CommandRunner;
  readonly approvalRoot: SessionInternals | null;
  readonly subagentInfo: { childId: string; goal: string } | null;
  readonly delegateFrom: string | null;
  private readonly parentSessionId: string | null;
  private hidden: boolean;

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
    this.events = new AgentEventLog(() => this.currentSessionId, host.clock, host.logger);
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

  private loadRows(rows: StoredMessage[], rewindCount: number): void {
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

  private assertOpen(): void {
    if (this.closed) throw new HermesError('session_closed', `Session ${this.sessionId} is closed.`);
  }

  private assertIdle(operation: string): void {
    this.assertOpen();
    if (this.turn) throw new HermesError('session_busy', `Cannot ${operation} while a turn is running.`);
  }

  // ---- turns ---------------------------------------------------------------------------------

  runTurn(input: TurnInput, options: RunTurnOptions = {}): TurnRun {
    this.assertOpen();
    if (this.turn) throw new HermesError('session_busy', `Session ${this.sessionId} is already running a turn.`);
    const hasText = (input.text ?? '').trim() !== '';
    const hasContent = (input.content ?? []).some((part) => part.type !== 'text' || part.text.trim() !== '');
    if (!hasText && !hasContent) throw new HermesError('invalid_input', 'A turn needs text or content.');
    for (const part of input.content ?? []) {
      if (
        part.type !== 'text' &&
        part.data !== undefined &&
        Math.floor((part.data.length * 3) / 4) > MAX_ATTACHMENT_BYTES
      ) {
        throw new HermesError('invalid_input', 'An attachment is larger than 5 MiB.');
      }
    }
    let resolveResult!: (result: TurnResult) => void;
    const result = new Promise<TurnResult>((resolve) => {
      resolveResult = resolve;
    });
    const runner = new TurnRunner(this, input, options, resolveResult);
    if (options.callbacks) this.turnCallbacks.set(runner, options.callbacks);
    const queue = new TurnEventQueue();
    this.turnQueues.set(runner, queue);
    this.turn = runner;
    void runner.run();
    return {
      turnId: runner.turnId,
      result,
      [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    };
  }

  private readonly turnCallbacks = new WeakMap<TurnRunner, HostCallbacks>();

  /** Emits an event of a turn to the log and to that turn's iterator. */
  emitTurnEvent<T extends AgentEventType>(turn: TurnRunner, type: T, payload: AgentEventPayloads[T]): void {
    const event = this.events.emit(type, turn.turnId, payload);
    this.turnQueues.get(turn)?.push(event);
  }

  /** Emits an out-of-turn event. */
  emitEvent<T extends AgentEventType>(type: T, payload: AgentEventPayloads[T]): void {
    this.events.emit(type, null, payload);
  }

  /** Called by the runner just before `turn.end`. */
  turnFinished(turn: TurnRunner, result: TurnResult): void {
    if (this.turn === turn) this.turn = null;
    this.turnCallbacks.delete(turn);
    queueMicrotask(() => this.turnQueues.delete(turn));
    if (result.outcome === 'completed') this.afterCompletedTurn();
  }

  private afterCompletedTurn(): void {
    if (this.ephemeral || this.kind === 'subagent' || !this.persisted) return;
    if (this.titleValue !== null || this.pendingTitle !== null) return;
    if (!this.host.settings().session.auto_title) return;
    // Runs after turn.end and never delays the result (spec/core.md §19).
    setTimeout(() => {
      void import('./titles.js')
        .then(({ generateTitle }) => generateTitle(this))
        .catch((error: unknown) => {
          this.host.logger.warn('auto-title failed', { error: String(error) });
        });
    }, 0);
  }

  steer(text: string): SteerResult {
    if (this.closed) return { status: 'rejected', reason: 'closed' };
    const trimmed = text.trim();
    if (trimmed === '') return { status: 'rejected', reason: 'empty' };
    if (!this.turn) return { status: 'rejected', reason: 'no_active_turn' };
    this.turn.steerBuffer.push(trimmed);
    return { status: 'queued' };
  }

  redirect(text: string): SteerResult {
    if (this.closed) return { status: 'rejected', reason: 'closed' };
    const trimmed = text.trim();
    if (trimmed === '') return { status: 'rejected', reason: 'empty' };
    if (!this.turn) return { status: 'rejected', reason: 'no_active_turn' };
    if (this.turn.redirect(trimmed)) return { status: 'redirected' };
    this.turn.steerBuffer.push(trimmed);
    return { status: 'queued' };
  }

  interrupt(options: InterruptOptions = {}): boolean {
    const turn = this.turn;
    if (!turn) return false;
    return turn.interrupt(makeInterruptReason(options));
  }

  async retry(options: RunTurnOptions = {}): Promise<TurnRun> {
    this.assertIdle('retry');
    const lastUser = [...this.transcript].reverse().find(startsTurn);
    if (!lastUser) throw new HermesError('invalid_input', 'There is no turn to retry.');
    const persistAs = lastUser.displayKind !== null || lastUser.displayMetadata !== null;
    const input: TurnInput = lastUser.contentParts ? { content: lastUser.contentParts } : { text: lastUser.content };
    if (persistAs) {
      input.persistAs = { text: lastUser.content };
      if (lastUser.displayKind) input.persistAs.displayKind = lastUser.displayKind;
      if (lastUser.displayMetadata) input.persistAs.displayMetadata = lastUser.displayMetadata;
    }
    await this.undo();
    return this.runTurn(input, options);
  }

  // ---- transcript and store ------------------------------------------------------------------

  /** The user row of a turn's input. */
  userRowFor(input: TurnInput, turnId: string): NewMessage {
    const parts = input.content ?? null;
    const text = input.text ?? (parts ? joinText(parts) : '');
    // The model always receives the input as given; persistAs only changes the stored text and display
    // fields, so the full input travels in contentParts whenever the stored text differs from it.
    let contentParts: ContentPart[] | null = null;
    if (parts)
      contentParts =
        input.text && !parts.some((part) => part.type === 'text')
          ? [{ type: 'text', text: input.text }, ...parts]
          : parts;
    else if (input.persistAs?.text !== undefined && input.persistAs.text !== text)
      contentParts = [{ type: 'text', text }];
    const content = input.persistAs?.text ?? text;
    return {
      turnId,
      role: 'user',
      content,
      contentParts,
      displayKind: input.persistAs?.displayKind ?? null,
      displayMetadata: input.persistAs?.displayMetadata ?? null,
      tokenCount: estimateTokens(content),
    };
  }

  /** Appends rows in memory and, for persisted sessions, to the store. */
  async appendRows(rows: NewMessage[]): Promise<(number | null)[]> {
    if (rows.length === 0) return [];
    let ids: (number | null)[] = rows.map(() => null);
    if (this.persisted && !this.ephemeral) ids = await this.host.store.appendMessages(this.sessionId, rows);
    const now = this.host.clock.now();
    rows.forEach((row, index) => {
      const transcriptRow: TranscriptRow = {
        rowId: ids[index] ?? null,
        turnId: row.turnId ?? null,
        role: row.role,
        content: row.content,
        contentParts: row.contentParts ?? null,
        toolCalls: row.toolCalls ?? null,
        toolCallId: row.toolCallId ?? null,
        toolName: row.toolName ?? null,
        reasoning: row.reasoning ?? null,
        providerMetadata: row.providerMetadata ?? null,
        finishReason: row.finishReason ?? null,
        displayKind: row.displayKind ?? null,
        displayMetadata: row.displayMetadata ?? null,
        timestamp: row.timestamp ?? now,
      };
      this.transcript.push(transcriptRow);
      this.charsSinceLastCall += rowChars(transcriptRow);
      const id = ids[index];
      if (id !== null && id !== undefined) this.generation.lastRowId = Math.max(this.generation.lastRowId, id);
    });
    return ids;
  }

  /** Reloads the transcript when another process changed the session (spec/core.md §7.1.4). */
  async reloadIfChanged(): Promise<void> {
    if (!this.persisted) return;
    const current = await this.host.store.generation(this.sessionId);
    if (!current) return;
    if (current.lastRowId === this.generation.lastRowId && current.rewindCount === this.generation.rewindCount) return;
    await this.reload();
  }

  /** Re-reads the session row and transcript from the store. */
  async reload(): Promise<void> {
    const row = await this.host.store.getSession(this.sessionId);
    if (!row) return;
    this.systemPrompt = row.systemPrompt;
    this.modelConfig = { ...row.modelConfig };
    this.titleValue = row.title;
    this.titleSourceValue = row.titleSource;
    this.loadRows(await this.host.store.loadConversation(this.sessionId), row.rewindCount);
    this.lastPromptTokens = 0;
  }

  async persist(): Promise<void> {
    this.assertOpen();
    if (this.persisted) return;
    if (this.ephemeral) throw new HermesError('not_supported', 'An ephemeral session is never stored.');
    await this.ensureSystemPrompt(this.route);
    await this.createRow();
  }

  /** Creates the session row with its seed rows (lazy creation, spec/core.md §9.4.1). */
  async createRow(): Promise<void> {
    if (this.persisted || this.ephemeral) return;
    const seed = this.transcript.filter((row) => row.rowId === null);
    let title = this.pendingTitle;
    let titleSource: 'user' | null = title ? 'user' : null;
    if (title && (await this.host.store.isTitleTaken(title))) {
      const next = await this.host.store.nextAvailableTitle(title);
      this.emitEvent('notice', {
        level: 'warning',
        key: 'title_taken',
        text: `The title "${title}" was taken meanwhile; using "${next}".`,
      });
      title = next;
      titleSource = 'user';
    }
    const created = await this.host.store.createSession(
      {
        id: this.sessionId,
        source: this.source,
        kind: this.kind,
        title,
        titleSource,
        parentSessionId: this.parentSessionId,
        model: this.route?.spec ?? this.modelSpec,
        modelConfig: this.storedModelConfig(),
        systemPrompt: this.systemPrompt,
        cwd: this.cwd,
        hidden: this.hidden,
        startedAt: this.createdAt,
      },
      seed.map((row) => ({
        turnId: null,
        role: row.role,
        content: row.content,
        contentParts: row.contentParts,
        toolCalls: row.toolCalls,
        toolCallId: row.toolCallId,
        toolName: row.toolName,
        reasoning: row.reasoning,
        timestamp: row.timestamp,
        displayKind: row.displayKind,
        displayMetadata: row.displayMetadata,
      })),
    );
    this.persisted = true;
    this.titleValue = created.title;
    this.titleSourceValue = created.titleSource;
    this.pendingTitle = null;
    const stored = await this.host.store.loadConversation(this.sessionId);
    this.loadRows(stored, created.rewindCount);
    this.host.emitHostEvent({ type: 'session.created', sessionId: this.sessionId });
  }

  private storedModelConfig(): SessionModelConfig {
    const config: SessionModelConfig = { ...this.modelConfig };
    if (this.route?.baseUrl) config.base_url = this.route.baseUrl;
    if (this.reasoningEffort !== null) config.reasoning_effort = this.reasoningEffort;
    if (this.options.toolsets) config.toolsets = this.options.toolsets;
    if (this.disabled.size > 0) config.disabled_tools = [...this.disabled];
    if (this.yolo) config.yolo = true;
    if (this.delegateFrom) config.delegate_from = this.delegateFrom;
    return config;
  }

  /** The stored system prompt text (built if absent). */
  systemPromptText(): string {
    return this.systemPrompt ?? '';
  }

  /** Restores the stored prompt, or builds and stores it when absent or stale (spec/core.md §7.3). */
  async ensureSystemPrompt(route: ResolvedRoute | null): Promise<void> {
    const toolNames = this.activeTools().map((tool) => tool.name);
    const fingerprint = promptFingerprint(route?.spec ?? null, toolNames, this.cwd);
    if (this.systemPrompt && this.modelConfig.prompt_fingerprint === fingerprint) return;
    const settings = this.host.settings();
    this.systemPrompt = buildSystemPrompt({
      homeDir: this.host.homeDir,
      toolNames,
      configuredText: this.options.systemPrompt ?? settings.agent.system_prompt ?? null,
      cwd: this.cwd,
      skipContextFiles: this.options.skipContextFiles ?? false,
      createdAt: this.createdAt,
      model: route ? { provider: route.provider, model: route.model } : null,
      source: this.source,
      ...(this.kind === 'subagent' && this.subagentInfo ? { focusInstruction: subagentInstruction() } : {}),
    });
    this.modelConfig.prompt_fingerprint = fingerprint;
    if (this.persisted) {
      await this.host.store.updateSession(this.sessionId, {
        systemPrompt: this.systemPrompt,
        modelConfig: this.storedModelConfig(),
      });
    }
  }

  /** Marks the stored prompt stale; it is rebuilt at the next turn start. */
  private markPromptStale(): void {
    delete this.modelConfig.prompt_fingerprint;
  }

  /** Writes a pending model-switch marker row at turn start (spec/core.md §10.6). */
  async writePendingModelSwitch(turnId: string): Promise<void> {
    const pending = this.pendingModelSwitch;
    if (!pending) return;
    this.pendingModelSwitch = null;
    if (!this.persisted && !this.ephemeral) return;
    await this.appendRows([
      {
        turnId,
        role: 'user',
        content: `The model for this conversation was switched from ${pending.from} to ${pending.to}.`,
        displayKind: 'model_switch',
      },
    ]);
  }

  /** A call id that is non-empty and unique in the session (spec/core.md §7.7). */
  uniqueCallId(id: string): string {
    let chosen = id;
    if (chosen === '' || this.usedCallIds.has(chosen)) chosen = newId('call_', 24);
    this.usedCallIds.add(chosen);
    return chosen;
  }

  /** Tools the model sees in this session. */
  activeTools(): ToolDefinition[] {
    const settings = this.host.settings();
    const toolsets = new Set(this.options.toolsets ?? settings.toolsets);
    const globallyDisabled = new Set(settings.tools.disabled);
    const hasClarify = Boolean(this.callbacks.clarify ?? this.host.callbacks.clarify);
    const hasClientRequests = Boolean(this.callbacks.clientRequest ?? this.host.callbacks.clientRequest);
    const isSubagent = this.kind === 'subagent';
    return this.host.toolsForSession(this.sessionId).filter((tool) => {
      if (this.disabled.has(tool.name) || this.disabled.has(tool.toolset)) return false;
      const forced = this.enabledOverride.has(tool.name) || this.enabledOverride.has(tool.toolset);
      if (!forced && (!toolsets.has(tool.toolset) || globallyDisabled.has(tool.name))) return false;
      if (isSubagent && (tool.name === 'delegate_task' || tool.name === 'clarify')) return false;
      if (
        tool.available &&
        !tool.available({ sessionId: this.sessionId, source: this.source, hasClarify, isSubagent, hasClientRequests })
      )
        return false;
      return true;
    });
  }

  // ---- usage ---------------------------------------------------------------------------------

  /** Records the usage of one call in memory (the store is updated by the caller). */
  noteUsage(route: ResolvedRoute, usage: Usage, costUsd: number, status: CostStatus, task: string): void {
    if (task !== 'subagent') {
      this.sessionUsage = addUsage(this.sessionUsage, usage);
      this.sessionCost += costUsd;
      this.sessionCostStatus = this.hasCalls ? weakestCostStatus(this.sessionCostStatus, status) : status;
      this.hasCalls = true;
    } else {
      const { costUsd: previousCost, ...previous } = this.subagentUsage;
      this.subagentUsage = { ...addUsage(previous, usage), costUsd: previousCost + costUsd };
    }
    const key = `${route.provider}\u0000${route.model}\u0000${task}`;
    const entry = this.byModel.get(key) ?? {
      provider: route.provider,
      model: route.model,
      task,
      usage: zeroUsage(),
      costUsd: 0,
    };
    entry.usage = addUsage(entry.usage, usage);
    entry.costUsd += costUsd;
    this.byModel.set(key, entry);
  }

  /** Sets the base of the context estimate to a main call's measured prompt (spec/core.md §17.4). */
  notePromptTokens(tokens: number): void {
    this.lastPromptTokens = tokens;
    this.charsSinceLastCall = 0;
  }

  /** The context estimate: last prompt tokens + an estimate of rows appended since (spec/core.md §17.4). */
  contextEstimate(): number {
    return (
      this.lastPromptTokens +
      Math.ceil(this.charsSinceLastCall / 4) +
      (this.lastPromptTokens === 0 ? Math.ceil(this.systemPromptText().length / 4) : 0)
    );
  }

  /** Resets the context estimate after a compression or a model switch. */
  resetContextEstimate(): void {
    this.lastPromptTokens = 0;
    this.charsSinceLastCall = this.transcript.reduce((sum, row) => sum + rowChars(row), 0);
  }

  contextWindow(): number {
    return this.route?.contextWindow ?? 128_000;
  }

  usage(): UsageSnapshot {
    const settings = this.host.settings();
    const estimated = this.contextEstimate();
    const window = this.contextWindow();
    return {
      session: { ...this.sessionUsage },
      costUsd: this.sessionCost,
      costStatus: this.hasCalls ? this.sessionCostStatus : 'unknown',
      byModel: [...this.byModel.values()].map((entry) => ({ ...entry, usage: { ...entry.usage } })),
      context: {
        lastPromptTokens: this.lastPromptTokens,
        estimatedTokens: estimated,
        contextWindow: window,
        ratio: window > 0 ? estimated / window : 0,
        threshold: settings.compression.threshold,
      },
      subagents: { ...this.subagentUsage },
    };
  }

  /** Adds a child's usage to the parent's subagent figures (spec/core.md §14). */
  async noteSubagentUsage(
    route: ResolvedRoute | null,
    usage: Usage,
    costUsd: number,
    status: CostStatus,
  ): Promise<void> {
    const provider = route?.provider ?? 'unknown';
    const model = route?.model ?? 'unknown';
    this.noteUsage(route ?? ({ provider, model } as ResolvedRoute), usage, costUsd, status, 'subagent');
    if (this.persisted) {
      await this.host.store.recordUsage(this.sessionId, {
        provider,
        model,
        task: 'subagent',
        usage,
        costUsd,
        costStatus: status,
      });
    }
  }

  status(): AgentStatus {
    const turn = this.turn;
    return {
      sessionId: this.sessionId,
      persisted: this.persisted,
      busy: turn !== null,
      turnId: turn?.turnId ?? null,
      phase: turn ? this.phaseOf(turn) : 'idle',
      iteration: turn?.iteration ?? 0,
      maxIterations: this.maxIterations ?? this.host.settings().agent.max_iterations,
      streamingText: turn?.phase === 'model' ? turn.streamingText : '',
      pendingApproval: this.pendingApproval,
      pendingClarify: this.pendingClarify,
      pendingSteer: turn && turn.steerBuffer.length > 0 ? turn.steerBuffer.join('\n') : null,
      model: this.model,
      title: this.title(),
      cwd: this.cwd,
      lastSeq: this.events.lastSeq,
      reasoningEffort: this.reasoningEffort,
    };
  }

  private phaseOf(turn: TurnRunner): AgentStatus['phase'] {
    if (this.pendingApproval) return 'awaiting_approval';
    if (this.pendingClarify) return 'awaiting_clarify';
    return turn.phase;
  }

  async history(options: { includeInactive?: boolean } = {}): Promise<StoredMessage[]> {
    if (this.persisted) return this.host.store.loadConversation(this.sessionId, options);
    return this.transcript.map((row, index) => ({
      ...row,
      rowId: row.rowId ?? -(index + 1),
      sessionId: this.sessionId,
      tokenCount: null,
      active: true,
      compacted: false,
      supersededBy: null,
    }));
  }

  // ---- settings ------------------------------------------------------------------------------

  async setTitle(title: string | null): Promise<string | null> {
    this.assertOpen();
    const cleaned = title === null ? null : title.trim().slice(0, 100) || null;
    if (!this.persisted) {
      if (cleaned !== null && !this.ephemeral && (await this.host.store.isTitleTaken(cleaned, this.sessionId))) {
        throw new HermesError('title_taken', `The title "${cleaned}" is already used by another session.`);
      }
      this.pendingTitle = cleaned;
      if (cleaned !== null) this.emitEvent('title', { title: cleaned, source: 'user' });
      return cleaned;
    }
    const stored = await this.host.store.setTitle(this.sessionId, cleaned, 'user');
    this.titleValue = stored;
    this.titleSourceValue = stored === null ? null : 'user';
    if (stored !== null) this.emitEvent('title', { title: stored, source: 'user' });
    this.host.emitHostEvent({ type: 'session.updated', sessionId: this.sessionId, fields: ['title'] });
    return stored;
  }

  /** Sets a generated title unless the user set one meanwhile (spec/core.md §19). */
  async applyGeneratedTitle(title: string, source: 'llm' | 'derived'): Promise<void> {
    if (this.closed || this.titleSourceValue === 'user' || this.titleValue !== null || this.pendingTitle !== null)
      return;
    const stored = await this.host.store.setTitle(this.sessionId, title, source);
    if (stored === null) return;
    this.titleValue = stored;
    this.titleSourceValue = source;
    this.emitEvent('title', { title: stored, source });
    this.host.emitHostEvent({ type: 'session.updated', sessionId: this.sessionId, fields: ['title'] });
  }

  async setCwd(cwd: string): Promise<void> {
    this.assertIdle('change the working directory');
    this.currentCwd = cwd;
    this.markPromptStale();
    if (this.persisted)
      await this.host.store.updateSession(this.sessionId, { cwd, modelConfig: this.storedModelConfig() });
  }

  setYolo(on: boolean): void {
    this.assertOpen();
    this.yolo = on;
  }

  setToolEnabled(nameOrToolset: string, enabled: boolean): void {
    this.assertIdle('change tools');
    if (enabled) {
      this.disabled.delete(nameOrToolset);
      this.enabledOverride.add(nameOrToolset);
    } else {
      this.disabled.add(nameOrToolset);
      this.enabledOverride.delete(nameOrToolset);
    }
    this.markPromptStale();
  }

  async setReasoningEffort(effort: 'none' | 'low' | 'medium' | 'high' | null): Promise<void> {
    this.assertOpen();
    this.reasoningEffort = effort;
    if (effort === null) delete this.modelConfig.reasoning_effort;
    else this.modelConfig.reasoning_effort = effort;
    if (this.persisted) await this.host.store.updateSession(this.sessionId, { modelConfig: this.storedModelConfig() });
  }

  async switchModel(spec: string, options: { persist?: 'session' | 'global' } = {}): Promise<ModelSwitchResult> {
    this.assertOpen();
    const from = this.model;
    let route: ResolvedRoute;
    try {
      route = this.host.resolveRoute(spec, this.route?.provider ?? null);
    } catch (error) {
      return {
        ok: false,
        from,
        error: {
          code: HermesError.isInstance(error) ? error.code : 'invalid_model_spec',
          message: error instanceof Error ? error.message : String(error),
        },
      };
    }
    const running = this.turn !== null;
    const providerChanged = from?.provider !== route.provider;
    this.route = route;
    this.modelSpec = route.spec;
    this.resetContextEstimate();
    this.markPromptStale();
    const persist = options.persist ?? 'session';
    if (this.persisted) {
      await this.host.store.updateSession(this.sessionId, { model: route.spec, modelConfig: this.storedModelConfig() });
      if (from && from.spec !== route.spec) {
        const marker = { from: from.spec, to: route.spec };
        if (running) this.pendingModelSwitch = marker;
        else {
          this.pendingModelSwitch = null;
          await this.appendRows([
            {
              role: 'user',
              content: `The model for this conversation was switched from ${marker.from} to ${marker.to}.`,
              displayKind: 'model_switch',
            },
          ]);
        }
      }
    }
    if (persist === 'global') await this.host.persistDefaultModel(route);
    const appliesFrom = running ? 'next_turn' : 'now';
    this.emitEvent('model.switched', { from, to: publicRoute(route), appliesFrom });
    if (this.persisted)
      this.host.emitHostEvent({ type: 'session.updated', sessionId: this.sessionId, fields: ['model'] });
    return {
      ok: true,
      from,
      to: publicRoute(route),
      providerChanged,
      contextWindow: route.contextWindow,
      appliesFrom,
      persisted: persist,
    };
  }

  // ---- compression, rewind, branch -----------------------------------------------------------

  async compress(options: { force?: boolean; focus?: string; keepLastN?: number } = {}): Promise<CompressionResult> {
    this.assertOpen();
    const tokens = this.contextEstimate();
    if (this.turn)
      return {
        ok: false,
        skipped: 'busy',
        tokensBefore: tokens,
        tokensAfter: tokens,
        archivedRows: 0,
        summaryRowId: null,
      };
    return runCompression(this, {
      trigger: 'manual',
      force: options.force ?? true,
      focus: options.focus,
      keepLastN: options.keepLastN,
      turn: null,
    });
  }

  /** Compression check from inside a turn. */
  async compressNow(
    trigger: 'preflight' | 'pressure' | 'post_tool' | 'overflow',
    turn: TurnRunner,
    force: boolean,
  ): Promise<CompressionResult> {
    return runCompression(this, { trigger, force, turn });
  }

  /** Session model config, for compression's cooldown bookkeeping. */
  getModelConfig(): SessionModelConfig {
    return this.modelConfig;
  }

  async saveModelConfig(): Promise<void> {
    if (this.persisted) await this.host.store.updateSession(this.sessionId, { modelConfig: this.storedModelConfig() });
  }

  /** Replaces the transcript after a compaction commit. */
  async afterCompaction(): Promise<void> {
    if (this.persisted) await this.reload();
    this.resetContextEstimate();
  }

  async rewind(options: { beforeRowId: number }): Promise<RewindResult> {
    this.assertIdle('rewind');
    if (!this.persisted) return this.rewindInMemory(options.beforeRowId);
    const result = await this.host.store.rewind(this.sessionId, options);
    await this.reload();
    return result;
  }

  /**
   * Cuts the transcript of a session without a stored row. Its rows have the negative ids that
   * `history()` gives them (row n is -(n + 1)); nothing is archived because nothing is stored.
   */
  private rewindInMemory(beforeRowId: number): RewindResult {
    const index = -beforeRowId - 1;
    if (!Number.isInteger(index) || index < 0 || index >= this.transcript.length) {
      throw new HermesError('invalid_input', `No row ${beforeRowId} in this unsaved session.`);
    }
    const removedRows = this.transcript.slice(index);
    const firstUser = removedRows.find(startsTurn);
    this.transcript = this.transcript.slice(0, index);
    this.resetContextEstimate();
    return { removed: [], removedUserText: firstUser?.content ?? null, idMap: {}, rewindCount: 0 };
  }

  async undo(): Promise<RewindResult> {
    this.assertIdle('undo');
    if (!this.persisted) {
      const index = this.transcript.map(startsTurn).lastIndexOf(true);
      if (index < 0) return { removed: [], removedUserText: null, idMap: {}, rewindCount: 0 };
      return this.rewindInMemory(-(index + 1));
    }
    const result = await this.host.store.undo(this.sessionId);
    await this.reload();
    return result;
  }

  async branch(options: { title?: string; upToRowId?: number } = {}): Promise<Agent> {
    this.assertIdle('branch');
    if (this.ephemeral) throw new HermesError('not_supported', 'An ephemeral session cannot be branched.');
    if (!this.persisted) {
      await this.ensureSystemPrompt(this.route);
      await this.createRow();
    }
    const branchOptions: { title?: string; upToRowId?: number; source?: string } = { source: this.source };
    if (options.title !== undefined) branchOptions.title = options.title;
    if (options.upToRowId !== undefined) branchOptions.upToRowId = options.upToRowId;
    const row = await this.host.store.branch(this.sessionId, branchOptions);
    this.host.emitHostEvent({ type: 'session.created', sessionId: row.id });
    const resumeOptions: { callbacks?: HostCallbacks } = {};
    if (this.options.callbacks) resumeOptions.callbacks = this.options.callbacks;
    return this.host.resumeSession(row.id, resumeOptions);
  }

  // ---- tools ---------------------------------------------------------------------------------

  private callbacksFor(turn: TurnRunner | null): HostCallbacks {
    const perTurn = turn ? this.turnCallbacks.get(turn) : undefined;
    return { ...this.host.callbacks, ...this.callbacks, ...(perTurn ?? {}) };
  }

  /** Builds the context a tool call executes with. */
  toolContext(turn: TurnRunner, callId: string, signal: AbortSignal): ToolContext {
    const host = this.host;
    let lastProgress = 0;
    let pendingOutput = '';
    let flushTimer: (() => void) | null = null;
    const flush = () => {
      flushTimer = null;
      if (pendingOutput === '') return;
      const output = pendingOutput;
      pendingOutput = '';
      lastProgress = host.clock.now();
      this.emitTurnEvent(turn, 'tool.progress', { callId, output });
    };
    return {
      sessionId: this.sessionId,
      turnId: turn.turnId,
      callId,
      memoryScope: turn.memoryScope,
      cwd: this.cwd,
      signal,
      env: host.subprocessEnv(),
      settings: host.toolSettings(),
      files: this.checkpointedFiles,
      commands: this.commandRunner,
      processes: host.processes,
      progress: (update) => {
        // At most 10 progress events per second per call; output chunks are coalesced.
        if (update.message !== undefined) {
          this.emitTurnEvent(turn, 'tool.progress', { callId, message: update.message });
          return;
        }
        if (update.output === undefined) return;
        pendingOutput += update.output;
        const wait = 100 - (host.clock.now() - lastProgress);
        if (wait <= 0) flush();
        else if (!flushTimer) flushTimer = host.clock.setTimer(flush, wait);
      },
      requestApproval: (input) => this.requestApproval(turn, callId, input.command, input.cwd, signal),
      clarify: (input) => this.askClarify(turn, callId, input, signal),
      sudoPassword: (command) => this.askSudo(turn, callId, command, signal),
      clientRequest: async (method, params) => {
        const ask = this.callbacksFor(turn).clientRequest;
        if (!ask)
          throw new HermesError('not_supported', `this session has no client that can answer ${method} requests`);
        return ask({ method, params, sessionId: this.sessionId, turnId: turn.turnId, callId }, signal);
      },
      services: {
        todos: {
          get: () => [...this.todoList],
          set: (todos) => {
            this.todoList = [...todos];
            this.emitTurnEvent(turn, 'todo.updated', { todos: [...todos] });
          },
        },
        fetch: host.fetch,
        ...(this.kind === 'subagent'
          ? {}
          : {
              delegate: async (tasks: { goal: string; context?: string }[], delegateSignal: AbortSignal) => {
                const { runDelegation } = await import('./delegation.js');
                return runDelegation(this, turn, callId, tasks, delegateSignal);
              },
            }),
      },
    };
  }

  /** Grants recorded on the approval root (the root session for subagents). */
  private get grantRoot(): AgentCore {
    // The host creates every session as an AgentCore, so the root's own state is reachable here.
    return (this.approvalRoot ?? this) as AgentCore;
  }

  /** The decision order of spec/core.md §12.3, steps 2 to 7. */
  async requestApproval(
    turn: TurnRunner,
    callId: string,
    command: string,
    cwd: string,
    signal: AbortSignal,
  ): Promise<ApprovalOutcome> {
    const detection = detectDangerousCommand(command);
    const settings = this.host.settings();
    const requestId = newId('apr_', 16);
    const resolved = (
      choice: ApprovalChoice | null,
      source: AgentEventPayloads['approval.resolved']['source'],
      approved: boolean,
      reason?: string,
    ): ApprovalOutcome => {
      this.emitTurnEvent(turn, 'approval.resolved', { requestId, callId, choice, source });
      const outcome: ApprovalOutcome = { approved, choice, source, cancelled: source === 'cancelled' };
      if (reason !== undefined) outcome.reason = reason;
      return outcome;
    };
    if (detection.blocked) return resolved('deny', 'policy', false, detection.blockReason ?? 'blocked by policy');
    if (detection.patternKeys.length === 0) return { approved: true, choice: null, source: 'none', cancelled: false };
    const root = this.grantRoot;
    if (root.yolo || this.yolo || settings.approvals.yolo) return resolved('once', 'yolo', true);
    if (settings.approvals.mode === 'off') return resolved('once', 'policy', true);
    const allowlist = new Set(settings.command_allowlist);
    if (detection.patternKeys.every((key) => allowlist.has(key))) return resolved('once', 'allowlist', true);
    if (detection.patternKeys.every((key) => root.sessionGrants.has(key)))
      return resolved('session', 'session_grant', true);
    if (settings.approvals.mode === 'smart') {
      const { smartVerdict } = await import('./smart-approval.js');
      const verdict = await smartVerdict(this, command, detection.descriptions, signal);
      if (verdict === 'approve') return resolved('once', 'smart', true);
      if (verdict === 'deny')
        return resolved('deny', 'smart', false, 'judged too dangerous by the smart approval check');
    }
    const callbacks = root === this ? this.callbacksFor(turn) : root.callbacksFor(root.currentTurn);
    if (!callbacks.approve) {
      if (!this.noCallbackNoticeSent) {
        this.noCallbackNoticeSent = true;
        this.emitTurnEvent(turn, 'notice', {
          level: 'warning',
          key: 'no_approval_callback',
          text: 'A command needed approval but no approve callback is installed, so it was denied. Provide callbacks.approve (or enable YOLO mode) to run dangerous commands.',
        });
      }
      return resolved('deny', 'no_callback', false, 'no approval callback is installed');
    }
    const timeoutMs = settings.approvals.timeout * 1000;
    const choices: ApprovalChoice[] = this.host.configWritable()
      ? ['once', 'session', 'always', 'deny']
      : ['once', 'session', 'deny'];
    const request: ApprovalRequest = {
      requestId,
      sessionId: root.sessionId,
      turnId: turn.turnId,
      callId,
      toolName: 'terminal',
      command,
      cwd,
      patternKeys: detection.patternKeys,
      descriptions: detection.descriptions,
      choices,
      expiresAt: this.host.clock.now() + timeoutMs,
    };
    if (this.subagentInfo) request.subagent = { ...this.subagentInfo };
    const answer = await this.waitForAnswer(
      turn,
      signal,
      timeoutMs,
      (waitSignal) => callbacks.approve!(request, waitSignal),
      {
        onStart: () => {
          this.pendingApproval = request;
          this.emitTurnEvent(turn, 'approval.request', { request });
          if (root !== this) root.pendingApproval = request;
        },
        onEnd: () => {
          this.pendingApproval = null;
          if (root !== this) root.pendingApproval = null;
        },
      },
    );
    if (answer.kind === 'cancelled') return resolved(null, 'cancelled', false, 'the turn was interrupted');
    if (answer.kind === 'timeout')
      return resolved('deny', 'timeout', false, `no decision within ${settings.approvals.timeout} s`);
    if (answer.kind === 'error') return resolved('deny', 'error', false, 'the approval callback failed');
    const decision = answer.value;
    const choice: ApprovalChoice = typeof decision === 'string' ? decision : decision.choice;
    if (choice === 'deny') {
      const policy = typeof decision === 'string' ? undefined : decision.policy;
      return policy === undefined
        ? resolved('deny', 'user', false, 'denied by the user')
        : resolved('deny', 'policy', false, `refused by policy: ${policy}`);
    }
    if (choice === 'session' || choice === 'always')
      for (const key of detection.patternKeys) root.sessionGrants.add(key);
    if (choice === 'always') {
      try {
        await this.host.persistAllowlist(detection.patternKeys);
      } catch (error) {
        this.host.logger.warn('could not persist the command allowlist', { error: String(error) });
      }
    }
    return resolved(choice, 'user', true);
  }

  /** Waits for a callback with a timeout, the turn's signal and the caller's signal. */
  private async waitForAnswer<T>(
    turn: TurnRunner,
    signal: AbortSignal,
    timeoutMs: number,
    ask: (waitSignal: AbortSignal) => Promise<T>,
    hooks: { onStart: () => void; onEnd: () => void },
  ): Promise<{ kind: 'answer'; value: T } | { kind: 'timeout' } | { kind: 'cancelled' } | { kind: 'error' }> {
    const waitController = new AbortController();
    const waitSignal = AbortSignal.any([signal, turn.signal, waitController.signal]);
    const previousPhase = turn.phase;
    hooks.onStart();
    let cancelTimer: (() => void) | null = null;
    try {
      return await new Promise((resolve) => {
        const onAbort = () => resolve({ kind: 'cancelled' });
        if (waitSignal.aborted) return onAbort();
        cancelTimer = this.host.clock.setTimer(() => {
          waitController.abort(new Error('timeout'));
          resolve({ kind: 'timeout' });
        }, timeoutMs);
        waitSignal.addEventListener('abort', () => {
          if (!waitController.signal.aborted) onAbort();
        });
        ask(waitSignal).then(
          (value) => resolve({ kind: 'answer', value }),
          () =>
            resolve(waitSignal.aborted && !waitController.signal.aborted ? { kind: 'cancelled' } : { kind: 'error' }),
        );
      });
    } finally {
      (cancelTimer as (() => void) | null)?.();
      if (!waitController.signal.aborted) waitController.abort(new Error('settled'));
      hooks.onEnd();
      turn.phase = previousPhase;
    }
  }

  private async askClarify(
    turn: TurnRunner,
    callId: string,
    input: {
      question: string;
      choices?: string[];
      multiSelect?: boolean;
      questions?: import('../types.js').ClarifyQuestion[];
    },
    signal: AbortSignal,
  ): Promise<ClarifyOutcome> {
    const callbacks = this.callbacksFor(turn);
    const settings = this.host.settings();
    const timeoutMs = settings.agent.clarify_timeout * 1000;
    const request: ClarifyRequest = {
      requestId: newId('clr_', 16),
      sessionId: this.sessionId,
      turnId: turn.turnId,
      callId,
      question: input.question,
      choices: input.choices ?? [],
      multiSelect: input.multiSelect ?? false,
      expiresAt: this.host.clock.now() + timeoutMs,
    };
    if (input.questions) request.questions = input.questions;
    const settle = (
      answer: ClarifyAnswer | Record<string, ClarifyAnswer>,
      source: AgentEventPayloads['clarify.resolved']['source'],
    ) => this.emitTurnEvent(turn, 'clarify.resolved', { requestId: request.requestId, answer, source });
    if (!callbacks.clarify) {
      settle(null, 'error');
      return { answer: null, timedOut: false, cancelled: false };
    }
    const clarify = callbacks.clarify;
    const answer = await this.waitForAnswer(turn, signal, timeoutMs, (waitSignal) => clarify(request, waitSignal), {
      onStart: () => {
        this.pendingClarify = request;
        this.emitTurnEvent(turn, 'clarify.request', { request });
      },
      onEnd: () => {
        this.pendingClarify = null;
      },
    });
    if (answer.kind === 'cancelled') {
      settle(null, 'cancelled');
      return { answer: null, timedOut: false, cancelled: true };
    }
    if (answer.kind === 'timeout') {
      settle(null, 'timeout');
      return { answer: null, timedOut: true, cancelled: false };
    }
    if (answer.kind === 'error') {
      settle(null, 'error');
      return { answer: null, timedOut: false, cancelled: false };
    }
    const value = answer.value;
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && 'answers' in value) {
      settle(value.answers, 'user');
      return { answer: null, answers: value.answers, timedOut: false, cancelled: false };
    }
    settle(value as ClarifyAnswer, 'user');
    return { answer: value as ClarifyAnswer, timedOut: false, cancelled: false };
  }

  /**
   * A provider whose key variable is missing asks the `secret` callback (spec/core.md §24.7); an
   * answer is written to HERMES_HOME/.env and the turn continues. Without the callback it declines.
   */
  async askForMissingSecret(turn: TurnRunner, error: unknown): Promise<boolean> {
    if (!HermesError.isInstance(error) || error.code !== 'missing_credentials') return false;
    const envVar = error.details?.envVar;
    if (typeof envVar !== 'string' || envVar === 'HERMES_BASE_URL') return false;
    const secret = this.callbacksFor(turn).secret;
    if (!secret) return false;
    const request = {
      requestId: newId('sec_', 16),
      sessionId: this.sessionId,
      envVar,
      prompt: `${error.message} Enter ${envVar}:`,
    };
    const timeoutMs = this.host.settings().approvals.timeout * 1000;
    const answer = await this.waitForAnswer(turn, turn.signal, timeoutMs, (waitSignal) => secret(request, waitSignal), {
      onStart() {},
      onEnd() {},
    });
    if (answer.kind !== 'answer' || answer.value.value.trim() === '') return false;
    await this.host.storeSecret(envVar, answer.value.value.trim());
    return true;
  }

  private async askSudo(
    turn: TurnRunner,
    callId: string,
    command: string,
    signal: AbortSignal,
  ): Promise<string | null> {
    const callbacks = this.callbacksFor(turn);
    const sudo = callbacks.sudo;
    if (!sudo) return null;
    const request = { requestId: newId('sudo_', 16), sessionId: this.sessionId, turnId: turn.turnId, callId, command };
    const timeoutMs = this.host.settings().approvals.timeout * 1000;
    const answer = await this.waitForAnswer(turn, signal, timeoutMs, (waitSignal) => sudo(request, waitSignal), {
      onStart() {},
      onEnd() {},
    });
    if (answer.kind !== 'answer' || answer.value.value === '') return null;
    return answer.value.value;
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  /** Waits for the running turn (if any) to end. */
  async settle(): Promise<void> {
    const turn = this.turn;
    if (!turn) return;
    await new Promise<void>((resolve) => {
      const unsubscribe = this.events.subscribe((event) => {
        if (event.type === 'turn.end' && event.turnId === turn.turnId) {
          unsubscribe();
          resolve();
        }
      });
      if (!this.turn) {
        unsubscribe();
        resolve();
      }
    });
  }

  async close(options: { endReason?: string; issuer?: string } = {}): Promise<void> {
    if (this.closed) return;
    if (this.turn) {
      this.turn.interrupt(
        makeInterruptReason({ issuer: options.issuer ?? 'session_closed', reason: 'the session was closed' }),
      );
      await this.settle();
    }
    this.closed = true;
    await this.host.processes.killSession(this.sessionId);
    if (this.persisted) {
      try {
        await this.host.store.endSession(this.sessionId, options.endReason ?? 'closed');
        this.host.emitHostEvent({ type: 'session.updated', sessionId: this.sessionId, fields: ['ended'] });
      } catch (error) {
        this.host.logger.warn('could not end the session row', { error: String(error) });
      }
    }
    this.host.forgetAgent(this.sessionId);
    if (this.ownsHost) await this.host.close();
  }
}

function joinText(parts: ContentPart[]): string {
  return parts
    .filter((part): part is Extract<ContentPart, { type: 'text' }> => part.type === 'text')
    .map((part) => part.text)
    .join('\n');
}

function subagentInstruction(): string {
  return 'Work only on the goal given in the first message, using the context given there. When you are done, end with a final message made of four sections: Summary, Details, Files changed, and Open issues.';
}
