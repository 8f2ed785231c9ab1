import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
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
      const callOptions: Parameters<typeof model.doGenerate>[0] = { prompt };
      if (options.signal) callOptions.abortSignal = options.signal;
      if (options.maxOutputTokens !== undefined) callOptions.maxOutputTokens = options.maxOutputTokens;
      const result = await model.doGenerate(callOptions);
      const text = result.content
        .filter((part) => part.type === 'text')
        .map((part) => (part as { text: string }).text)
        .join('');
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
