import { HermesError } from '../errors.js';
import { newId } from '../ids.js';
import { weakestCostStatus } from '../providers/index.js';
import type { ResolvedRoute } from '../providers/types.js';
import { isLeaseLost } from '../store/fence.js';
import type {
  NewMessage,
  SessionModelConfig,
  StoredMessage,
  TurnCommit,
  UsageEntry,
  WriteOptions,
} from '../store/types.js';
import type { ToolDefinition } from '../tools/types.js';
import type { ContentPart, CostStatus, Usage } from '../types.js';
import { addUsage, estimateTokens, zeroUsage } from '../usage.js';
import { AgentState, joinText } from './agent-state.js';
import { leaseLostInterrupt } from './interrupt.js';
import { buildSystemPrompt, promptFingerprint } from './system-prompt.js';
import { rowChars, type TranscriptRow } from './transcript.js';
import type { TurnRunner } from './turn.js';
import type { TurnInput } from './turn-types.js';
import { PendingTurnWrites } from './turn-writes.js';
import type { AgentStatus, UsageSnapshot } from './types.js';

/** The transcript, the stored session row, the system prompt and the usage of a session. */
export abstract class AgentTranscript extends AgentState {
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

  /** The store options of a write the running turn makes: its lease's fence, when it holds one (ADR 0049). */
  writeOptions(): WriteOptions {
    const fence = this.turn?.fence;
    return fence ? { fence } : {};
  }

  /** Stops the running turn when `error` is a write its fence refused (ADR 0049); the caller rethrows. */
  noteRefusedWrite(error: unknown): void {
    if (isLeaseLost(error)) this.turn?.interrupt(leaseLostInterrupt());
  }

  /** The turn's writes that wait for its next commit (ADR 0056). */
  protected readonly pendingWrites = new PendingTurnWrites();

  /** True when this session's writes go to the store. */
  get storesWrites(): boolean {
    return this.persisted && !this.ephemeral;
  }

  /** Appends rows in memory and, for persisted sessions, to the store with whatever waits for the next commit. */
  async appendRows(rows: NewMessage[]): Promise<(number | null)[]> {
    if (rows.length === 0) return [];
    const staged = this.stageRows(rows);
    await this.commitWrites();
    return staged.map((row) => row.rowId);
  }

  /**
   * Appends rows to the in-memory transcript now and, for persisted sessions, to the store with the next commit
   * (their `rowId` is null until then). Returns the transcript rows.
   */
  stageRows(rows: NewMessage[]): TranscriptRow[] {
    const now = this.host.clock.now();
    const staged = rows.map((row): TranscriptRow => {
      const transcriptRow: TranscriptRow = {
        rowId: null,
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
      return transcriptRow;
    });
    if (this.storesWrites) this.pendingWrites.addRows(rows, staged);
    return staged;
  }

  /** A model call's usage, stored with the next commit. */
  stageUsage(entry: UsageEntry): void {
    if (this.storesWrites) this.pendingWrites.addUsage(entry);
  }

  /** `row`'s display metadata (already changed in memory), stored with the next commit. */
  stageDisplay(row: TranscriptRow): void {
    if (this.storesWrites) this.pendingWrites.markDisplay(row);
  }

  /**
   * Writes what waits in one transaction (`SessionStore.commitTurn`). With `lease`, it is the turn's last write: it
   * releases the lease and always runs, so the session's activity time moves even when nothing else waits.
   * Rows the store refused leave the in-memory transcript, as they would have had they never been appended.
   */
  async commitWrites(lease?: TurnCommit['lease'] | 'touch'): Promise<void> {
    if (!this.storesWrites) {
      this.pendingWrites.clear();
      return;
    }
    if (this.pendingWrites.isEmpty && lease === undefined) return;
    const outcome = await this.pendingWrites.commit(
      this.host.store,
      this.sessionId,
      () => ({ systemPrompt: this.systemPrompt, modelConfig: this.storedModelConfig() }),
      lease === 'touch' ? undefined : lease,
      this.writeOptions(),
    );
    if ('failed' in outcome) {
      this.noteRefusedWrite(outcome.error);
      const refused = new Set(outcome.failed);
      for (let index = this.transcript.length - 1; index >= 0; index -= 1) {
        const row = this.transcript[index] as TranscriptRow;
        if (refused.has(row)) {
          this.transcript.splice(index, 1);
          this.charsSinceLastCall = Math.max(0, this.charsSinceLastCall - rowChars(row));
        }
      }
      throw outcome.error;
    }
    for (const row of outcome.stored) {
      if (row.rowId !== null) this.generation.lastRowId = Math.max(this.generation.lastRowId, row.rowId);
    }
  }

  /** Reloads the transcript when another process changed the session (spec/core.md §7.1.4). */
  async reloadIfChanged(known?: { lastRowId: number; rewindCount: number } | null): Promise<void> {
    if (!this.persisted) return;
    // The turn lease's take reads it in the same statement (ADR 0056); otherwise it is read here.
    const current = known ?? (await this.host.store.generation(this.sessionId));
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
    // Without seed rows there is nothing stored to read back (and so no round trip on PostgreSQL, issue 34.2).
    const stored = seed.length === 0 ? [] : await this.host.store.loadConversation(this.sessionId);
    this.loadRows(stored, created.rewindCount);
    this.host.emitHostEvent({ type: 'session.created', sessionId: this.sessionId });
  }

  protected storedModelConfig(): SessionModelConfig {
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
    // Scanned first: the skill tools are offered, and the prompt lists the skills, once they are known.
    const skills = await this.host.skills.list({ cwd: this.cwd }).catch(() => []);
    const toolNames = this.activeTools().map((tool) => tool.name);
    const skillKeys = skills.map((skill) => `skill:${skill.name}:${skill.description}`);
    const fingerprint = promptFingerprint(route?.spec ?? null, [...toolNames, ...skillKeys], this.cwd);
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
      ...(toolNames.includes('skill_view') ? { skills } : {}),
      ...(this.kind === 'subagent' && this.subagentInfo ? { focusInstruction: subagentInstruction() } : {}),
    });
    this.modelConfig.prompt_fingerprint = fingerprint;
    // Stored with the turn's prompt row, in the same transaction (ADR 0056).
    if (this.storesWrites) this.pendingWrites.markSessionFields();
  }

  /** Marks the stored prompt stale; it is rebuilt at the next turn start. */
  protected markPromptStale(): void {
    delete this.modelConfig.prompt_fingerprint;
  }

  /** Writes a pending model-switch marker row at turn start (spec/core.md §10.6). */
  async writePendingModelSwitch(turnId: string): Promise<void> {
    const pending = this.pendingModelSwitch;
    if (!pending) return;
    this.pendingModelSwitch = null;
    if (!this.persisted && !this.ephemeral) return;
    // Stored with the turn's prompt row, which follows it.
    this.stageRows([
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
        !tool.available({
          sessionId: this.sessionId,
          source: this.source,
          hasClarify,
          isSubagent,
          hasClientRequests,
          cwd: this.cwd,
        })
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
      await this.host.store
        .recordUsage(
          this.sessionId,
          { provider, model, task: 'subagent', usage, costUsd, costStatus: status },
          this.writeOptions(),
        )
        .catch((error: unknown) => {
          this.noteRefusedWrite(error);
          throw error;
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

  protected phaseOf(turn: TurnRunner): AgentStatus['phase'] {
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
}

function subagentInstruction(): string {
  return 'Work only on the goal given in the first message, using the context given there. When you are done, end with a final message made of four sections: Summary, Details, Files changed, and Open issues.';
}
