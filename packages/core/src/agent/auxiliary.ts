import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Prompt,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { ResolvedRoute } from '../providers/types.js';
import type { UsageEntry } from '../store/types.js';
import { normalizeUsage } from '../usage.js';
import { retry } from '../util/retry.js';
import { classifyProviderError } from './classify.js';
import type { SessionInternals } from './internals.js';

/** The route of side tasks: `auxiliary.model`, or the session's route for `main` (spec/core.md §10.7). */
export function auxiliaryRoute(agent: SessionInternals): ResolvedRoute | null {
  const spec = agent.host.settings().auxiliary.model;
  if (spec && spec !== 'main') {
    try {
      return agent.host.resolveRoute(spec, agent.route?.provider ?? null);
    } catch (error) {
      agent.host.logger.warn('the auxiliary model could not be resolved; using the main model', {
        error: String(error),
      });
    }
  }
  if (agent.route) return agent.route;
  const fallback = agent.host.defaultModelSpec();
  if (fallback === null) return null;
  try {
    return agent.host.resolveRoute(fallback);
  } catch {
    return null;
  }
}

/**
 * One auxiliary call (titles, compression summaries, smart approvals): one retry on a retryable
 * error, no fallback, usage recorded with its task. Throws on failure; each caller has its own
 * failure path and none fails a turn.
 */
export async function auxiliaryText(
  agent: SessionInternals,
  task: 'title' | 'compression' | 'approval',
  prompt: LanguageModelV3Prompt,
  options: {
    signal?: AbortSignal;
    maxOutputTokens?: number;
    /** Takes the call's usage instead of recording it, for a caller that stores it with its own write. */
    onUsage?: (entry: UsageEntry) => void;
  } = {},
): Promise<string> {
  const route = auxiliaryRoute(agent);
  if (!route) throw new Error('No model is configured for auxiliary tasks.');
  const host = agent.host;
  const model = host.createModel(route);
  // One retry, at once, of a retryable error that is not the caller's abort.
  return retry(
    async () => {
      const callOptions: Parameters<typeof model.doStream>[0] = { prompt };
      if (options.signal) callOptions.abortSignal = options.signal;
      if (options.maxOutputTokens !== undefined) callOptions.maxOutputTokens = options.maxOutputTokens;
      const result = await streamedText(model, callOptions);
      const text = result.text;
      const usage = normalizeUsage(result.usage, {
        promptChars: () => JSON.stringify(prompt).length,
        outputChars: text.length,
      });
      const { costUsd, status } = host.cost(route, usage);
      agent.noteUsage(route, usage, costUsd, status, task);
      const entry: UsageEntry = {
        provider: route.provider,
        model: route.model,
        task,
        usage,
        costUsd,
        costStatus: status,
      };
      if (options.onUsage) options.onUsage(entry);
      else if (agent.persisted) await host.store.recordUsage(agent.sessionId, entry);
      return text;
    },
    {
      next(error, attemptNumber) {
        if (options.signal?.aborted) return { fail: error };
        const classified = classifyProviderError(error, host.clock.now());
        return attemptNumber >= 2 || !classified.retryable ? { fail: error } : { retryInMs: 0 };
      },
    },
  );
}

/**
 * The text and usage of one streamed call. Auxiliary calls stream as turns do (ADR 0080): the stream call is the
 * provider layer's lean path (node:http, the lean parse, ADR 0014 and 0026), where a generate call's answer went
 * through fetch's web streams and the SDK's schema checks, which cost more than a short title. An error part fails
 * the call as a failed generate call would.
 */
async function streamedText(
  model: LanguageModelV3,
  callOptions: LanguageModelV3CallOptions,
): Promise<{ text: string; usage: LanguageModelV3Usage | undefined }> {
  const { stream } = await model.doStream(callOptions);
  const reader = stream.getReader();
  let text = '';
  let usage: LanguageModelV3Usage | undefined;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      const part = next.value;
      if (part.type === 'text-delta') text += part.delta;
      else if (part.type === 'finish') usage = part.usage;
      else if (part.type === 'error') throw part.error;
    }
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    throw error;
  }
  return { text, usage };
}
