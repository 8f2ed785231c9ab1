import { HermesError } from '../errors.js';
import type { ResolvedRoute } from '../providers/types.js';
import type { RewindResult, SessionModelConfig, TurnLease, UsageEntry } from '../store/types.js';
import type { HostCallbacks } from '../types.js';
import { AgentApprovals } from './agent-approvals.js';
import { runCompression } from './compression.js';
import { TurnEventQueue } from './event-stream.js';
import type { AgentInit, SessionInternals } from './internals.js';
import { makeInterruptReason } from './interrupt.js';
import { startsTurn } from './transcript.js';
import { publicRoute, TurnRunner } from './turn.js';
import type { InterruptOptions, RunTurnOptions, SteerResult, TurnInput, TurnResult } from './turn-types.js';
import type { Agent, CompressionResult, ModelSwitchResult, TurnRun } from './types.js';

export type { AgentInit };

const MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024;

/**
 * The live handle of one session. Public methods implement {@link Agent}; the other members are
 * what the turn runner, compression and the host use.
 */
export class AgentCore extends AgentApprovals implements SessionInternals {
  // ---- turns ---------------------------------------------------------------------------------

  runTurn(input: TurnInput, options: RunTurnOptions = {}): TurnRun {
    this.assertOpen();
    if (this.turn) throw new HermesError('session_busy', `Session ${this.sessionId} is already running a turn.`);
    const hasText = (input.text ?? '').trim() !== '';
    const hasContent = (input.content ?? []).some((part) => part.type !== 'text' || part.text.trim() !== '');
    const continues = (input.toolResults ?? []).length > 0;
    if (!hasText && !hasContent && !continues)
      throw new HermesError('invalid_input', 'A turn needs text, content or tool results.');
    if (options.clientTools && options.clientTools.length > 0) {
      // A client tool never shadows a server tool: the model could not tell which one it called (ADR 0052).
      const serverNames = new Set(this.activeTools().map((tool) => tool.name));
      const seen = new Set<string>();
      for (const tool of options.clientTools) {
        if (serverNames.has(tool.name))
          throw new HermesError('tool_name_conflict', `The client tool "${tool.name}" has the name of a server tool.`, {
            details: { name: tool.name },
          });
        if (seen.has(tool.name))
          throw new HermesError('invalid_input', `The client tool "${tool.name}" is declared twice.`, {
            details: { name: tool.name },
          });
        seen.add(tool.name);
      }
    }
    if (this.bornLease) {
      // The session was created with a lease for its first turn (issue 34.2): that turn is this one, unless the caller
      // names another turn, which then takes a lease of its own.
      if (options.turnId === undefined) options = { ...options, turnId: this.bornLease.turnId };
      else if (options.turnId !== this.bornLease.turnId) this.dropBornLease();
    }
    if (continues && options.turnId === undefined) {
      // A run that brings tool results continues the turn that stopped for them: the same turn id on its rows.
      const stopped = this.transcript.findLast((row) => row.role === 'assistant' && (row.toolCalls?.length ?? 0) > 0);
      if (stopped?.turnId) options = { ...options, turnId: stopped.turnId };
    }
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
    const turns = this.host.turns;
    // One busy rule for every surface (ADR 0037): the session is free, or its claim is the caller's own.
    if (options.claim !== undefined ? !turns.holds(options.claim) : turns.current(this.sessionId) !== undefined)
      throw new HermesError('session_busy', `Session ${this.sessionId} is already running a turn.`);
    const runner = new TurnRunner(this, input, options, resolveResult);
    if (options.claim === undefined) {
      const own = turns.claim(this.sessionId, { surface: 'core', id: runner.turnId });
      // Released once the result is out, as a surface's claim is: whoever waits for the session sees the turn ended.
      void result.finally(() => own?.release());
    }
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

  takeBornLease(turnId: string): TurnLease | null {
    const born = this.bornLease;
    if (!born || born.turnId !== turnId) return null;
    this.bornLease = null;
    return born.lease;
  }

  /** Gives back the lease the session was created with when no turn took it (the agent is let go or closed). */
  dropBornLease(): void {
    const born = this.bornLease;
    if (!born) return;
    this.bornLease = null;
    born.lease.release().catch((error: unknown) => {
      this.host.logger.warn('could not release an unused turn lease', { error: String(error) });
    });
  }

  /** Called by the runner just before `turn.end`. */
  turnFinished(turn: TurnRunner, result: TurnResult): void {
    if (this.turn === turn) this.turn = null;
    // A turn that ended before it took the lease it was born with (a model route that fails, say) gives it back.
    if (this.bornLease?.turnId === turn.turnId) this.dropBornLease();
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
  async applyGeneratedTitle(title: string, source: 'llm' | 'derived', usage: UsageEntry[] = []): Promise<void> {
    const applies =
      title !== '' &&
      !this.closed &&
      this.titleSourceValue !== 'user' &&
      this.titleValue === null &&
      this.pendingTitle === null;
    if (!applies) {
      // The title is not used, but its call was made: its usage is recorded on its own.
      if (this.persisted) for (const entry of usage) await this.host.store.recordUsage(this.sessionId, entry);
      return;
    }
    const stored = await this.host.store.setTitle(this.sessionId, title, source, { usage });
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
    this.dropBornLease();
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
