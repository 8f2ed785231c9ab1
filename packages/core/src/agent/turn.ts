import { HermesError } from '../errors.js';
import type { FailoverReason } from '../events.js';
import { isLeaseLost } from '../store/fence.js';
import type { NewMessage } from '../store/types.js';
import type { ClientToolResult, TurnResult } from '../turn-types.js';
import type { FinishReason, JsonValue } from '../types.js';
import { estimateTokens } from '../usage.js';
import type { ClassifiedError } from './classify.js';
import { cancelledExitReason, cancelledToolText, leaseLostInterrupt } from './interrupt.js';
import { FAILED_PROMPT_KEY, pendingToolCalls, startsTurn } from './transcript.js';
import { publicRoute } from './turn-base.js';
import { TurnModel } from './turn-model.js';

export { toFunctionTool } from './turn-model.js';
export { publicRoute };

/**
 * Runs one turn (spec/core.md §7): admission, prologue, iterations of one model step plus its tool
 * batch, and an epilogue that always runs. Failures are data: every path ends in `finish()`.
 */
export class TurnRunner extends TurnModel {
  /** Runs the turn to its end; never throws. */
  async run(): Promise<void> {
    try {
      await this.execute();
    } catch (error) {
      const code = HermesError.isInstance(error) ? error.code : error instanceof Error ? error.name : 'unknown';
      const message = error instanceof Error ? error.message : String(error);
      if (isLeaseLost(error)) {
        // A write refused by the turn's fence: another process took the session over (this one was frozen or cut off
        // past its lease), and the turn stops as interrupted (ADR 0049).
        this.agent.host.logger.warn('turn stopped: another process took its session over', { turnId: this.turnId });
        this.interrupt(leaseLostInterrupt());
      } else
        this.agent.host.logger.error('turn failed with an unexpected error', { turnId: this.turnId, code, message });
      if (this.interruptReason) await this.finishCancelled();
      else if (HermesError.isInstance(error) && error.code === 'store_locked') {
        await this.finish('failed', 'session_persistence_failed', { code: 'store_locked', message, retryable: false });
      } else {
        // An unreachable store (a database restart) is passing: the client may send the turn again once it is back.
        const retryable = code === 'store_unavailable';
        await this.finish('failed', `local_error(${code})`, { code, message, retryable });
      }
    }
  }

  private async execute(): Promise<void> {
    const agent = this.agent;
    // §7.1 admission: resolve the route and announce the turn.
    const spec = this.options.model ?? agent.modelSpec ?? agent.host.defaultModelSpec();
    let routeError: unknown = null;
    if (spec !== null) {
      try {
        this.route = agent.host.resolveRoute(spec, agent.route?.provider ?? null);
      } catch (error) {
        routeError = error;
      }
      if (routeError !== null && (await agent.askForMissingSecret(this, routeError))) {
        try {
          this.route = agent.host.resolveRoute(spec, agent.route?.provider ?? null);
          routeError = null;
        } catch (error) {
          routeError = error;
        }
      }
    }
    const text = this.input.text ?? '';
    const attachments = (this.input.content ?? []).filter((part) => part.type !== 'text').length;
    this.emit('turn.start', {
      input: {
        text: text || (this.input.content ?? []).map((part) => (part.type === 'text' ? part.text : '')).join(''),
        attachments,
      },
      model: this.route ? publicRoute(this.route) : null,
      maxIterations: this.maxIterations,
      ...(this.memoryScope !== null ? { memoryScope: this.memoryScope } : {}),
    });
    if (spec === null) {
      await this.finish('failed', 'provider_error(no_model_configured)', {
        code: 'no_model_configured',
        message:
          'No model is configured. Set HERMES_MODEL (for example anthropic:claude-sonnet-4-5) and the provider key (ANTHROPIC_API_KEY, OPENAI_API_KEY, …), or HERMES_BASE_URL and HERMES_MODEL for any OpenAI-compatible endpoint, or model.default in config.yaml.',
        retryable: false,
      });
      return;
    }
    if (routeError !== null && !this.route) {
      // No usable primary route: try the fallbacks before giving up (§10.3).
      const classified: ClassifiedError = {
        reason: 'auth',
        retryable: false,
        fallbackAtOnce: true,
        compress: false,
        message: routeError instanceof Error ? routeError.message : String(routeError),
      };
      const next = this.nextFallback(new Set([spec]));
      if (!next) {
        const code = HermesError.isInstance(routeError) ? routeError.code : 'invalid_model_spec';
        await this.finish(
          'failed',
          code === 'missing_credentials' ? 'provider_error(auth)' : `provider_error(${code})`,
          {
            code,
            message: classified.message,
            retryable: false,
          },
        );
        return;
      }
      this.route = next;
      this.fallbackUsed = true;
    }

    // §7.1.3 lease and §7.2 prologue.
    if (!agent.ephemeral) {
      if (agent.persisted) {
        await this.acquireLease();
        if (this.finished) return;
        await agent.reloadIfChanged(this.lease?.generation ?? null);
      }
      await agent.ensureSystemPrompt(this.route);
      if (!agent.persisted) {
        await agent.createRow();
        await this.acquireLease();
        if (this.finished) return;
      }
    } else {
      await agent.ensureSystemPrompt(this.route);
    }
    // The client's results go right after the calls they answer, before any other row of this run (ADR 0052).
    if ((this.input.toolResults ?? []).length > 0) await this.storeClientResults(this.input.toolResults ?? []);
    await agent.writePendingModelSwitch(this.turnId);
    await this.maybeCompress('preflight');

    const hasUserInput =
      text.trim() !== '' || (this.input.content ?? []).some((part) => part.type !== 'text' || part.text.trim() !== '');
    if (hasUserInput) {
      const stored = await this.appendRows([agent.userRowFor(this.input, this.turnId)]);
      this.userRowId = stored[0] ?? null;
      const persistAs = this.input.persistAs;
      this.emit('prompt.stored', {
        rowId: this.userRowId,
        text: persistAs?.text ?? text,
        displayKind: persistAs?.displayKind ?? null,
        displayMetadata: (persistAs?.displayMetadata as Record<string, JsonValue> | undefined) ?? null,
      });
    } else await this.commitStaged();
    this.startRunBudget();

    await this.loop();
  }

  /**
   * Stores the client's results for the calls the transcript waits for (ADR 0052): one tool row per pending call, in
   * the calls' order. A pending call the client left out is answered with an error, so the model is never sent a
   * call without a result; a result for a call that is not pending is dropped.
   */
  private async storeClientResults(results: ClientToolResult[]): Promise<void> {
    const pending = pendingToolCalls(this.agent.transcript);
    const byId = new Map(results.map((result) => [result.callId, result]));
    const stray = results.filter((result) => !pending.some((call) => call.id === result.callId));
    if (stray.length > 0)
      this.agent.host.logger.warn('tool results for calls that are not pending were dropped', {
        turnId: this.turnId,
        callIds: stray.map((result) => result.callId),
      });
    const rows: NewMessage[] = pending.map((call) => {
      const result = byId.get(call.id);
      const content = result?.content ?? 'Error: the client returned no result for this call.';
      const failed = result === undefined || result.isError === true;
      return {
        turnId: this.turnId,
        role: 'tool',
        content,
        toolCallId: call.id,
        toolName: call.name,
        displayMetadata: { status: failed ? 'failed' : 'completed', client: true },
        tokenCount: estimateTokens(content),
      };
    });
    if (rows.length === 0) return;
    // Stored with the prompt row that follows, or on their own before the model call when there is none (ADR 0056).
    this.stageRows(rows);
    this.storedAnything = true;
  }

  private async acquireLease(): Promise<void> {
    const agent = this.agent;
    const settings = this.settings;
    let lastStatus = -Infinity;
    try {
      // A session created for this turn was born with its lease (issue 34.2): no take of its own.
      this.lease =
        agent.takeBornLease(this.turnId) ??
        (await agent.host.store.acquireTurnLease(agent.sessionId, {
          holder: agent.host.holderId,
          turnId: this.turnId,
          ttlMs: settings.session.lease_ttl * 1000,
          waitMs: settings.session.lease_wait * 1000,
          signal: this.signal,
          onWait: ({ waitedMs }) => {
            if (this.phase !== 'lease_wait' || waitedMs - lastStatus >= 10_000) {
              lastStatus = waitedMs;
              this.phase = 'lease_wait';
              this.emit('status', {
                phase: 'lease_wait',
                text: 'Waiting for another process to finish its turn on this session…',
              });
            }
          },
        }));
    } catch (error) {
      if (this.interruptReason) {
        await this.finishCancelled();
        return;
      }
      if (HermesError.isInstance(error) && error.code === 'lease_timeout') {
        await this.finish('failed', 'session_locked', {
          code: 'session_locked',
          message: `Another process kept this session busy for more than ${settings.session.lease_wait} s.`,
          retryable: true,
        });
        return;
      }
      throw error;
    }
    const lease = this.lease;
    // Another holder took the lease over: the turn stops as it would at its first refused write (ADR 0049).
    lease.lost.addEventListener('abort', () => this.interrupt(leaseLostInterrupt()), { once: true });
    // Every 60 s, or three times per lease lifetime when `session.lease_ttl` is shorter than 3 minutes.
    const refreshMs = Math.min(60_000, Math.max(250, (settings.session.lease_ttl * 1000) / 3));
    const refresh = () => {
      this.stopLeaseRefresh = agent.host.clock.setTimer(() => {
        lease.refresh().then(
          (ok) => {
            if (ok && !this.finished) refresh();
          },
          (error: unknown) => {
            // The store is unreachable (a database restart): the turn keeps streaming to its client and the refresh
            // is tried again at the next tick; a lease that expired meanwhile is reported lost by that refresh.
            agent.host.logger.warn('turn lease refresh failed; retrying at the next tick', {
              turnId: this.turnId,
              error: String(error),
              code: HermesError.isInstance(error) ? error.code : null,
            });
            if (!this.finished) refresh();
          },
        );
      }, refreshMs);
    };
    refresh();
  }

  private startRunBudget(): void {
    const seconds = this.settings.agent.run_budget_seconds;
    if (seconds === null || seconds === undefined) return;
    const clock = this.agent.host.clock;
    this.stopBudgetTimers.push(
      clock.setTimer(() => {
        this.emit('notice', {
          level: 'warning',
          key: 'run_budget',
          text: `This turn has used 80% of its ${seconds} s budget.`,
        });
      }, seconds * 800),
      clock.setTimer(() => {
        this.interrupt({
          kind: 'interrupt',
          issuer: 'run_timeout',
          reason: `the run budget of ${seconds} s was spent`,
          hard: false,
        });
      }, seconds * 1000),
    );
  }

  private async loop(): Promise<void> {
    let overflowCompressedThisIteration = false;
    for (;;) {
      if (this.interruptReason) return this.finishCancelled();
      if (this.iterationsUsed >= this.maxIterations) return this.budgetExit();
      this.iterationsUsed += 1;
      this.iteration = this.iterationsUsed;
      if (!overflowCompressedThisIteration) await this.maybeCompress('pressure');
      if (this.interruptReason) return this.finishCancelled();

      const tools = this.agent.activeTools();
      const outcome = await this.modelStep(tools, false);
      if (outcome.kind === 'cancelled') {
        await this.storeInterruptedText(outcome.text, 'interrupted');
        return this.finishCancelled(outcome.text);
      }
      if (outcome.kind === 'redirected') {
        await this.storeInterruptedText(outcome.text, 'redirected');
        await this.appendRows([
          { turnId: this.turnId, role: 'user', content: outcome.redirectText, displayKind: 'redirect' },
        ]);
        this.iterationsUsed -= 1;
        continue;
      }
      if (outcome.kind === 'overflow') {
        if (overflowCompressedThisIteration) {
          return this.finish('failed', 'provider_error(context_overflow)', {
            code: 'context_overflow',
            message: outcome.error.message,
            retryable: false,
          });
        }
        const compressed = await this.agent.compressNow('overflow', this, true);
        if (!compressed.ok) {
          return this.finish('failed', 'provider_error(context_overflow)', {
            code: 'context_overflow',
            message: outcome.error.message,
            retryable: false,
          });
        }
        overflowCompressedThisIteration = true;
        this.iterationsUsed -= 1;
        continue;
      }
      overflowCompressedThisIteration = false;
      if (outcome.kind === 'failed') {
        if (this.interruptReason) return this.finishCancelled();
        return this.finish('failed', outcome.exitReason, {
          code: outcome.error.reason,
          message: outcome.error.message,
          provider: outcome.route.provider,
          ...(outcome.error.status === undefined ? {} : { status: outcome.error.status }),
          retryable: outcome.error.retryable,
        });
      }
      // success
      this.lastFinish = outcome.finishReason;
      if (outcome.reasoning) this.lastReasoning = outcome.reasoning;
      if (outcome.toolCalls.length === 0) {
        this.finalText = outcome.text;
        return this.finish('completed', `text_response(finish_reason=${finishForExit(outcome.finishReason)})`);
      }
      // The server runs its own calls of the step; calls to the client's tools end the run for the client to run
      // them (ADR 0052). Both in one step: the server's first, so their results are stored when the client gets its.
      const clientNames = this.clientToolNames;
      const clientCalls = clientNames.size === 0 ? [] : outcome.toolCalls.filter((call) => clientNames.has(call.name));
      const serverCalls =
        clientCalls.length === 0 ? outcome.toolCalls : outcome.toolCalls.filter((call) => !clientNames.has(call.name));
      if (serverCalls.length > 0) {
        await this.runToolBatch(serverCalls, tools);
        if (this.interruptReason) return this.finishCancelled();
      }
      if (clientCalls.length > 0) {
        this.clientCalls = clientCalls.map((call) => ({ id: call.id, name: call.name, arguments: call.input }));
        this.finalText = outcome.text;
        return this.finish('completed', 'client_tool_calls');
      }
      await this.deliverSteer(outcome.toolCalls.map((call) => call.id));
      await this.maybeCompress('post_tool');
    }
  }

  private async maybeCompress(trigger: 'preflight' | 'pressure' | 'post_tool'): Promise<void> {
    if (this.agent.ephemeral && this.agent.transcript.length === 0) return;
    await this.agent.compressNow(trigger, this, false);
  }

  /** Stores text streamed by an interrupted or redirected step, if any, with the turn's next commit. */
  private async storeInterruptedText(text: string, finishReason: 'interrupted' | 'redirected'): Promise<void> {
    if (text === '') return;
    this.stageRows([{ turnId: this.turnId, role: 'assistant', content: text, finishReason }]);
    this.storedAnything = true;
  }

  /** Budget exhausted: one tool-less summary call, then a failed, partial turn (spec/core.md §7.11). */
  private async budgetExit(): Promise<void> {
    const exitReason = `max_iterations_reached(${this.iterationsUsed}/${this.maxIterations})`;
    const outcome = await this.modelStep([], true);
    if (outcome.kind === 'cancelled' || this.interruptReason) {
      if (outcome.kind === 'cancelled') await this.storeInterruptedText(outcome.text, 'interrupted');
      return this.finishCancelled(outcome.kind === 'cancelled' ? outcome.text : '');
    }
    if (outcome.kind === 'success' && outcome.text.trim() !== '') {
      this.finalText = outcome.text;
      this.lastFinish = outcome.finishReason;
    } else {
      this.finalText = `Stopped after reaching the limit of ${this.maxIterations} steps.`;
      this.stageRows([{ turnId: this.turnId, role: 'assistant', content: this.finalText, finishReason: 'length' }]);
    }
    this.storedAnything = true;
    return this.finish(
      'failed',
      exitReason,
      { code: 'max_iterations_reached', message: exitReason, retryable: false },
      true,
    );
  }

  private async finishCancelled(streamedText = ''): Promise<void> {
    const reason = this.interruptReason ?? {
      kind: 'interrupt' as const,
      issuer: 'user',
      reason: 'interrupted',
      hard: false,
    };
    this.finalText = streamedText;
    await this.finish('cancelled', cancelledExitReason(reason));
  }

  /** The epilogue (spec/core.md §7.12): always runs, emits `turn.end` and resolves the result once. */
  private async finish(
    outcome: TurnResult['outcome'],
    exitReason: string,
    error?: TurnResult['error'],
    partialOverride?: boolean,
  ): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    const agent = this.agent;
    const ending = { outcome, exitReason, error };
    try {
      this.closeTranscriptTail();
    } catch (closeError) {
      agent.host.logger.error('could not close the transcript tail', { error: String(closeError) });
    }
    if (outcome === 'failed' && !this.storedAnything) this.markPromptFailed();
    this.stopLeaseRefresh?.();
    for (const stop of this.stopBudgetTimers) stop();
    await this.commitLast(ending);
    this.setPhase('finishing', 'Finishing…');
    ({ outcome, exitReason, error } = ending);
    const interrupt = outcome === 'cancelled' ? this.interruptReason : null;
    const snapshot = agent.usage();
    const route = this.route;
    const result: TurnResult = {
      turnId: this.turnId,
      sessionId: agent.sessionId,
      outcome,
      exitReason,
      finishReason: this.lastFinish,
      finalText: this.finalText,
      lastReasoning: this.lastReasoning,
      partial: partialOverride ?? (outcome !== 'completed' && this.storedAnything),
      iterations: this.iterationsUsed,
      maxIterations: this.maxIterations,
      apiCalls: this.apiCalls,
      usage: { turn: this.turnUsage, session: snapshot.session },
      cost: { turnUsd: this.turnCost, sessionUsd: snapshot.costUsd, status: snapshot.costStatus },
      route: route ? { ...publicRoute(route), fallbackUsed: this.fallbackUsed } : null,
      userRowId: this.userRowId,
      rowIds: [...this.rowIds],
      durationMs: agent.host.clock.now() - this.startedAt,
    };
    if (error) result.error = error;
    if (this.clientCalls.length > 0) result.clientToolCalls = this.clientCalls;
    if (interrupt) {
      result.interruptedBy = { issuer: interrupt.issuer, reason: interrupt.reason, hard: interrupt.hard };
      if (interrupt.message !== undefined) result.interruptMessage = interrupt.message;
    }
    const steer = this.steerBuffer.join('\n');
    if (steer !== '' && !(interrupt?.hard ?? false)) result.pendingSteer = steer;
    this.phase = 'idle';
    agent.turnFinished(this, result);
    this.emit('turn.end', { result });
    this.resolveResult(result);
  }

  /**
   * The turn's last write (ADR 0056): what waits (a final answer, its usage, a closed tail, a failed prompt's mark),
   * the session's activity time and the lease's release in one transaction. A store that refuses it fails a turn
   * that had not failed yet, as the refused write of its answer did; the lease is then released on its own.
   */
  private async commitLast(ending: {
    outcome: TurnResult['outcome'];
    exitReason: string;
    error: TurnResult['error'] | undefined;
  }): Promise<void> {
    const agent = this.agent;
    const lease = this.lease;
    let released = false;
    if (agent.storesWrites) {
      try {
        await this.commitStaged(lease ? { holder: agent.host.holderId, turnId: this.turnId, release: true } : 'touch');
        released = true;
      } catch (commitError) {
        const code = HermesError.isInstance(commitError) ? commitError.code : 'unknown';
        const message = commitError instanceof Error ? commitError.message : String(commitError);
        if (isLeaseLost(commitError)) {
          // The fence refused it: another process took the session over, and the turn ends as interrupted (ADR 0049).
          agent.host.logger.warn('turn stopped: another process took its session over', { turnId: this.turnId });
          const reason = leaseLostInterrupt();
          if (!this.controller.signal.aborted) this.controller.abort(reason);
          ending.outcome = 'cancelled';
          ending.exitReason = cancelledExitReason(this.interruptReason ?? reason);
          ending.error = undefined;
        } else {
          agent.host.logger.error('could not store the end of the turn', { turnId: this.turnId, code, message });
        }
        if (!isLeaseLost(commitError) && ending.outcome !== 'failed') {
          ending.outcome = 'failed';
          ending.exitReason = code === 'store_locked' ? 'session_persistence_failed' : `local_error(${code})`;
          ending.error = { code, message, retryable: code === 'store_unavailable' };
        }
      }
    } else this.settleStaged();
    if (!lease) return;
    if (released) {
      lease.markReleased();
      return;
    }
    try {
      await lease.release();
    } catch (releaseError) {
      agent.host.logger.warn('could not release the turn lease', { error: String(releaseError) });
    }
  }

  /**
   * A turn that failed before it stored any answer leaves its prompt in the transcript (the user row is stored before
   * the first model call, spec/core.md §7.2) with nothing after it. Marked `turn_failed` in its display metadata, it
   * stays visible but is left out of later requests: otherwise the next turn's prompt would be merged with it (§7.4)
   * and the model would answer both, the failed one usually being the same text sent again.
   */
  private markPromptFailed(): void {
    const row = this.turnRows().find((candidate) => candidate.turnId === this.turnId && startsTurn(candidate));
    if (!row) return;
    row.displayMetadata = { ...(row.displayMetadata ?? {}), [FAILED_PROMPT_KEY]: true };
    // Stored with the turn's last commit.
    this.agent.stageDisplay(row);
  }

  /** Gives every call of this turn's stored assistant rows a result (spec/core.md §7.10), stored with the last commit. */
  private closeTranscriptTail(): void {
    const rows = this.agent.transcript.slice(this.turnRowsStart);
    const answered = new Set(rows.filter((row) => row.role === 'tool').map((row) => row.toolCallId));
    const missing: NewMessage[] = [];
    const reason = this.interruptReason;
    const text = reason ? cancelledToolText(reason) : 'Tool call cancelled: the turn ended before it ran.';
    // The calls a completed run stopped for stay open: the client's next run answers them (ADR 0052).
    for (const call of this.clientCalls) answered.add(call.id);
    for (const row of rows) {
      for (const call of row.toolCalls ?? []) {
        if (answered.has(call.id)) continue;
        missing.push({
          turnId: this.turnId,
          role: 'tool',
          content: text,
          toolCallId: call.id,
          toolName: call.name,
          displayMetadata: { status: 'cancelled' },
        });
      }
    }
    if (missing.length > 0) this.stageRows(missing);
  }
}

function finishForExit(reason: FinishReason): string {
  return reason === 'stop' || reason === 'length' || reason === 'content_filter' ? reason : 'other';
}

export type { FailoverReason };
