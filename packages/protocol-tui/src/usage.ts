import type { Agent } from '@hermes/core';
import type { Usage } from './wire/index.js';

/** The `Usage` of a session before its agent exists (§2.7). */
export function emptyUsage(): Usage {
  return { model: '', input: 0, output: 0, reasoning: 0, prompt: 0, completion: 0, total: 0, calls: 0 };
}

/** Maps the core's usage snapshot to the wire `Usage` (§2.7). */
export function usageOf(agent: Agent, built: boolean): Usage {
  if (!built) return emptyUsage();
  const snapshot = agent.usage();
  const session = snapshot.session;
  const prompt = session.inputTokens;
  const completion = session.outputTokens;
  const usage: Usage = {
    model: agent.model?.model ?? agent.status().model?.model ?? '',
    input: Math.max(0, session.inputTokens - session.cacheReadTokens),
    output: session.outputTokens,
    reasoning: session.reasoningTokens,
    prompt,
    completion,
    total: prompt + completion,
    calls: session.apiCalls,
    cache_read: session.cacheReadTokens,
    cache_write: session.cacheWriteTokens,
  };
  if (snapshot.context.lastPromptTokens > 0) usage.context_used = snapshot.context.lastPromptTokens;
  if (snapshot.context.contextWindow > 0) {
    usage.context_max = snapshot.context.contextWindow;
    usage.context_percent = Math.min(
      100,
      Math.max(0, Math.round((100 * snapshot.context.lastPromptTokens) / snapshot.context.contextWindow)),
    );
  }
  return usage;
}
