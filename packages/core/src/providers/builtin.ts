import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { HermesError } from '../errors.js';
import type { BuiltinProviderId } from './model-spec.js';
import type { ProviderAdapter, ResolvedRoute } from './types.js';

/** Which AI SDK package serves a provider. */
export type ProviderPackage = 'openai' | 'anthropic' | 'openai-compatible';

/** Where a built-in provider finds its base URL and key (spec/core.md §10.3). */
export interface BuiltinProviderDescriptor {
  id: BuiltinProviderId;
  package: ProviderPackage;
  /** Environment variable with the base URL, when the provider has one. */
  baseUrlVariable: string | null;
  /** Base URL used when nothing is configured; null when one must be configured (`custom`). */
  defaultBaseUrl: string | null;
  /** The only environment variable whose value is sent to this provider as its key. */
  keyVariable: string | null;
  requiresKey: boolean;
  strictAlternation: boolean;
  /** Runs on the user's machine: no key, cost `included`. */
  local: boolean;
}

/** The built-in providers of spec/core.md §10.3. */
export const BUILTIN_PROVIDERS: Readonly<Record<BuiltinProviderId, BuiltinProviderDescriptor>> = {
  openai: {
    id: 'openai',
    package: 'openai',
    baseUrlVariable: 'OPENAI_BASE_URL',
    defaultBaseUrl: 'https://api.openai.com/v1',
    keyVariable: 'OPENAI_API_KEY',
    requiresKey: true,
    strictAlternation: false,
    local: false,
  },
  anthropic: {
    id: 'anthropic',
    package: 'anthropic',
    baseUrlVariable: 'ANTHROPIC_BASE_URL',
    defaultBaseUrl: 'https://api.anthropic.com/v1',
    keyVariable: 'ANTHROPIC_API_KEY',
    requiresKey: true,
    strictAlternation: true,
    local: false,
  },
  openrouter: {
    id: 'openrouter',
    package: 'openai-compatible',
    baseUrlVariable: null,
    defaultBaseUrl: 'https://openrouter.ai/api/v1',
    keyVariable: 'OPENROUTER_API_KEY',
    requiresKey: true,
    strictAlternation: false,
    local: false,
  },
  ollama: {
    id: 'ollama',
    package: 'openai-compatible',
    baseUrlVariable: 'OLLAMA_BASE_URL',
    defaultBaseUrl: 'http://localhost:11434/v1',
    keyVariable: null,
    requiresKey: false,
    strictAlternation: false,
    local: true,
  },
  vllm: {
    id: 'vllm',
    package: 'openai-compatible',
    baseUrlVariable: 'VLLM_BASE_URL',
    defaultBaseUrl: 'http://localhost:8000/v1',
    keyVariable: 'VLLM_API_KEY',
    requiresKey: false,
    strictAlternation: false,
    // A vLLM server may be remote and keyed, so its cost is not assumed to be included.
    local: false,
  },
  llamacpp: {
    id: 'llamacpp',
    package: 'openai-compatible',
    baseUrlVariable: 'LLAMACPP_BASE_URL',
    defaultBaseUrl: 'http://localhost:8080/v1',
    keyVariable: null,
    requiresKey: false,
    strictAlternation: false,
    local: true,
  },
  lmstudio: {
    id: 'lmstudio',
    package: 'openai-compatible',
    baseUrlVariable: 'LMSTUDIO_BASE_URL',
    defaultBaseUrl: 'http://localhost:1234/v1',
    keyVariable: null,
    requiresKey: false,
    strictAlternation: false,
    local: true,
  },
  custom: {
    id: 'custom',
    package: 'openai-compatible',
    baseUrlVariable: 'HERMES_BASE_URL',
    defaultBaseUrl: null,
    keyVariable: 'HERMES_API_KEY',
    requiresKey: false,
    strictAlternation: false,
    local: false,
  },
};

/**
 * The provider name given to `createOpenAICompatible`. The SDK reads provider options under the
 * part of this name before the first dot, so dots are replaced.
 */
export function compatibleProviderName(providerId: string): string {
  return providerId.replace(/\./g, '-');
}

function requireKey(route: ResolvedRoute): string {
  if (route.apiKey) return route.apiKey;
  // The SDK would otherwise read process.env itself, bypassing the `env` option and key scoping.
  throw new HermesError('missing_credentials', `Provider '${route.provider}' has no API key`, {
    details: { provider: route.provider },
  });
}

/**
 * Creates a `LanguageModelV3` for a route with one of the three AI SDK packages. Base URL and key
 * are always passed explicitly so the SDKs never fall back to `process.env`.
 */
export function createSdkModel(
  providerPackage: ProviderPackage,
  route: ResolvedRoute,
  fetch?: typeof globalThis.fetch,
): LanguageModelV3 {
  switch (providerPackage) {
    case 'openai':
      return createOpenAI({
        apiKey: requireKey(route),
        baseURL: route.baseUrl ?? BUILTIN_PROVIDERS.openai.defaultBaseUrl ?? undefined,
        ...(fetch === undefined ? {} : { fetch }),
      }).chat(route.model);
    case 'anthropic':
      return createAnthropic({
        apiKey: requireKey(route),
        baseURL: route.baseUrl ?? BUILTIN_PROVIDERS.anthropic.defaultBaseUrl ?? undefined,
        ...(fetch === undefined ? {} : { fetch }),
      }).languageModel(route.model);
    case 'openai-compatible': {
      if (route.baseUrl === null) {
        throw new HermesError('missing_credentials', `Provider '${route.provider}' has no base URL`, {
          details: { provider: route.provider },
        });
      }
      return createOpenAICompatible({
        name: compatibleProviderName(route.provider),
        baseURL: route.baseUrl,
        ...(route.apiKey ? { apiKey: route.apiKey } : {}),
        includeUsage: true,
        ...(fetch === undefined ? {} : { fetch }),
      }).chatModel(route.model);
    }
  }
}

/** A provider adapter backed by one of the AI SDK packages. */
export function createSdkAdapter(input: {
  id: string;
  providerPackage: ProviderPackage;
  requiresKey: boolean;
  strictAlternation: boolean;
  local: boolean;
  aliases?: string[];
}): ProviderAdapter {
  const adapter: ProviderAdapter = {
    id: input.id,
    requiresKey: input.requiresKey,
    strictAlternation: input.strictAlternation,
    local: input.local,
    create: (route, fetch) => createSdkModel(input.providerPackage, route, fetch),
  };
  if (input.aliases !== undefined) adapter.aliases = input.aliases;
  return adapter;
}
