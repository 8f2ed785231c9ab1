import type { LanguageModelV3, LanguageModelV3FunctionTool, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { toJSONSchema } from 'zod';
import { loadShellParser } from '../approvals/shell-parser.js';
import { HermesError } from '../errors.js';
import type { AgentEventPayloads } from '../events.js';
import { newId } from '../ids.js';
import { partBatchesOf } from '../providers/part-batches.js';
import type { ResolvedRoute } from '../providers/types.js';
import type { NewMessage } from '../store/types.js';
import type { ToolDefinition } from '../tools/types.js';
import type { FinishReason, JsonObject, StoredToolCall, Usage } from '../types.js';
import { addUsage, normalizeUsage } from '../usage.js';
import { retry } from '../util/retry.js';
import { TextChunks } from '../util/text-chunks.js';
import {
  type ClassifiedError,
  classifyProviderError,
  EmptyResponseError,
  nextBackoff,
  StreamIdleTimeoutError,
} from './classify.js';
import { isRedirectReason } from './interrupt.js';
import { buildPrompt } from './request.js';
import { publicRoute, type ToolCallRequest } from './turn-base.js';
import { isZodSchema, TurnTools } from './turn-tools.js';

/** A model call that failed with a classified error: carried out of the retry helper to the fallback step. */
class FailedModelCall extends Error {
  constructor(
    readonly error: ClassifiedError,
    readonly discardMessageId: string | undefined,
  ) {
    super(error.message);
  }
}

/** Thrown by the wait between retries when the turn is cancelled meanwhile: the step ends as cancelled. */
const WAIT_CANCELLED = Symbol('wait cancelled');

const SUMMARY_INSTRUCTION =
  'You have reached the limit of steps for this turn. Do not call any tools. Summarize for the user: what was done, what remains, and the current state.';

/** What one model step ended with. */
export type StepOutcome =
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

/**
 * Starts loading the bash grammar when the model calls `terminal`, so the command's approval check (judgeCommand)
 * finds it loaded or nearly so while the call's arguments still stream. It is not loaded at start-up: a process that
 * never runs a command does not hold its 4-5 MB (ADR 0099). The load runs once per process; later calls return
 * its settled promise.
 */
function loadGrammarFor(toolName: string): void {
  if (toolName === 'terminal') loadShellParser().catch(() => {});
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

/** The model stage of a turn (spec/core.md §7.5, §7.6): one step with its retries and fallbacks. */
export abstract class TurnModel extends TurnTools {
  protected nextFallback(used: Set<string>): ResolvedRoute | null {
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

  private declaredClientTools: LanguageModelV3FunctionTool[] | null = null;

  /** The client's own tools as the model is told about them (ADR 0052): their schema as the client sent it. */
  protected clientFunctionTools(): LanguageModelV3FunctionTool[] {
    this.declaredClientTools ??= (this.options.clientTools ?? []).map((tool) => ({
      type: 'function',
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      inputSchema: tool.inputSchema as LanguageModelV3FunctionTool['inputSchema'],
    }));
    return this.declaredClientTools;
  }

  /** One model step with its retries and fallbacks (spec/core.md §7.5, §7.6). */
  protected async modelStep(tools: ToolDefinition[], summary: boolean): Promise<StepOutcome> {
    const route0 = this.route;
    if (!route0) throw new HermesError('invalid_input', 'no route');
    let route: ResolvedRoute = route0;
    const usedSpecs = new Set<string>([route.spec]);
    const maxRetries = this.settings.agent.api_max_retries;
    let onlyEmpty = true;
    // One pass per route: the retries of one model, then the next fallback with its own retries.
    for (;;) {
      let previousDelay: number | null = null;
      let outcome: StepOutcome;
      try {
        outcome = await retry(
          async () => {
            if (this.interruptReason) return { kind: 'cancelled', text: '', messageId: null } satisfies StepOutcome;
            const result = await this.attempt(route, tools, summary);
            if (result.kind !== 'error') return result;
            const error = result.error;
            if (error.reason !== 'empty_response') onlyEmpty = false;
            if (error.compress && !summary) return { kind: 'overflow', error } satisfies StepOutcome;
            throw new FailedModelCall(error, result.discardMessageId);
          },
          {
            // Retry number n follows failed attempt n: at most `maxRetries` of them, retryable errors only.
            next: (failure, attemptNumber) => {
              if (!(failure instanceof FailedModelCall) || !failure.error.retryable || attemptNumber > maxRetries)
                return { fail: failure };
              const delayMs = Math.round(nextBackoff(previousDelay, failure.error.retryAfterMs));
              previousDelay = delayMs;
              return { retryInMs: delayMs };
            },
            onRetry: (failure, attemptNumber, delayMs) => {
              const { error, discardMessageId } = failure as FailedModelCall;
              const payload: AgentEventPayloads['retry'] = {
                attempt: attemptNumber,
                maxRetries,
                delayMs,
                reason: error.reason,
                message: error.message,
              };
              if (error.status !== undefined) payload.status = error.status;
              if (discardMessageId) payload.discardMessageId = discardMessageId;
              this.emit('retry', payload);
            },
            sleep: (ms, signal) => this.agent.host.clock.sleep(ms, signal).catch(() => Promise.reject(WAIT_CANCELLED)),
            signal: this.signal,
          },
        );
      } catch (failure) {
        if (failure === WAIT_CANCELLED) return { kind: 'cancelled', text: '', messageId: null };
        if (!(failure instanceof FailedModelCall)) throw failure;
        const error = failure.error;
        const next = this.nextFallback(usedSpecs);
        if (next) {
          this.emit('fallback', { from: publicRoute(route), to: publicRoute(next), reason: error.reason });
          route = next;
          this.route = next;
          this.fallbackUsed = true;
          continue;
        }
        const exitReason = !error.retryable
          ? `provider_error(${error.reason})`
          : onlyEmpty
            ? 'empty_response_exhausted'
            : 'all_retries_exhausted_no_response';
        return { kind: 'failed', exitReason, error, route };
      }
      return outcome;
    }
  }

  /** One model call: streams parts into events. */
  protected async attempt(
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
    const textChunks = new TextChunks();
    const reasoningChunks = new TextChunks();
    let providerMetadata: JsonObject | null = null;
    const toolCalls: ToolCallRequest[] = [];
    let finish: { unified: string; raw: string | undefined } | null = null;
    let usage: Parameters<typeof normalizeUsage>[0];
    const idleMs = this.settings.agent.stream_idle_timeout * 1000;
    // One timer per call, not one per part: each part only notes the time, and the timer, when it fires, aborts the
    // call if the stream has been silent for the whole timeout or waits out the rest of it (a 10k-delta answer
    // cleared and set a timer 10k times).
    const idle: { cancel: (() => void) | null; lastPartAt: number } = { cancel: null, lastPartAt: 0 };
    const cancelIdle = () => {
      idle.cancel?.();
      idle.cancel = null;
    };
    const onIdleTimer = () => {
      const silentMs = host.clock.now() - idle.lastPartAt;
      if (silentMs >= idleMs) {
        idle.cancel = null;
        callController.abort(new StreamIdleTimeoutError(this.settings.agent.stream_idle_timeout));
      } else idle.cancel = host.clock.setTimer(onIdleTimer, idleMs - silentMs);
    };
    const armIdle = () => {
      idle.lastPartAt = host.clock.now();
      idle.cancel ??= host.clock.setTimer(onIdleTimer, idleMs);
    };
    const start = () => {
      if (started) return;
      started = true;
      this.streamingChunks = textChunks;
      this.emit('message.start', { messageId, iteration: this.iteration });
    };
    const transcriptRows = agent.transcript;
    const prompt = buildPrompt(agent.systemPromptText(), this.input.ephemeralSystemPrompt, transcriptRows, {
      strictAlternation: route.strictAlternation,
      anthropic: route.provider === 'anthropic',
    });
    if (summary) prompt.push({ role: 'user', content: [{ type: 'text', text: SUMMARY_INSTRUCTION }] });
    // Serialized only for a model that reports no usage: it is the whole transcript, on every model call.
    const promptChars = () => prompt.reduce((sum, message) => sum + JSON.stringify(message.content).length, 0);
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
      const clientTools = summary ? [] : this.clientFunctionTools();
      if (!summary && tools.length + clientTools.length > 0)
        callOptions.tools = [...tools.map(toFunctionTool), ...clientTools];
      const choice = this.options.toolChoice;
      if (!summary && choice !== undefined && !this.toolChoiceSpent)
        callOptions.toolChoice =
          choice === 'required' ? { type: 'required' } : { type: 'tool', toolName: choice.toolName };
      if (maxTokens !== null && maxTokens !== undefined) callOptions.maxOutputTokens = maxTokens;
      if (providerOptions) callOptions.providerOptions = providerOptions;
      const result = await model.doStream(callOptions);
      // A stream that offers its parts in batches (the lean OpenAI-compatible one) is read a body chunk at a time: no
      // queue entry, promise and microtask per part (ADR 0024). Any other is read part by part. Asked of the result,
      // not of its stream, so that a lean stream's `ReadableStream` is never made (ADR 0108).
      const batches = partBatchesOf(result);
      const reader = batches === null ? result.stream.getReader() : null;
      const single: LanguageModelV3StreamPart[] = [];
      let aborted = false;
      // One abort listener for the whole stream, not one per read: cancelling the reader settles the pending read
      // at once (done), and the abort's reason is thrown from there. A 10k-delta answer is 10k reads.
      const onAbort = () => {
        aborted = true;
        void (batches ?? (reader as ReadableStreamDefaultReader)).cancel(callSignal.reason).catch(() => {});
      };
      callSignal.addEventListener('abort', onAbort, { once: true });
      try {
        // An abort before the listener was added never calls it.
        if (callSignal.aborted) throw callSignal.reason;
        for (;;) {
          let parts: LanguageModelV3StreamPart[] | null;
          if (batches !== null) parts = await batches.read();
          else {
            const next = await (reader as ReadableStreamDefaultReader<LanguageModelV3StreamPart>).read();
            if (next.done) parts = null;
            else {
              single[0] = next.value;
              parts = single;
            }
          }
          if (callSignal.aborted) throw callSignal.reason;
          if (parts === null) break;
          armIdle();
          for (let index = 0; index < parts.length; index += 1) {
            // An event listener may abort the call while a batch is delivered: no part after that one.
            if (aborted) throw callSignal.reason;
            const part = parts[index] as LanguageModelV3StreamPart;
            switch (part.type) {
              case 'text-delta': {
                // The deltas of one body chunk arrived together: they go out as one event (ADR 0078).
                const last = lastOfRun(parts, index, 'text-delta');
                const delta = last === index ? part.delta : joinRun(parts, index, last);
                index = last;
                if (delta === '') break;
                start();
                textChunks.push(delta);
                this.emit('message.delta', { messageId, text: delta });
                break;
              }
              case 'reasoning-delta': {
                const last = lastOfRun(parts, index, 'reasoning-delta');
                const delta = last === index ? part.delta : joinRun(parts, index, last);
                index = last;
                if (delta === '') break;
                start();
                reasoningChunks.push(delta);
                this.emit('reasoning.delta', { messageId, text: delta });
                break;
              }
              case 'reasoning-end':
                if (part.providerMetadata)
                  providerMetadata = { ...(providerMetadata ?? {}), ...(part.providerMetadata as JsonObject) };
                break;
              case 'tool-input-start':
                start();
                loadGrammarFor(part.toolName);
                this.emit('tool.generating', { messageId, callId: part.id, name: part.toolName });
                break;
              case 'tool-call':
                start();
                loadGrammarFor(part.toolName);
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
        }
      } finally {
        text = textChunks.toString();
        reasoning = reasoningChunks.toString();
        callSignal.removeEventListener('abort', onAbort);
        // Cancelling (rather than releasing) also stops a provider stream that is still producing.
        (batches ?? (reader as ReadableStreamDefaultReader)).cancel().catch(() => {});
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
    const [stored] = this.stageRows([row]);
    this.storedAnything = true;
    const usageEvent = this.recordUsage(route, callUsage, 'main');
    const hasToolCalls = storedCalls.length > 0;
    const end = () => {
      this.emit(
        'message.end',
        endPayload(
          messageId,
          text,
          hasToolCalls ? 'tool_calls' : finishReason,
          hasToolCalls,
          stored?.rowId ?? null,
          false,
          false,
        ),
      );
      usageEvent();
    };
    // Calls are stored with their answer before any tool runs, so a crash keeps what was asked (spec/core.md §7.8).
    // A final answer waits for the turn's last commit, which stores it with the usage and the session's fields and
    // releases the lease in one transaction; its events follow that commit, as they followed the row's own write.
    if (hasToolCalls || !agent.storesWrites) {
      await this.commitStaged();
      end();
    } else this.afterCommit.push(end);
    this.toolChoiceSpent = true;
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

  /**
   * Notes a model call's usage for the turn and the session, and stages it for the turn's next commit. Returns the
   * emission of its `usage` event, which follows the call's `message.end`.
   */
  protected recordUsage(route: ResolvedRoute, callUsage: Usage, task: 'main'): () => void {
    const agent = this.agent;
    const { costUsd, status } = agent.host.cost(route, callUsage);
    this.turnUsage = addUsage(this.turnUsage, callUsage);
    this.turnCost += costUsd;
    agent.noteUsage(route, callUsage, costUsd, status, task);
    agent.stageUsage({
      provider: route.provider,
      model: route.model,
      task,
      usage: callUsage,
      costUsd,
      costStatus: status,
    });
    const snapshot = agent.usage();
    const turnUsage = this.turnUsage;
    const turnCost = this.turnCost;
    return () =>
      this.emit('usage', {
        call: callUsage,
        turn: turnUsage,
        session: snapshot.session,
        costUsd: { call: status === 'unknown' ? null : costUsd, turn: turnCost, session: snapshot.costUsd },
        costStatus: status,
        contextTokens: snapshot.context.estimatedTokens,
        contextWindow: snapshot.context.contextWindow,
      });
  }
}

/** The index of the last part of the run of `type` parts that starts at `from`. */
function lastOfRun(parts: LanguageModelV3StreamPart[], from: number, type: 'text-delta' | 'reasoning-delta'): number {
  let last = from;
  while (last + 1 < parts.length && (parts[last + 1] as LanguageModelV3StreamPart).type === type) last += 1;
  return last;
}

/**
 * The text of the delta parts `from` to `last`, as one flat string: one allocation, where adding them one by one
 * builds a rope node per delta.
 */
function joinRun(parts: LanguageModelV3StreamPart[], from: number, last: number): string {
  const texts = new Array<string>(last - from + 1);
  for (let index = from; index <= last; index += 1) texts[index - from] = (parts[index] as { delta: string }).delta;
  return texts.join('');
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
