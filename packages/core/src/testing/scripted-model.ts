/**
 * The scripted fake model: an AI SDK `LanguageModelV3` that plays a `ModelScript` (spec/core.md §22.2).
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import { systemClock } from '../clock.js';
import type { ProviderAdapter, ResolvedRoute } from '../providers/types.js';
import type { Clock } from '../types.js';
import {
  abortReason,
  computeUsage,
  countPromptCharacters,
  createScriptedApiError,
  createScriptSetupError,
  createStreamCutError,
  type ErrorContext,
  type ExhaustedBehavior,
  exhaustedMessage,
  type ModelScript,
  type OutputAction,
  type PlannedAction,
  planStep,
  type RecordedCall,
  runActions,
  type ScriptedError,
  ScriptQueue,
  type ScriptStep,
  type ScriptUsage,
  type StepPlan,
  toOpenAIFinishReason,
} from './script.js';
import { findAlternationViolation, type StrictAlternationRule } from './strict-alternation.js';

/** A fake AI SDK language model driven by a script. */
export interface ScriptedModel extends LanguageModelV3 {
  /** Every `doStream`/`doGenerate` call, in order, as received. */
  readonly calls: RecordedCall[];
  /** Steps not yet consumed. */
  readonly remaining: number;
  /**
   * Errors thrown by `expect` hooks and strict-alternation violations. The call that hit one fails, but the core may
   * retry and go on, so a test (or the test host's dispose) should assert that this stays empty.
   */
  readonly expectationFailures: unknown[];
  /** Appends steps to the script. */
  push(...steps: ScriptStep[]): void;
}

/** Options of `createScriptedModel`. */
export interface ScriptedModelOptions {
  /** Default `scripted`. */
  provider?: string;
  /** Default `test`. */
  modelId?: string;
  /** Default `error`: a non-retryable 400 `APICallError` saying how many calls were consumed. */
  onExhausted?: ExhaustedBehavior;
  /** Used for delays and `startedAt`; real timers when absent. */
  clock?: Clock;
  /** Assert on every call that the prompt alternates (see `StrictAlternationRule`). */
  strictAlternation?: StrictAlternationRule;
}

function finishReasonOf(plan: StepPlan): LanguageModelV3FinishReason {
  return { unified: plan.finishReason, raw: toOpenAIFinishReason(plan.finishReason) };
}

/** The AI SDK usage shape of a scripted usage. */
export function toLanguageModelUsage(usage: ScriptUsage): LanguageModelV3Usage {
  return {
    inputTokens: {
      total: usage.inputTokens,
      noCache: Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheWriteTokens),
      cacheRead: usage.cacheReadTokens,
      cacheWrite: usage.cacheWriteTokens,
    },
    outputTokens: {
      total: usage.outputTokens,
      text: Math.max(0, usage.outputTokens - usage.reasoningTokens),
      reasoning: usage.reasoningTokens,
    },
  };
}

interface PreparedCall {
  call: RecordedCall;
  callNumber: number;
  plan: StepPlan;
  usage: ScriptUsage;
  context: ErrorContext;
  signal: AbortSignal | undefined;
  /** Marks the call complete: a later abort no longer counts. */
  settle(): void;
}

class ScriptedLanguageModel implements ScriptedModel {
  readonly specificationVersion = 'v3' as const;
  readonly provider: string;
  readonly modelId: string;
  readonly supportedUrls: Record<string, RegExp[]> = {};
  readonly calls: RecordedCall[] = [];
  readonly expectationFailures: unknown[] = [];
  readonly #queue: ScriptQueue;
  readonly #clock: Clock;
  readonly #strictAlternation: StrictAlternationRule;

  constructor(script: ModelScript, options: ScriptedModelOptions) {
    this.provider = options.provider ?? 'scripted';
    this.modelId = options.modelId ?? 'test';
    this.#queue = new ScriptQueue(script, options.onExhausted ?? 'error');
    this.#clock = options.clock ?? systemClock;
    this.#strictAlternation = options.strictAlternation ?? false;
  }

  get remaining(): number {
    return this.#queue.remaining;
  }

  push(...steps: ScriptStep[]): void {
    this.#queue.push(...steps);
  }

  /** Records the call and picks its step; throws what the call must reject with. */
  #prepare(options: LanguageModelV3CallOptions): PreparedCall {
    const { prompt, tools, abortSignal, ...rest } = options;
    const call: RecordedCall = {
      // A copy of the list, so a caller reusing its array for the next call does not rewrite this record.
      messages: [...prompt],
      tools: (tools ?? []).map((tool) => ({
        name: tool.name,
        schema: tool.type === 'function' ? tool.inputSchema : tool.args,
      })),
      options: rest,
      aborted: false,
      startedAt: this.#clock.now(),
    };
    this.calls.push(call);
    const callNumber = this.calls.length;
    const context: ErrorContext = {
      url: `scripted://${this.provider}/${this.modelId}`,
      requestBodyValues: { model: this.modelId, prompt, tools, ...rest },
      modelId: this.modelId,
    };
    if (abortSignal?.aborted) {
      call.aborted = true;
      throw abortReason(abortSignal);
    }
    let settled = false;
    const onAbort = () => {
      if (!settled) call.aborted = true;
    };
    abortSignal?.addEventListener('abort', onAbort, { once: true });
    const settle = () => {
      settled = true;
      abortSignal?.removeEventListener('abort', onAbort);
    };
    try {
      const scriptStep = this.#queue.take();
      if (scriptStep === undefined) {
        const label = `${this.provider}:${this.modelId}`;
        throw createScriptSetupError(
          exhaustedMessage(label, this.#queue.consumed, callNumber),
          'script_exhausted',
          context,
        );
      }
      const violation = findAlternationViolation(prompt, this.#strictAlternation);
      if (violation !== undefined) {
        const error = createScriptSetupError(violation, 'strict_alternation_violated', context);
        this.expectationFailures.push(error);
        throw error;
      }
      if (scriptStep.expect !== undefined) {
        try {
          scriptStep.expect(call);
        } catch (error) {
          this.expectationFailures.push(error);
          throw error;
        }
      }
      const plan = planStep(scriptStep, callNumber);
      const usage = computeUsage(scriptStep, plan, countPromptCharacters(prompt));
      return { call, callNumber, plan, usage, context, signal: abortSignal, settle };
    } catch (error) {
      settle();
      throw error;
    }
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const prepared = this.#prepare(options);
    const { plan, context, callNumber, call } = prepared;
    // Stream cancellation ends a pending delay or hang; the call's own signal also counts as an abort.
    const cancellation = new AbortController();
    const signal =
      prepared.signal === undefined ? cancellation.signal : AbortSignal.any([prepared.signal, cancellation.signal]);
    const actions = runActions(plan.actions, signal, this.#clock);

    // Before any output the call behaves like an HTTP request without a response yet: delays and hangs keep
    // doStream pending and an error rejects it, as a real provider's doStream would.
    let first: IteratorResult<OutputAction | Extract<PlannedAction, { type: 'error' }>, void>;
    try {
      first = await actions.next();
    } catch (error) {
      prepared.settle();
      throw error;
    }
    if (!first.done && first.value.type === 'error') {
      prepared.settle();
      throw createScriptedApiError(first.value.error, context);
    }

    const renderer = new StreamRenderer(plan, prepared.usage);
    const modelId = this.modelId;
    let pending: OutputAction | undefined = first.done ? undefined : (first.value as OutputAction);
    let finished = first.done === true;
    const stream = new ReadableStream<LanguageModelV3StreamPart>(
      {
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({
            type: 'response-metadata',
            id: `chatcmpl-scripted-${callNumber}`,
            modelId,
            timestamp: new Date(call.startedAt),
          });
        },
        async pull(controller) {
          try {
            if (pending !== undefined) {
              const action = pending;
              pending = undefined;
              for (const part of renderer.render(action)) controller.enqueue(part);
              return;
            }
            if (finished) {
              for (const part of renderer.finish()) controller.enqueue(part);
              prepared.settle();
              controller.close();
              return;
            }
            const next = await actions.next();
            if (next.done) {
              finished = true;
              for (const part of renderer.finish()) controller.enqueue(part);
              prepared.settle();
              controller.close();
              return;
            }
            if (next.value.type === 'error') {
              prepared.settle();
              const parts = renderer.fail(next.value.error, context);
              if (parts === undefined) {
                controller.error(createStreamCutError(context));
                return;
              }
              for (const part of parts) controller.enqueue(part);
              controller.close();
              return;
            }
            for (const part of renderer.render(next.value)) controller.enqueue(part);
          } catch (error) {
            prepared.settle();
            controller.error(error);
          }
        },
        cancel(reason) {
          prepared.settle();
          cancellation.abort(reason);
        },
      },
      { highWaterMark: 0 },
    );
    return { stream, response: { headers: { 'content-type': 'text/event-stream' } } };
  }

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const prepared = this.#prepare(options);
    const { plan, context, callNumber, call } = prepared;
    const content: LanguageModelV3Content[] = [];
    try {
      for await (const action of runActions(plan.actions, prepared.signal, this.#clock)) {
        if (action.type === 'error') throw createScriptedApiError(action.error, context);
        const last = content.at(-1);
        if (action.type === 'text' || action.type === 'reasoning') {
          if (last?.type === action.type) last.text += action.delta;
          else content.push({ type: action.type, text: action.delta });
        } else if (action.type === 'tool-call') {
          content.push({ type: 'tool-call', toolCallId: action.id, toolName: action.name, input: action.input });
        }
      }
    } finally {
      prepared.settle();
    }
    return {
      content,
      finishReason: finishReasonOf(plan),
      usage: toLanguageModelUsage(prepared.usage),
      response: { id: `chatcmpl-scripted-${callNumber}`, modelId: this.modelId, timestamp: new Date(call.startedAt) },
      warnings: [],
    };
  }
}

/**
 * Turns planned actions into AI SDK stream parts: one text or reasoning block per run of consecutive fragments of
 * that kind (ids `txt-<n>`, `reasoning-<n>`), a block closed before anything else starts, tool input streamed as
 * `tool-input-start`/`-delta`/`-end` followed by `tool-call`.
 */
class StreamRenderer {
  #open: { kind: 'text' | 'reasoning'; id: string } | undefined;
  #textBlocks = 0;
  #reasoningBlocks = 0;
  readonly #plan: StepPlan;
  readonly #usage: ScriptUsage;

  constructor(plan: StepPlan, usage: ScriptUsage) {
    this.#plan = plan;
    this.#usage = usage;
  }

  #close(): LanguageModelV3StreamPart[] {
    const open = this.#open;
    if (open === undefined) return [];
    this.#open = undefined;
    return [{ type: open.kind === 'text' ? 'text-end' : 'reasoning-end', id: open.id }];
  }

  render(action: OutputAction): LanguageModelV3StreamPart[] {
    switch (action.type) {
      case 'text':
      case 'reasoning': {
        const parts: LanguageModelV3StreamPart[] = [];
        if (this.#open?.kind !== action.type) {
          parts.push(...this.#close());
          const id = action.type === 'text' ? `txt-${this.#textBlocks++}` : `reasoning-${this.#reasoningBlocks++}`;
          this.#open = { kind: action.type, id };
          parts.push({ type: action.type === 'text' ? 'text-start' : 'reasoning-start', id });
        }
        const id = this.#open?.id ?? '';
        parts.push({ type: action.type === 'text' ? 'text-delta' : 'reasoning-delta', id, delta: action.delta });
        return parts;
      }
      case 'tool-input-start':
        return [...this.#close(), { type: 'tool-input-start', id: action.id, toolName: action.name }];
      case 'tool-input-delta':
        return [{ type: 'tool-input-delta', id: action.id, delta: action.delta }];
      case 'tool-call':
        return [
          { type: 'tool-input-end', id: action.id },
          { type: 'tool-call', toolCallId: action.id, toolName: action.name, input: action.input },
        ];
    }
  }

  finish(): LanguageModelV3StreamPart[] {
    return [
      ...this.#close(),
      { type: 'finish', finishReason: finishReasonOf(this.#plan), usage: toLanguageModelUsage(this.#usage) },
    ];
  }

  /**
   * A failure after output. With a status it is reported in-band, as providers report an error event of the stream:
   * an `error` part with the `APICallError`, then `finish` with reason `error`. Without a status the connection was
   * cut: undefined, and the caller errors the stream.
   */
  fail(error: ScriptedError, context: ErrorContext): LanguageModelV3StreamPart[] | undefined {
    if (error.status === undefined && error.kind === undefined) return undefined;
    return [
      { type: 'error', error: createScriptedApiError(error, context) },
      ...this.#close(),
      { type: 'finish', finishReason: { unified: 'error', raw: undefined }, usage: toLanguageModelUsage(this.#usage) },
    ];
  }
}

/**
 * Creates a scripted fake model (spec/core.md §22.2). Each `doStream` or `doGenerate` call consumes the next step.
 *
 * Streaming: `stream-start`, `response-metadata`, then the step's parts (text in `chunkSize` fragments, reasoning,
 * tool input and calls), then `finish` with the finish reason and usage. Parts are produced on demand, one action
 * per read, so an abort is noticed before every part, during delays and during a hang; the stream then errors with
 * the signal's reason and the call is recorded `aborted`. Delays and a hang before the first output keep `doStream`
 * itself pending, and an error before output rejects it, as a real HTTP provider behaves.
 */
export function createScriptedModel(script: ModelScript, options: ScriptedModelOptions = {}): ScriptedModel {
  return new ScriptedLanguageModel(script, options);
}

/** Options of `createScriptedProvider`. */
export interface ScriptedProviderOptions {
  /** Declared on the adapter (so the core merges for a strict provider) and asserted by its models. */
  strictAlternation?: StrictAlternationRule;
  /** Passed to every model. */
  clock?: Clock;
  /** Passed to every model. */
  onExhausted?: ExhaustedBehavior;
}

/** A provider adapter whose models are scripted. */
export interface ScriptedProvider extends ProviderAdapter {
  /** The model with this id, created (with an empty script) on first use; the same instance `create` returns. */
  model(modelId: string): ScriptedModel;
}

/**
 * Creates the provider `scripted` (local, no key): each key of `scripts` is a model id, so `scripted:primary` and
 * `scripted:backup` can test fallbacks. `create(route)` returns the model named `route.model`, always the same
 * instance for one id, so tests can inspect its calls.
 */
export function createScriptedProvider(
  scripts: Record<string, ModelScript>,
  options: ScriptedProviderOptions = {},
): ScriptedProvider {
  const models = new Map<string, ScriptedModel>();
  const strictAlternation = options.strictAlternation ?? false;
  const model = (modelId: string): ScriptedModel => {
    let existing = models.get(modelId);
    if (existing === undefined) {
      const modelOptions: ScriptedModelOptions = { provider: 'scripted', modelId, strictAlternation };
      if (options.clock !== undefined) modelOptions.clock = options.clock;
      if (options.onExhausted !== undefined) modelOptions.onExhausted = options.onExhausted;
      existing = createScriptedModel(Object.hasOwn(scripts, modelId) ? (scripts[modelId] ?? []) : [], modelOptions);
      models.set(modelId, existing);
    }
    return existing;
  };
  for (const modelId of Object.keys(scripts)) model(modelId);
  return {
    id: 'scripted',
    local: true,
    requiresKey: false,
    strictAlternation: strictAlternation !== false,
    create: (route: ResolvedRoute) => model(route.model),
    model,
  };
}
