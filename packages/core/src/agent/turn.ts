import type { LanguageModelV3, LanguageModelV3FunctionTool, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { toJSONSchema, type ZodType } from 'zod';
import { HermesError } from '../errors.js';
import type { AgentEventPayloads, AgentEventType, AgentPhase, FailoverReason } from '../events.js';
import { newId } from '../ids.js';
import type { ResolvedRoute } from '../providers/types.js';
import type { NewMessage, TurnLease } from '../store/types.js';
import { capToolResult } from '../tools/index.js';
import type { ToolContext, ToolDefinition, ToolResult } from '../tools/types.js';
import type { FinishReason, JsonObject, JsonValue, StoredToolCall, Usage } from '../types.js';
import { addUsage, estimateTokens, normalizeUsage, zeroUsage } from '../usage.js';
import { untilAborted } from '../util/abort.js';
import {
  type ClassifiedError,
  classifyProviderError,
  EmptyResponseError,
  nextBackoff,
  StreamIdleTimeoutError,
} from './classify.js';
import type { SessionInternals } from './internals.js';
import {
  cancelledExitReason,
  cancelledToolText,
  type InterruptReason,
  interruptFromSignal,
  isInterruptReason,
  isRedirectReason,
} from './interrupt.js';
import { buildPrompt } from './request.js';
import type { TranscriptRow } from './transcript.js';
import type { RunTurnOptions, TurnInput, TurnResult } from './turn-types.js';

const SUMMARY_INSTRUCTION =
  'You have reached the limit of steps for this turn. Do not call any tools. Summarize for the user: what was done, what remains, and the current state.';

interface ToolCallRequest {
  id: string;
  name: string;
  /** Raw JSON text of the arguments. */
  input: string;
}

type StepOutcome =
  | {
      kind: 'success';
      text: string;
      reasoning: string | null;
      providerMetadata: JsonObject | null;
      toolCalls: ToolCallRequest[];
      finishReason: FinishReason;
      messageId: string;
    }
  | { kind: 'cancelled'; text: string; messageId: string | null }
  | { kind: 'redirected'; text: string; redirectText: string; messageId: string | null }
  | { kind: 'overflow'; error: ClassifiedError }
  | { kind: 'failed'; exitReason: string; error: ClassifiedError; route: ResolvedRoute };

/** Outcome of one tool call. */
interface CallOutcome {
  status: 'completed' | 'failed' | 'denied' | 'cancelled';
  result: ToolResult;
  truncated: boolean;
  durationMs: number;
}

function mapFinishReason(unified: string): FinishReason {
  switch (unified) {
    case 'stop':
      return 'stop';
    case 'length':
      return 'length';
    case 'tool-calls':
      return 'tool_calls';
    case 'content-filter':
      return 'content_filter';
    case 'error':
      return 'error';
    default:
      return 'other';
  }
}

/**
 * Runs one turn (spec/core.md §7): admission, prologue, iterations of one model step plus its tool
 * batch, and an epilogue that always runs. Failures are data: every path ends in `finish()`.
 */
export class TurnRunner {
  readonly turnId: string;
  readonly controller = new AbortController();
  phase: AgentPhase = 'preparing';
  iteration = 0;
  streamingText = '';
  steerBuffer: string[] = [];
  /** Set while a model request runs, so redirect can abort only that request. */
  modelCallController: AbortController | null = null;
  private readonly startedAt: number;
  private iterationsUsed = 0;
  private apiCalls = 0;
  private turnUsage: Usage = zeroUsage();
  private turnCost = 0;
  private rowIds: number[] = [];
  private userRowId: number | null = null;
  private lease: TurnLease | null = null;
  private stopLeaseRefresh: (() => void) | null = null;
  private stopBudgetTimers: (() => void)[] = [];
  private route: ResolvedRoute | null = null;
  private fallbackUsed = false;
  private lastFinish: FinishReason | null = null;
  private lastReasoning: string | null = null;
  private finalText = '';
  private storedAnything = false;
  private finished = false;
  private readonly maxIterations: number;
  /** The turn's long-term memory scope (`RunTurnOptions.memoryScope`), null when none was given. */
  readonly memoryScope: string | null;
  private readonly settings;
  private readonly turnRowsStart: number;

  constructor(
    private readonly agent: SessionInternals,
    private readonly input: TurnInput,
    private readonly options: RunTurnOptions,
    private readonly resolveResult: (result: TurnResult) => void,
  ) {
    this.turnId = options.turnId ?? newId('turn_', 16);
    this.memoryScope = options.memoryScope ?? null;
    this.startedAt = agent.host.clock.now();
    this.settings = agent.host.settings();
    this.maxIterations = options.maxIterations ?? agent.maxIterations ?? this.settings.agent.max_iterations;
    this.turnRowsStart = agent.transcript.length;
    if (options.signal) {
      const signal = options.signal;
      if (signal.aborted) this.controller.abort(interruptFromSignal(signal));
      else signal.addEventListener('abort', () => this.interrupt(interruptFromSignal(signal)), { once: true });
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get interruptReason(): InterruptReason | null {
    const reason = this.controller.signal.reason as unknown;
    return this.controller.signal.aborted && isInterruptReason(reason) ? reason : null;
  }

  /** Aborts the turn. Returns false when it already ended or was already interrupted. */
  interrupt(reason: InterruptReason): boolean {
    if (this.finished || this.controller.signal.aborted) return false;
    this.controller.abort(reason);
    return true;
  }

  private emit<T extends AgentEventType>(type: T, payload: AgentEventPayloads[T]): void {
    this.agent.emitTurnEvent(this, type, payload);
  }

  private setPhase(phase: AgentPhase, text: string): void {
    if (this.phase === phase) return;
    this.phase = phase;
    this.emit('status', { phase, text });
  }

  /** Runs the turn to its end; never throws. */
  async run(): Promise<void> {
    try {
      await this.execute();
    } catch (error) {
      const code = HermesError.isInstance(error) ? error.code : error instanceof Error ? error.name : 'unknown';
      const message = error instanceof Error ? error.message : String(error);
      this.agent.host.logger.error('turn failed with an unexpected error', { turnId: this.turnId, code, message });
      if (this.interruptReason) await this.finishCancelled();
      else if (HermesError.isInstance(error) && error.code === 'store_locked') {
        await this.finish('failed', 'session_persistence_failed', { code: 'store_locked', message, retryable: false });
      } else {
        await this.finish('failed', `local_error(${code})`, { code, message, retryable: false });
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
        await agent.reloadIfChanged();
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
    await agent.writePendingModelSwitch(this.turnId);
    await this.maybeCompress('preflight');

    const stored = await this.appendRows([agent.userRowFor(this.input, this.turnId)]);
    this.userRowId = stored[0] ?? null;
    const persistAs = this.input.persistAs;
    this.emit('prompt.stored', {
      rowId: this.userRowId,
      text: persistAs?.text ?? text,
      displayKind: persistAs?.displayKind ?? null,
      displayMetadata: (persistAs?.displayMetadata as Record<string, JsonValue> | undefined) ?? null,
    });
    this.startRunBudget();

    await this.loop();
  }

  private async acquireLease(): Promise<void> {
    const agent = this.agent;
    const settings = this.settings;
    let lastStatus = -Infinity;
    try {
      this.lease = await agent.host.store.acquireTurnLease(agent.sessionId, {
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
      });
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
    lease.lost.addEventListener(
      'abort',
      () =>
        this.interrupt({
          kind: 'interrupt',
          issuer: 'lease_lost',
          reason: 'another process took over the session',
          hard: false,
        }),
      {
        once: true,
      },
    );
    const refresh = () => {
      this.stopLeaseRefresh = agent.host.clock.setTimer(() => {
        void lease.refresh().then((ok) => {
          if (ok && !this.finished) refresh();
        });
      }, 60_000);
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

  /** Appends rows to the transcript (and the store for persisted sessions); returns their ids. */
  private async appendRows(rows: NewMessage[]): Promise<(number | null)[]> {
    const ids = await this.agent.appendRows(rows);
    for (const id of ids) if (id !== null) this.rowIds.push(id);
    return ids;
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
      await this.runToolBatch(outcome.toolCalls, tools);
      if (this.interruptReason) return this.finishCancelled();
      await this.deliverSteer(outcome.toolCalls.map((call) => call.id));
      await this.maybeCompress('post_tool');
    }
  }

  private async maybeCompress(trigger: 'preflight' | 'pressure' | 'post_tool'): Promise<void> {
    if (this.agent.ephemeral && this.agent.transcript.length === 0) return;
    await this.agent.compressNow(trigger, this, false);
  }

  /** Stores text streamed by an interrupted or redirected step, if any. */
  private async storeInterruptedText(text: string, finishReason: 'interrupted' | 'redirected'): Promise<void> {
    if (text === '') return;
    await this.appendRows([{ turnId: this.turnId, role: 'assistant', content: text, finishReason }]);
    this.storedAnything = true;
  }

  private nextFallback(used: Set<string>): ResolvedRoute | null {
    for (const spec of this.settings.fallback_models) {
      if (used.has(spec)) continue;
      used.add(spec);
      try {
        return this.agent.host.resolveRoute(spec, null);
      } catch (error) {
        this.emit('notice', {
          level: 'warning',
          key: 'fallback_skipped',
          text: `Fallback model ${spec} skipped: ${error instanceof Error ? error.message : String(error)}`,
        });
      }
    }
    return null;
  }

  /** One model step with its retries and fallbacks (spec/core.md §7.5, §7.6). */
  private async modelStep(tools: ToolDefinition[], summary: boolean): Promise<StepOutcome> {
    const route0 = this.route;
    if (!route0) throw new HermesError('invalid_input', 'no route');
    let route: ResolvedRoute = route0;
    const usedSpecs = new Set<string>([route.spec]);
    const maxRetries = this.settings.agent.api_max_retries;
    let attempt = 0;
    let previousDelay: number | null = null;
    let lastError: ClassifiedError | null = null;
    let onlyEmpty = true;
    for (;;) {
      if (this.interruptReason) return { kind: 'cancelled', text: '', messageId: null };
      const result = await this.attempt(route, tools, summary);
      if (result.kind !== 'error') return result;
      const error = result.error;
      lastError = error;
      if (error.reason !== 'empty_response') onlyEmpty = false;
      if (error.compress && !summary) return { kind: 'overflow', error };
      const canRetry = error.retryable && attempt < maxRetries;
      if (canRetry) {
        attempt += 1;
        const delayMs = Math.round(nextBackoff(previousDelay, error.retryAfterMs));
        previousDelay = delayMs;
        const payload: AgentEventPayloads['retry'] = {
          attempt,
          maxRetries,
          delayMs,
          reason: error.reason,
          message: error.message,
        };
        if (error.status !== undefined) payload.status = error.status;
        if (result.discardMessageId) payload.discardMessageId = result.discardMessageId;
        this.emit('retry', payload);
        try {
          await this.agent.host.clock.sleep(delayMs, this.signal);
        } catch {
          return { kind: 'cancelled', text: '', messageId: null };
        }
        continue;
      }
      const next = this.nextFallback(usedSpecs);
      if (next) {
        this.emit('fallback', { from: publicRoute(route), to: publicRoute(next), reason: error.reason });
        route = next;
        this.route = next;
        this.fallbackUsed = true;
        attempt = 0;
        previousDelay = null;
        continue;
      }
      const exitReason = !error.retryable
        ? `provider_error(${error.reason})`
        : onlyEmpty
          ? 'empty_response_exhausted'
          : 'all_retries_exhausted_no_response';
      return { kind: 'failed', exitReason, error: lastError, route };
    }
  }

  /** One model call: streams parts into events. */
  private async attempt(
    route: ResolvedRoute,
    tools: ToolDefinition[],
    summary: boolean,
  ): Promise<StepOutcome | { kind: 'error'; error: ClassifiedError; discardMessageId?: string }> {
    const agent = this.agent;
    const host = agent.host;
    const callController = new AbortController();
    const callSignal = AbortSignal.any([this.signal, callController.signal]);
    this.modelCallController = callController;
    this.setPhase('model', 'Thinking…');
    const messageId = newId('msg_', 16);
    let started = false;
    let text = '';
    let reasoning = '';
    let providerMetadata: JsonObject | null = null;
    const toolCalls: ToolCallRequest[] = [];
    let finish: { unified: string; raw: string | undefined } | null = null;
    let usage: Parameters<typeof normalizeUsage>[0];
    const idleMs = this.settings.agent.stream_idle_timeout * 1000;
    const idle: { cancel: (() => void) | null } = { cancel: null };
    const cancelIdle = () => idle.cancel?.();
    const armIdle = () => {
      cancelIdle();
      idle.cancel = host.clock.setTimer(
        () => callController.abort(new StreamIdleTimeoutError(this.settings.agent.stream_idle_timeout)),
        idleMs,
      );
    };
    const start = () => {
      if (started) return;
      started = true;
      this.streamingText = '';
      this.emit('message.start', { messageId, iteration: this.iteration });
    };
    const transcriptRows = agent.transcript;
    const prompt = buildPrompt(agent.systemPromptText(), this.input.ephemeralSystemPrompt, transcriptRows, {
      strictAlternation: route.strictAlternation,
      anthropic: route.provider === 'anthropic',
    });
    if (summary) prompt.push({ role: 'user', content: [{ type: 'text', text: SUMMARY_INSTRUCTION }] });
    const promptChars = prompt.reduce((sum, message) => sum + JSON.stringify(message.content).length, 0);
    const maxTokens = this.settings.model.max_tokens;
    const providerOptions = host.providerOptions(route, agent.reasoningEffort);
    this.apiCalls += 1;
    let model: LanguageModelV3;
    try {
      model = host.createModel(route);
      armIdle();
      const callOptions: Parameters<LanguageModelV3['doStream']>[0] = {
        prompt,
        abortSignal: callSignal,
        includeRawChunks: false,
      };
      if (!summary && tools.length > 0) callOptions.tools = tools.map(toFunctionTool);
      if (maxTokens !== null && maxTokens !== undefined) callOptions.maxOutputTokens = maxTokens;
      if (providerOptions) callOptions.providerOptions = providerOptions;
      const { stream } = await model.doStream(callOptions);
      const reader = stream.getReader();
      try {
        for (;;) {
          const next = await untilAborted(reader.read(), callSignal);
          if (next.done) break;
          armIdle();
          const part: LanguageModelV3StreamPart = next.value;
          switch (part.type) {
            case 'text-delta':
              if (part.delta === '') break;
              start();
              text += part.delta;
              this.streamingText = text;
              this.emit('message.delta', { messageId, text: part.delta });
              break;
            case 'reasoning-delta':
              if (part.delta === '') break;
              start();
              reasoning += part.delta;
              this.emit('reasoning.delta', { messageId, text: part.delta });
              break;
            case 'reasoning-end':
              if (part.providerMetadata)
                providerMetadata = { ...(providerMetadata ?? {}), ...(part.providerMetadata as JsonObject) };
              break;
            case 'tool-input-start':
              start();
              this.emit('tool.generating', { messageId, callId: part.id, name: part.toolName });
              break;
            case 'tool-call':
              start();
              toolCalls.push({ id: part.toolCallId, name: part.toolName, input: part.input });
              break;
            case 'finish':
              finish = { unified: part.finishReason.unified, raw: part.finishReason.raw };
              usage = part.usage;
              break;
            case 'error':
              throw part.error;
            default:
              break;
          }
        }
      } finally {
        // Cancelling (rather than releasing) also stops a provider stream that is still producing.
        reader.cancel().catch(() => {});
      }
      if (!finish)
        throw Object.assign(new TypeError('The model stream ended without a finish part.'), {
          cause: { code: 'ECONNRESET' },
        });
      if (text.trim() === '' && toolCalls.length === 0) throw new EmptyResponseError();
    } catch (error) {
      cancelIdle();
      this.modelCallController = null;
      const reason = callSignal.reason as unknown;
      if (this.interruptReason) {
        if (started) this.emit('message.end', endPayload(messageId, text, null, false, null, true, false));
        if (reasoning) this.emit('reasoning.end', { messageId, text: reasoning });
        return { kind: 'cancelled', text, messageId: started ? messageId : null };
      }
      if (callController.signal.aborted && isRedirectReason(reason)) {
        if (started) this.emit('message.end', endPayload(messageId, text, 'redirected', false, null, true, false));
        return { kind: 'redirected', text, redirectText: reason.text, messageId: started ? messageId : null };
      }
      const classified = classifyProviderError(callController.signal.aborted ? reason : error, host.clock.now());
      if (started) {
        this.emit('message.end', endPayload(messageId, text, null, toolCalls.length > 0, null, false, true));
        return { kind: 'error', error: classified, discardMessageId: messageId };
      }
      return { kind: 'error', error: classified };
    }
    cancelIdle();
    this.modelCallController = null;
    if (reasoning) this.emit('reasoning.end', { messageId, text: reasoning });

    const finishReason = mapFinishReason(finish.unified);
    const normalizedCalls = toolCalls.map((call) => ({ ...call, id: agent.uniqueCallId(call.id) }));
    const callUsage = normalizeUsage(usage, { promptChars, outputChars: text.length + reasoning.length });
    // The prompt just measured is the new base of the context estimate; the answer counts on top.
    agent.notePromptTokens(callUsage.inputTokens);
    const storedCalls: StoredToolCall[] = normalizedCalls.map((call) => ({
      id: call.id,
      name: call.name,
      arguments: call.input,
    }));
    const row: NewMessage = {
      turnId: this.turnId,
      role: 'assistant',
      content: text,
      toolCalls: storedCalls.length > 0 ? storedCalls : null,
      reasoning: reasoning || null,
      providerMetadata,
      tokenCount: callUsage.outputTokens,
      finishReason: storedCalls.length > 0 ? 'tool_calls' : finishReason,
    };
    const [rowId] = await this.appendRows([row]);
    this.storedAnything = true;
    this.emit(
      'message.end',
      endPayload(
        messageId,
        text,
        storedCalls.length > 0 ? 'tool_calls' : finishReason,
        storedCalls.length > 0,
        rowId ?? null,
        false,
        false,
      ),
    );
    await this.recordUsage(route, callUsage, 'main');
    return {
      kind: 'success',
      text,
      reasoning: reasoning || null,
      providerMetadata,
      toolCalls: normalizedCalls,
      finishReason,
      messageId,
    };
  }

  private async recordUsage(route: ResolvedRoute, callUsage: Usage, task: 'main'): Promise<void> {
    const agent = this.agent;
    const { costUsd, status } = agent.host.cost(route, callUsage);
    this.turnUsage = addUsage(this.turnUsage, callUsage);
    this.turnCost += costUsd;
    agent.noteUsage(route, callUsage, costUsd, status, task);
    if (agent.persisted) {
      await agent.host.store.recordUsage(agent.sessionId, {
        provider: route.provider,
        model: route.model,
        task,
        usage: callUsage,
        costUsd,
        costStatus: status,
      });
    }
    const snapshot = agent.usage();
    this.emit('usage', {
      call: callUsage,
      turn: this.turnUsage,
      session: snapshot.session,
      costUsd: { call: status === 'unknown' ? null : costUsd, turn: this.turnCost, session: snapshot.costUsd },
      costStatus: status,
      contextTokens: snapshot.context.estimatedTokens,
      contextWindow: snapshot.context.contextWindow,
    });
  }

  /** Runs a tool batch (spec/core.md §7.8). */
  private async runToolBatch(calls: ToolCallRequest[], tools: ToolDefinition[]): Promise<void> {
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    const prepared = calls.map((call, index) => this.prepareCall(call, index, calls.length, byName));
    // Segments: runs of consecutive parallel-safe calls, every other call alone.
    const segments: (typeof prepared)[] = [];
    for (const call of prepared) {
      const previous = segments[segments.length - 1];
      if (call.parallelSafe && previous?.[0]?.parallelSafe) previous.push(call);
      else segments.push([call]);
    }
    const results: (CallOutcome | null)[] = calls.map(() => null);
    let nextToStore = 0;
    const storeReady = async () => {
      const rows: NewMessage[] = [];
      const indexes: number[] = [];
      while (nextToStore < calls.length && results[nextToStore] !== null) {
        const outcome = results[nextToStore] as CallOutcome;
        const call = prepared[nextToStore];
        if (!call) break;
        rows.push(this.toolRow(call.request, outcome));
        indexes.push(nextToStore);
        nextToStore += 1;
      }
      if (rows.length === 0) return new Map<number, number | null>();
      const ids = await this.appendRows(rows);
      this.storedAnything = true;
      return new Map(indexes.map((index, position) => [index, ids[position] ?? null]));
    };

    this.setPhase('tools', 'Running tools…');
    for (const segment of segments) {
      const parallel = segment.length > 1;
      const limit = Math.max(1, this.settings.agent.max_parallel_tools);
      let cursor = 0;
      const worker = async () => {
        while (cursor < segment.length) {
          const call = segment[cursor];
          cursor += 1;
          if (!call) return;
          const outcome = await this.executeCall(call, parallel);
          results[call.index] = outcome;
          const stored = await storeReady();
          this.emitToolEnd(call, outcome, stored.get(call.index) ?? null);
        }
      };
      await Promise.all(Array.from({ length: Math.min(limit, segment.length) }, worker));
    }
  }

  private prepareCall(call: ToolCallRequest, index: number, batchSize: number, byName: Map<string, ToolDefinition>) {
    const tool = byName.get(call.name) ?? this.agent.host.tools.get(call.name);
    let args: unknown = null;
    let problem: string | null = null;
    if (!tool) problem = `Unknown tool "${call.name}". Available tools: ${[...byName.keys()].join(', ')}.`;
    else {
      try {
        args = call.input.trim() === '' ? {} : JSON.parse(call.input);
      } catch (error) {
        problem = `The arguments of ${call.name} are not valid JSON: ${(error as Error).message}`;
      }
      if (problem === null) {
        const validated = validateArguments(tool, args);
        if (validated.ok) args = validated.value;
        else problem = `Invalid arguments for ${call.name}: ${validated.message}`;
      }
    }
    let parallelSafe = false;
    if (tool && problem === null && !tool.interactive) {
      try {
        parallelSafe = typeof tool.readOnly === 'function' ? tool.readOnly(args) : tool.readOnly;
      } catch {
        parallelSafe = false;
      }
    }
    return { request: call, index, batchSize, tool, args, problem, parallelSafe };
  }

  private async executeCall(call: ReturnType<TurnRunner['prepareCall']>, parallel: boolean): Promise<CallOutcome> {
    const startedAt = this.agent.host.clock.now();
    const tool = call.tool;
    const displayArgs = (call.args ?? safeJson(call.request.input)) as JsonValue;
    let title = call.request.name;
    let locations: { path: string; line?: number }[] = [];
    let kind: AgentEventPayloads['tool.start']['kind'] = 'other';
    if (tool && call.problem === null) {
      try {
        kind = typeof tool.kind === 'function' ? tool.kind(call.args) : tool.kind;
        const display = tool.display?.(call.args, { cwd: this.agent.cwd });
        if (display) {
          title = display.title;
          locations = display.locations ?? [];
        }
      } catch {
        // display is cosmetic; keep the defaults
      }
    }
    this.emit('tool.start', {
      callId: call.request.id,
      name: call.request.name,
      args: displayArgs,
      kind,
      title,
      locations,
      parallel,
      batchIndex: call.index,
      batchSize: call.batchSize,
    });
    const interrupted = this.interruptReason;
    if (interrupted)
      return {
        status: 'cancelled',
        result: { content: cancelledToolText(interrupted) },
        truncated: false,
        durationMs: 0,
      };
    if (!tool || call.problem !== null) {
      return {
        status: 'failed',
        result: { content: `Error: ${call.problem}`, isError: true },
        truncated: false,
        durationMs: 0,
      };
    }
    const toolController = new AbortController();
    const signal = AbortSignal.any([this.signal, toolController.signal]);
    const context: ToolContext = this.agent.toolContext(this, call.request.id, signal);
    let result: ToolResult;
    let status: CallOutcome['status'];
    try {
      result = await tool.execute(call.args, context);
      status = result.status ?? (result.isError ? 'failed' : 'completed');
      if (this.interruptReason && status !== 'completed') status = 'cancelled';
    } catch (error) {
      const reason = this.interruptReason;
      if (reason) {
        result = { content: cancelledToolText(reason) };
        status = 'cancelled';
      } else {
        result = { content: `Error: ${error instanceof Error ? error.message : String(error)}`, isError: true };
        status = 'failed';
      }
    }
    const cap = tool.maxResultChars ?? this.settings.tools.max_result_chars;
    const capped = capToolResult(result.content, cap);
    const truncated = capped !== result.content;
    return {
      status,
      result: { ...result, content: capped },
      truncated,
      durationMs: this.agent.host.clock.now() - startedAt,
    };
  }

  private toolRow(call: ToolCallRequest, outcome: CallOutcome): NewMessage {
    const metadata: JsonObject = { status: outcome.status };
    if (outcome.result.diffs && outcome.result.diffs.length > 0)
      metadata.diffs = outcome.result.diffs as unknown as JsonValue;
    if (outcome.result.locations) metadata.locations = outcome.result.locations as unknown as JsonValue;
    if (outcome.result.displayMetadata) Object.assign(metadata, outcome.result.displayMetadata);
    // Replays render rawOutput from the structured result; large ones stay out of the row.
    if (outcome.result.structured !== undefined && JSON.stringify(outcome.result.structured).length <= 65_536) {
      metadata.structured = outcome.result.structured;
    }
    return {
      turnId: this.turnId,
      role: 'tool',
      content: outcome.result.content,
      toolCallId: call.id,
      toolName: call.name,
      displayMetadata: metadata,
      tokenCount: estimateTokens(outcome.result.content),
    };
  }

  private emitToolEnd(call: ReturnType<TurnRunner['prepareCall']>, outcome: CallOutcome, rowId: number | null): void {
    const payload: AgentEventPayloads['tool.end'] = {
      callId: call.request.id,
      name: call.request.name,
      status: outcome.status,
      result: outcome.result.content,
      truncated: outcome.truncated,
      durationMs: outcome.durationMs,
      rowId,
    };
    if (outcome.result.structured !== undefined) payload.structured = outcome.result.structured;
    if (outcome.result.diffs) payload.diffs = outcome.result.diffs;
    if (outcome.result.locations) payload.locations = outcome.result.locations;
    this.emit('tool.end', payload);
  }

  /** Delivers buffered steer text after a tool batch (spec/core.md §7.9). */
  private async deliverSteer(afterCallIds: string[]): Promise<void> {
    if (this.steerBuffer.length === 0) return;
    const text = this.steerBuffer.join('\n');
    this.steerBuffer = [];
    const [rowId] = await this.appendRows([{ turnId: this.turnId, role: 'user', content: text, displayKind: 'steer' }]);
    this.emit('steer.delivered', { text, rowId: rowId ?? null, afterCallIds });
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
      await this.appendRows([
        { turnId: this.turnId, role: 'assistant', content: this.finalText, finishReason: 'length' },
      ]);
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
    this.setPhase('finishing', 'Finishing…');
    try {
      await this.closeTranscriptTail();
    } catch (closeError) {
      agent.host.logger.error('could not close the transcript tail', { error: String(closeError) });
    }
    this.stopLeaseRefresh?.();
    for (const stop of this.stopBudgetTimers) stop();
    if (this.lease) {
      try {
        await this.lease.release();
      } catch (releaseError) {
        agent.host.logger.warn('could not release the turn lease', { error: String(releaseError) });
      }
    }
    if (agent.persisted) {
      try {
        await agent.host.store.touchSession(agent.sessionId);
      } catch {
        // counters are refreshed by the next write
      }
    }
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

  /** Gives every call of this turn's stored assistant rows a result (spec/core.md §7.10). */
  private async closeTranscriptTail(): Promise<void> {
    const rows = this.agent.transcript.slice(this.turnRowsStart);
    const answered = new Set(rows.filter((row) => row.role === 'tool').map((row) => row.toolCallId));
    const missing: NewMessage[] = [];
    const reason = this.interruptReason;
    const text = reason ? cancelledToolText(reason) : 'Tool call cancelled: the turn ended before it ran.';
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
    if (missing.length > 0) await this.appendRows(missing);
  }

  /** Redirect: abort only the running model request (spec/core.md §7.9). Returns false when no request runs. */
  redirect(text: string): boolean {
    if (this.phase !== 'model' || !this.modelCallController) return false;
    this.modelCallController.abort({ kind: 'redirect', text });
    return true;
  }

  /** Rows of the transcript written by this turn. */
  turnRows(): TranscriptRow[] {
    return this.agent.transcript.slice(this.turnRowsStart);
  }
}

function finishForExit(reason: FinishReason): string {
  return reason === 'stop' || reason === 'length' || reason === 'content_filter' ? reason : 'other';
}

function endPayload(
  messageId: string,
  text: string,
  finishReason: string | null,
  hasToolCalls: boolean,
  rowId: number | null,
  interrupted: boolean,
  discarded: boolean,
): AgentEventPayloads['message.end'] {
  return { messageId, text, finishReason, hasToolCalls, rowId, interrupted, discarded };
}

/** The public part of a route (no key). */
export function publicRoute(route: ResolvedRoute): {
  spec: string;
  provider: string;
  model: string;
  baseUrl: string | null;
} {
  return { spec: route.spec, provider: route.provider, model: route.model, baseUrl: route.baseUrl };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function isZodSchema(schema: unknown): schema is ZodType {
  return (
    typeof schema === 'object' && schema !== null && typeof (schema as { safeParse?: unknown }).safeParse === 'function'
  );
}

function validateArguments(
  tool: ToolDefinition,
  args: unknown,
): { ok: true; value: unknown } | { ok: false; message: string } {
  if (!isZodSchema(tool.inputSchema)) return { ok: true, value: args };
  const parsed = tool.inputSchema.safeParse(args);
  if (parsed.success) return { ok: true, value: parsed.data };
  return {
    ok: false,
    message: parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; '),
  };
}

/** Declares a tool to the model: its JSON schema and no `execute` (spec/core.md §7). */
export function toFunctionTool(tool: ToolDefinition): LanguageModelV3FunctionTool {
  let declared = declaredTools.get(tool);
  if (!declared) {
    // Converted once per tool definition: the schema is on every request's hot path.
    const schema = isZodSchema(tool.inputSchema) ? toJSONSchema(tool.inputSchema, { io: 'input' }) : tool.inputSchema;
    declared = {
      type: 'function',
      name: tool.name,
      description: tool.description,
      inputSchema: schema as LanguageModelV3FunctionTool['inputSchema'],
    };
    declaredTools.set(tool, declared);
  }
  return declared;
}

const declaredTools = new WeakMap<ToolDefinition, LanguageModelV3FunctionTool>();

export type { FailoverReason };
