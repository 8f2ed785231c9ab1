import type { LanguageModelV3 } from '@ai-sdk/provider';
import { HermesError } from '../errors.js';
import { importOnFirstUse } from '../util/import-on-first-use.js';
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

function requireKey(route: Pick<ResolvedRoute, 'apiKey' | 'provider'>): string {
  if (route.apiKey) return route.apiKey;
  // The SDK would otherwise read process.env itself, bypassing the `env` option and key scoping.
  throw new HermesError('missing_credentials', `Provider '${route.provider}' has no API key`, {
    details: { provider: route.provider },
  });
}

/** What a model needs from its route once its package is loaded; fixed when the model is created. */
interface SdkModelSettings {
  provider: string;
  model: string;
  baseUrl: string | null;
  apiKey: string | null;
  fetch: typeof globalThis.fetch | undefined;
}

/**
 * Loaded OpenAI-compatible models by fetch and settings: a turn creates its model afresh, and the
 * SDK builds a model's zod schemas when it is created (ADR 0014). Bounded by clearing.
 */
const compatibleModels = new WeakMap<object, Map<string, Promise<LanguageModelV3>>>();
const DEFAULT_FETCH_KEY = {};
const COMPATIBLE_CACHE_LIMIT = 64;

/**
 * Creates a `LanguageModelV3` with one of the three AI SDK packages, imported here on first use.
 * Base URL and key are always passed explicitly so the SDKs never fall back to `process.env`.
 */
async function loadSdkModel(providerPackage: ProviderPackage, settings: SdkModelSettings): Promise<LanguageModelV3> {
  if (providerPackage === 'openai-compatible') {
    const fetchKey = settings.fetch ?? DEFAULT_FETCH_KEY;
    let models = compatibleModels.get(fetchKey);
    if (!models) {
      models = new Map();
      compatibleModels.set(fetchKey, models);
    }
    const key = JSON.stringify([settings.provider, settings.model, settings.baseUrl, settings.apiKey]);
    let model = models.get(key);
    if (!model) {
      if (models.size >= COMPATIBLE_CACHE_LIMIT) models.clear();
      model = loadCompatibleModel(settings);
      models.set(key, model);
      // A failed load is not kept.
      model.catch(() => models?.delete(key));
    }
    return model;
  }
  return loadOtherSdkModel(providerPackage, settings);
}

async function loadCompatibleModel(settings: SdkModelSettings): Promise<LanguageModelV3> {
  // One bundle with the SDK's provider and its dependencies (ADR 0092).
  const { createOpenAICompatible, createLeanCompatibleChatModel } = await importOnFirstUse(
    () => import('./compatible-sdk.js'),
  );
  // The SDK builds and sends the request; successful streams are parsed by the lean path (ADR 0014).
  return createLeanCompatibleChatModel(
    (callFetch, transformRequestBody) =>
      createOpenAICompatible({
        name: compatibleProviderName(settings.provider),
        baseURL: settings.baseUrl ?? '',
        ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
        includeUsage: true,
        fetch: callFetch,
        transformRequestBody,
      }).chatModel(settings.model),
    settings.fetch,
  );
}

async function loadOtherSdkModel(
  providerPackage: Exclude<ProviderPackage, 'openai-compatible'>,
  settings: SdkModelSettings,
): Promise<LanguageModelV3> {
  const fetch = settings.fetch === undefined ? {} : { fetch: settings.fetch };
  switch (providerPackage) {
    case 'openai': {
      const { createOpenAI } = await importOnFirstUse(() => import('@ai-sdk/openai'));
      return createOpenAI({
        apiKey: requireKey(settings),
        baseURL: settings.baseUrl ?? BUILTIN_PROVIDERS.openai.defaultBaseUrl ?? undefined,
        ...fetch,
      }).chat(settings.model);
    }
    case 'anthropic': {
      const { createAnthropic } = await importOnFirstUse(() => import('@ai-sdk/anthropic'));
      return createAnthropic({
        apiKey: requireKey(settings),
        baseURL: settings.baseUrl ?? BUILTIN_PROVIDERS.anthropic.defaultBaseUrl ?? undefined,
        ...fetch,
      }).languageModel(settings.model);
    }
  }
}

/** The `provider` string the SDK's own model reports, known before the package is loaded. */
function sdkProviderName(providerPackage: ProviderPackage, provider: string): string {
  switch (providerPackage) {
    case 'openai':
      return 'openai.chat';
    case 'anthropic':
      return 'anthropic.messages';
    case 'openai-compatible':
      return `${compatibleProviderName(provider)}.chat`;
  }
}

/**
 * A model for a route whose AI SDK package is imported on its first call: each package costs tens
 * of milliseconds to load, and a process that never calls a model (`hermes acp` answering
 * `initialize`, `hermes --help`) should not pay for it. Errors a route can show up front (no key,
 * no base URL) are still thrown here, at creation.
 */
export function createSdkModel(
  providerPackage: ProviderPackage,
  route: ResolvedRoute,
  fetch?: typeof globalThis.fetch,
): LanguageModelV3 {
  if (providerPackage !== 'openai-compatible') requireKey(route);
  else if (route.baseUrl === null) {
    throw new HermesError('missing_credentials', `Provider '${route.provider}' has no base URL`, {
      details: { provider: route.provider },
    });
  }
  // Read now: the key is a non-enumerable field of this route object, which copies of it lose.
  const settings: SdkModelSettings = {
    provider: route.provider,
    model: route.model,
    baseUrl: route.baseUrl,
    apiKey: route.apiKey,
    fetch,
  };
  let loaded: Promise<LanguageModelV3> | null = null;
  const model = () => {
    loaded ??= loadSdkModel(providerPackage, settings);
    return loaded;
  };
  return {
    specificationVersion: 'v3',
    provider: sdkProviderName(providerPackage, route.provider),
    modelId: route.model,
    get supportedUrls() {
      return model().then((real) => real.supportedUrls);
    },
    doGenerate: async (options) => (await model()).doGenerate(options),
    doStream: async (options) => (await model()).doStream(options),
  };
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
