import type { LanguageModelV3Usage } from '@ai-sdk/provider';
import type { Usage } from './types.js';

/** A Usage of zeros. */
export function zeroUsage(): Usage {
  return {
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    totalTokens: 0,
    apiCalls: 0,
  };
}

/** Sum of two usages; `estimated` sticks once set. */
export function addUsage(a: Usage, b: Usage): Usage {
  const sum: Usage = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    apiCalls: a.apiCalls + b.apiCalls,
  };
  if (a.estimated || b.estimated) sum.estimated = true;
  return sum;
}

/** Rough token estimate: 4 characters per token (spec/core.md §17.1). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Normalizes the SDK's usage of one call (spec/core.md §17.1). Missing figures are estimated from
 * the given character counts and the result is flagged `estimated`.
 */
export function normalizeUsage(
  usage: LanguageModelV3Usage | undefined,
  /** For a model that reports no token counts: the prompt's size is counted only then (it grows with the session). */
  fallback: { promptChars: () => number; outputChars: number },
): Usage {
  let estimated = false;
  let inputTokens = usage?.inputTokens.total;
  if (inputTokens === undefined) {
    const noCache = usage?.inputTokens.noCache;
    if (noCache !== undefined) {
      inputTokens = noCache + (usage?.inputTokens.cacheRead ?? 0) + (usage?.inputTokens.cacheWrite ?? 0);
    } else {
      inputTokens = Math.ceil(fallback.promptChars() / 4);
      estimated = true;
    }
  }
  let outputTokens = usage?.outputTokens.total;
  if (outputTokens === undefined) {
    const textTokens = usage?.outputTokens.text;
    if (textTokens !== undefined) outputTokens = textTokens + (usage?.outputTokens.reasoning ?? 0);
    else {
      outputTokens = Math.ceil(fallback.outputChars / 4);
      estimated = true;
    }
  }
  const result: Usage = {
    inputTokens,
    outputTokens,
    cacheReadTokens: usage?.inputTokens.cacheRead ?? 0,
    cacheWriteTokens: usage?.inputTokens.cacheWrite ?? 0,
    reasoningTokens: usage?.outputTokens.reasoning ?? 0,
    totalTokens: inputTokens + outputTokens,
    apiCalls: 1,
  };
  if (estimated) result.estimated = true;
  return result;
}
