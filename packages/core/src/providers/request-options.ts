import type { SharedV3ProviderOptions } from '@ai-sdk/provider';
import type { ReasoningEffort } from '../config/schema.js';
import { compatibleProviderName, type ProviderPackage } from './builtin.js';

/** Thinking budgets for Anthropic (the API needs at least 1024); the SDK adds the budget to `max_tokens`. */
export const ANTHROPIC_THINKING_BUDGETS: Readonly<Record<Exclude<ReasoningEffort, 'none'>, number>> = {
  low: 2048,
  medium: 8192,
  high: 24576,
};

/**
 * Provider options for a reasoning effort (spec/core.md §10.5): OpenAI's `reasoningEffort`,
 * Anthropic's thinking budget (`none` switches thinking off), and `reasoning_effort` for
 * OpenAI-compatible endpoints (set through the SDK's `reasoningEffort` under the provider's name).
 * Undefined when the effort is unset or the provider has no such option.
 *
 * `providerPackage` is the AI SDK package that serves the route (`catalog.providerOptionsFor` passes
 * it; null for a registered adapter, which gets no options). When omitted it is inferred from the
 * id: `openai` and `anthropic` are themselves, every other provider is OpenAI-compatible, and
 * options under an unrelated provider's name are ignored by the SDKs.
 */
export function providerOptionsFor(
  route: { provider: string },
  reasoningEffort: ReasoningEffort | null | undefined,
  providerPackage?: ProviderPackage | null,
): SharedV3ProviderOptions | undefined {
  if (reasoningEffort === undefined || reasoningEffort === null || providerPackage === null) return undefined;
  const effectivePackage: ProviderPackage =
    providerPackage ??
    (route.provider === 'openai' ? 'openai' : route.provider === 'anthropic' ? 'anthropic' : 'openai-compatible');
  switch (effectivePackage) {
    case 'openai':
      return { openai: { reasoningEffort } };
    case 'anthropic':
      return {
        anthropic: {
          thinking:
            reasoningEffort === 'none'
              ? { type: 'disabled' }
              : { type: 'enabled', budgetTokens: ANTHROPIC_THINKING_BUDGETS[reasoningEffort] },
        },
      };
    case 'openai-compatible':
      return { [compatibleProviderName(route.provider)]: { reasoningEffort } };
  }
}
