import type { LanguageModelV3, SharedV3ProviderOptions } from '@ai-sdk/provider';
import type { VariableLookup } from '../config/environment.js';
import type { HermesConfig, PricingConfig, ProviderConfig, ReasoningEffort } from '../config/schema.js';
import { HermesError } from '../errors.js';
import type { ModelOption, ModelRoute } from '../types.js';
import { normalizeBaseUrl } from './base-url.js';
import {
  BUILTIN_PROVIDERS,
  type BuiltinProviderDescriptor,
  createSdkAdapter,
  type ProviderPackage,
} from './builtin.js';
import { DEFAULT_CONTEXT_WINDOW, KNOWN_MODELS, knownContextWindow } from './metadata.js';
import {
  BUILTIN_PROVIDER_IDS,
  type BuiltinProviderId,
  canonicalProvider,
  type ModelSpecContext,
  type ParsedModelSpec,
  parseModelSpec,
  providerNameIndex,
} from './model-spec.js';
import { type ModelPrice, priceFor } from './pricing.js';
import { fetchRemoteModelIds } from './remote-models.js';
import { providerOptionsFor } from './request-options.js';
import type { ProviderAdapter, ResolvedRoute } from './types.js';

/** What a catalog is built from: a `LoadedConfig` fits. */
export interface ProviderCatalogSource {
  config: HermesConfig;
  /** Environment first, then `.env` (spec/core.md §4.2). */
  lookup: VariableLookup;
  /** Named in `missing_credentials` messages when given. */
  homeDir?: string;
}

/** Options of {@link createProviderCatalog}. */
export interface ProviderCatalogOptions {
  /** Extra or replacement providers (the `providers` host option). */
  providers?: readonly ProviderAdapter[] | undefined;
  /** Passed to every provider factory (the `fetch` host option). */
  fetch?: typeof globalThis.fetch | undefined;
}

/** Options of {@link ProviderCatalog.resolve}. */
export interface ResolveOptions {
  /** The session's provider, for a bare model id. */
  currentProvider?: string | null | undefined;
}

/**
 * Providers and models of one configuration (spec/core.md §10): parses specs, resolves routes with
 * their key, base URL and context window, and creates AI SDK models.
 */
export interface ProviderCatalog {
  /**
   * Parses and resolves a spec. Throws `invalid_model_spec`, `unknown_provider`, or
   * `missing_credentials` (naming the variable to set, in `details.envVar`). The route's `apiKey`
   * is a non-enumerable property, so a spread or `JSON.stringify` of the route leaves it out.
   */
  resolve(spec: string, options?: ResolveOptions): ResolvedRoute;
  /** Parses a spec against the known providers, aliases and the default route. */
  parse(spec: string, options?: ResolveOptions): ParsedModelSpec;
  /** The default spec of spec/core.md §10.2 without the turn and session parts, canonical when it parses. */
  defaultSpec(): string | null;
  /** The provider of the default route, or null. */
  defaultProvider(): string | null;
  /** Creates the model of a resolved route, with the catalog's `fetch` unless one is given. */
  createModel(route: ResolvedRoute, fetch?: typeof globalThis.fetch): LanguageModelV3;
  /**
   * Where a provider's API key comes from: the variable it reads (null when it reads none) and
   * whether a key is set now. Throws `unknown_provider`.
   */
  keyStatus(provider: string): { provider: string; variable: string | null; present: boolean };
  /** The adapter of a provider id or alias. */
  adapter(id: string): ProviderAdapter | undefined;
  /** Every provider id: built-ins, named endpoints and registered adapters. */
  providerIds(): string[];
  /** Default model, fallbacks, models of configured providers, and table models of keyed providers (§10.4). */
  listModels(): ModelOption[];
  /**
   * The user's own OpenAI-compatible endpoints: `custom` when its base URL is configured, then every
   * named provider of `providers:` (spec/core.md §10.3), in configuration order.
   */
  customProviders(): string[];
  /** Asks a provider's endpoint which models it serves (`GET <base_url>/models`); throws `provider_error`. */
  remoteModels(provider: string, options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<string[]>;
  /** Local providers have no key and their cost is `included`. */
  isLocal(provider: string): boolean;
  /** Whether requests to this provider must alternate user and assistant roles. */
  strictAlternation(provider: string): boolean;
  /** Whether the provider's key (when it needs one) and base URL are available. */
  hasCredentials(provider: string): boolean;
  /** Context window of a spec (spec/core.md §10.4). */
  contextWindow(spec: string, options?: ResolveOptions): number;
  /** Price of a spec: `pricing.<spec>` over the shipped table (spec/core.md §17.2). */
  priceFor(spec: string): ModelPrice | null;
  /** The AI SDK package serving a provider; null for registered adapters. */
  providerPackage(provider: string): ProviderPackage | null;
  /** Provider options for a reasoning effort on a route (spec/core.md §10.5). */
  providerOptionsFor(
    route: Pick<ModelRoute, 'provider'>,
    reasoningEffort: ReasoningEffort | null | undefined,
  ): SharedV3ProviderOptions | undefined;
}

interface ProviderEntry {
  id: string;
  adapter: ProviderAdapter;
  builtin: BuiltinProviderDescriptor | null;
  /** `providers.<id>` from the configuration, for any kind of provider. */
  settings: ProviderConfig | null;
  kind: 'builtin' | 'named' | 'registered';
  providerPackage: ProviderPackage | null;
}

interface KeyResolution {
  key: string | null;
  /** The variable a user should set when the key is missing. */
  variable: string | null;
}

function isBuiltinId(id: string): id is BuiltinProviderId {
  return (BUILTIN_PROVIDER_IDS as readonly string[]).includes(id);
}

function nonEmpty(value: string | undefined | null): string | null {
  return value !== undefined && value !== null && value.trim() !== '' ? value : null;
}

/** Variable name a registered adapter's key is read from when the configuration names none. */
function defaultKeyVariable(id: string): string {
  return `${id.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}_API_KEY`;
}

/**
 * Builds the provider catalog of a configuration (spec/core.md §10.3): the built-in providers, the
 * named OpenAI-compatible endpoints of `providers:`, and the extra adapters, which replace a
 * built-in or named provider of the same id.
 */
export function createProviderCatalog(
  source: ProviderCatalogSource,
  options: ProviderCatalogOptions = {},
): ProviderCatalog {
  const { config, lookup } = source;
  const entries = new Map<string, ProviderEntry>();

  for (const id of BUILTIN_PROVIDER_IDS) {
    const builtin = BUILTIN_PROVIDERS[id];
    entries.set(id, {
      id,
      adapter: createSdkAdapter({
        id,
        providerPackage: builtin.package,
        requiresKey: builtin.requiresKey,
        strictAlternation: builtin.strictAlternation,
        local: builtin.local,
      }),
      builtin,
      settings: config.providers[id] ?? null,
      kind: 'builtin',
      providerPackage: builtin.package,
    });
  }
  for (const [id, settings] of Object.entries(config.providers)) {
    if (entries.has(id)) continue;
    entries.set(id, {
      id,
      adapter: createSdkAdapter({
        id,
        providerPackage: 'openai-compatible',
        requiresKey: settings.api_key_env !== undefined && settings.api_key === undefined,
        strictAlternation: settings.strict_alternation ?? false,
        local: false,
      }),
      builtin: null,
      settings,
      kind: 'named',
      providerPackage: 'openai-compatible',
    });
  }
  const registeredAliases: Record<string, string> = {};
  for (const adapter of options.providers ?? []) {
    const builtin = isBuiltinId(adapter.id) ? BUILTIN_PROVIDERS[adapter.id] : null;
    entries.set(adapter.id, {
      id: adapter.id,
      adapter,
      builtin,
      settings: config.providers[adapter.id] ?? null,
      kind: 'registered',
      providerPackage: null,
    });
    for (const alias of adapter.aliases ?? []) registeredAliases[alias.toLowerCase()] = adapter.id;
  }

  const nameIndex = providerNameIndex({ providers: entries.keys(), providerAliases: registeredAliases });
  const entryOf = (provider: string): ProviderEntry | undefined => entries.get(canonicalProvider(provider, nameIndex));
  const customBaseUrl = nonEmpty(config.model.base_url) !== null;

  const specContext = (
    currentProvider: string | null | undefined,
    defaultProvider: string | null,
  ): ModelSpecContext => ({
    aliases: config.model_aliases,
    nameIndex,
    currentProvider: currentProvider ?? null,
    defaultProvider,
    customBaseUrl,
  });

  // The default route (spec/core.md §10.2, environment and configuration parts). A bare
  // HERMES_MODEL with HERMES_BASE_URL set means `custom`, whatever model.provider says.
  let defaultCache: { spec: string | null; provider: string | null } | undefined;
  const computeDefault = (): { spec: string | null; provider: string | null } => {
    if (defaultCache !== undefined) return defaultCache;
    const configuredProvider = nonEmpty(config.model.provider);
    const fallbackProvider =
      configuredProvider === null
        ? customBaseUrl
          ? 'custom'
          : null
        : canonicalProvider(configuredProvider, nameIndex);
    const written = nonEmpty(config.model.default)?.trim() ?? null;
    if (written === null) {
      defaultCache = { spec: null, provider: fallbackProvider };
      return defaultCache;
    }
    const fromEnvironment = nonEmpty(lookup('HERMES_MODEL'))?.trim();
    const environmentCustom = fromEnvironment === written && nonEmpty(lookup('HERMES_BASE_URL')) !== null;
    const bareProvider = environmentCustom ? 'custom' : fallbackProvider;
    try {
      const parsed = parseModelSpec(written, specContext(bareProvider, null));
      defaultCache = { spec: parsed.spec, provider: parsed.provider };
    } catch {
      // Left as written so that resolving it reports what is wrong.
      defaultCache = { spec: written, provider: fallbackProvider };
    }
    return defaultCache;
  };

  const parse = (spec: string, resolveOptions?: ResolveOptions): ParsedModelSpec =>
    parseModelSpec(spec, specContext(resolveOptions?.currentProvider, computeDefault().provider));

  const tryCanonical = (spec: string): string | null => {
    try {
      return parse(spec).spec;
    } catch {
      return null;
    }
  };

  // Keys of `models:` and `pricing:` may be written with aliases or provider aliases.
  const canonicalKeyed = <T>(record: Readonly<Record<string, T>>): Map<string, T> => {
    const result = new Map<string, T>();
    for (const [key, value] of Object.entries(record)) {
      const canonical = tryCanonical(key);
      if (canonical !== null && !result.has(canonical)) result.set(canonical, value);
    }
    // An exact key wins over one that only normalizes to the same spec.
    for (const [key, value] of Object.entries(record)) result.set(key, value);
    return result;
  };
  let modelSettingsCache: Map<string, HermesConfig['models'][string]> | undefined;
  let pricingCache: Record<string, PricingConfig> | undefined;

  const baseUrlOf = (entry: ProviderEntry): string | null => {
    const settings = entry.settings;
    if (entry.builtin?.id === 'custom') {
      const value = nonEmpty(config.model.base_url) ?? nonEmpty(settings?.base_url);
      if (value === null) {
        throw new HermesError(
          'missing_credentials',
          `Provider 'custom' needs a base URL: set HERMES_BASE_URL (or model.base_url in config.yaml)`,
          { details: { provider: entry.id, envVar: 'HERMES_BASE_URL', setting: 'model.base_url' } },
        );
      }
      const sourceName = nonEmpty(lookup('HERMES_BASE_URL')) === value ? 'HERMES_BASE_URL' : 'model.base_url';
      return normalizeBaseUrl(value, sourceName);
    }
    if (entry.builtin !== null) {
      const variable = entry.builtin.baseUrlVariable;
      const fromEnvironment = variable === null ? null : nonEmpty(lookup(variable));
      if (fromEnvironment !== null) return normalizeBaseUrl(fromEnvironment, variable ?? entry.id);
      const configured = nonEmpty(settings?.base_url);
      if (configured !== null) return normalizeBaseUrl(configured, `providers.${entry.id}.base_url`);
      return entry.builtin.defaultBaseUrl;
    }
    const configured = nonEmpty(settings?.base_url);
    if (configured !== null) return normalizeBaseUrl(configured, `providers.${entry.id}.base_url`);
    if (entry.kind === 'named') {
      throw new HermesError(
        'missing_credentials',
        `Provider '${entry.id}' needs providers.${entry.id}.base_url in config.yaml`,
        {
          details: { provider: entry.id, setting: `providers.${entry.id}.base_url` },
        },
      );
    }
    return null;
  };

  // Keys are scoped (spec/core.md §10.3): each provider reads only its own variable, then its own
  // configuration. `custom` in particular never sees another provider's key.
  const keyOf = (entry: ProviderEntry): KeyResolution => {
    const settings = entry.settings;
    const configuredVariable = nonEmpty(settings?.api_key_env);
    const fromConfiguredVariable = configuredVariable === null ? null : nonEmpty(lookup(configuredVariable));
    if (entry.builtin?.id === 'custom') {
      return {
        key: nonEmpty(lookup('HERMES_API_KEY')) ?? nonEmpty(config.model.api_key),
        variable: 'HERMES_API_KEY',
      };
    }
    if (entry.builtin !== null) {
      const variable = entry.builtin.keyVariable;
      const fromEnvironment = variable === null ? null : nonEmpty(lookup(variable));
      return {
        key: fromEnvironment ?? fromConfiguredVariable ?? nonEmpty(settings?.api_key),
        variable: variable ?? configuredVariable,
      };
    }
    if (entry.kind === 'named') {
      return { key: fromConfiguredVariable ?? nonEmpty(settings?.api_key), variable: configuredVariable };
    }
    const variable = configuredVariable ?? defaultKeyVariable(entry.id);
    return { key: nonEmpty(lookup(variable)) ?? nonEmpty(settings?.api_key), variable };
  };

  const requiresKey = (entry: ProviderEntry): boolean =>
    entry.adapter.requiresKey ?? entry.builtin?.requiresKey ?? false;

  const missingKeyError = (entry: ProviderEntry, variable: string | null): HermesError => {
    const where = source.homeDir === undefined ? 'HERMES_HOME/.env' : `${source.homeDir}/.env`;
    const what =
      variable === null
        ? `set providers.${entry.id}.api_key_env or providers.${entry.id}.api_key in config.yaml`
        : `set ${variable} in the environment or in ${where}`;
    return new HermesError('missing_credentials', `Provider '${entry.id}' needs an API key: ${what}`, {
      details: { provider: entry.id, envVar: variable },
    });
  };

  const requireEntry = (provider: string): ProviderEntry => {
    const entry = entryOf(provider);
    if (entry === undefined) {
      throw new HermesError(
        'unknown_provider',
        `Unknown provider '${provider}'. Known providers: ${[...entries.keys()].join(', ')}`,
        { details: { provider } },
      );
    }
    return entry;
  };

  const strictAlternationOf = (entry: ProviderEntry): boolean =>
    entry.settings?.strict_alternation ?? entry.adapter.strictAlternation ?? entry.builtin?.strictAlternation ?? false;

  const contextWindowOf = (parsed: ParsedModelSpec, written: string | null): number => {
    modelSettingsCache ??= canonicalKeyed(config.models);
    const perModel =
      (written === null ? undefined : modelSettingsCache.get(written.trim())?.context_length) ??
      modelSettingsCache.get(parsed.spec)?.context_length;
    if (perModel !== undefined) return perModel;
    const perProvider = entryOf(parsed.provider)?.settings?.context_length;
    if (perProvider !== undefined) return perProvider;
    if (config.model.context_length !== undefined && computeDefault().spec === parsed.spec) {
      return config.model.context_length;
    }
    return knownContextWindow(parsed.model) ?? DEFAULT_CONTEXT_WINDOW;
  };

  const resolve = (spec: string, resolveOptions?: ResolveOptions): ResolvedRoute => {
    const parsed = parse(spec, resolveOptions);
    const entry = requireEntry(parsed.provider);
    const baseUrl = baseUrlOf(entry);
    const { key, variable } = keyOf(entry);
    if (key === null && requiresKey(entry)) throw missingKeyError(entry, variable);
    const route = {
      spec: parsed.spec,
      provider: entry.id,
      model: parsed.model,
      baseUrl,
      strictAlternation: strictAlternationOf(entry),
      contextWindow: contextWindowOf(parsed, spec),
    } as ResolvedRoute;
    Object.defineProperty(route, 'apiKey', { value: key, enumerable: false, writable: false, configurable: true });
    return route;
  };

  const hasCredentials = (provider: string): boolean => {
    const entry = entryOf(provider);
    if (entry === undefined) return false;
    try {
      baseUrlOf(entry);
    } catch {
      return false;
    }
    return !requiresKey(entry) || keyOf(entry).key !== null;
  };

  const canResolve = (spec: string): boolean => {
    try {
      resolve(spec);
      return true;
    } catch {
      return false;
    }
  };

  return {
    resolve,
    parse,
    keyStatus(provider) {
      const entry = requireEntry(provider);
      const resolution = keyOf(entry);
      return { provider: entry.id, variable: resolution.variable, present: resolution.key !== null };
    },
    defaultSpec: () => computeDefault().spec,
    defaultProvider: () => computeDefault().provider,

    createModel(route, fetch) {
      const entry = requireEntry(route.provider);
      // A route that lost its non-enumerable key in a copy gets it again from the same scoped lookup.
      const apiKey = Object.hasOwn(route, 'apiKey') ? route.apiKey : keyOf(entry).key;
      const complete: ResolvedRoute = { ...route, apiKey };
      return entry.adapter.create(complete, fetch ?? options.fetch);
    },

    adapter: (id) => entryOf(id)?.adapter,
    providerIds: () => [...entries.keys()],

    listModels() {
      const result = new Map<string, ModelOption>();
      const add = (spec: string) => {
        let parsed: ParsedModelSpec;
        try {
          parsed = parse(spec);
        } catch {
          return;
        }
        if (result.has(parsed.spec)) return;
        result.set(parsed.spec, {
          spec: parsed.spec,
          provider: parsed.provider,
          model: parsed.model,
          contextWindow: contextWindowOf(parsed, spec),
          configured: canResolve(parsed.spec),
        });
      };
      const defaultSpec = computeDefault().spec;
      if (defaultSpec !== null) add(defaultSpec);
      for (const spec of config.fallback_models) add(spec);
      for (const [id, settings] of Object.entries(config.providers)) {
        for (const model of settings.models) add(`${id}:${model}`);
      }
      for (const known of KNOWN_MODELS) {
        const entry = entries.get(known.provider);
        if (entry !== undefined && requiresKey(entry) && hasCredentials(known.provider)) {
          add(`${known.provider}:${known.model}`);
        }
      }
      return [...result.values()];
    },

    customProviders() {
      const result: string[] = [];
      if (customBaseUrl || nonEmpty(config.providers.custom?.base_url) !== null) result.push('custom');
      for (const entry of entries.values()) if (entry.kind === 'named') result.push(entry.id);
      return result;
    },

    async remoteModels(provider, remoteOptions = {}) {
      const entry = requireEntry(provider);
      const baseUrl = baseUrlOf(entry);
      if (baseUrl === null)
        throw new HermesError('provider_error', `model listing failed: provider '${entry.id}' has no base URL`);
      return fetchRemoteModelIds(baseUrl, {
        fetch: options.fetch ?? globalThis.fetch,
        apiKey: keyOf(entry).key,
        signal: remoteOptions.signal,
        timeoutMs: remoteOptions.timeoutMs,
      });
    },

    isLocal(provider) {
      const entry = entryOf(provider);
      return entry?.adapter.local ?? entry?.builtin?.local ?? false;
    },
    strictAlternation(provider) {
      const entry = entryOf(provider);
      return entry === undefined ? false : strictAlternationOf(entry);
    },
    hasCredentials,

    contextWindow(spec, resolveOptions) {
      return contextWindowOf(parse(spec, resolveOptions), spec);
    },

    priceFor(spec) {
      if (pricingCache === undefined) pricingCache = Object.fromEntries(canonicalKeyed(config.pricing));
      const canonical = tryCanonical(spec) ?? spec;
      return priceFor(canonical, pricingCache);
    },

    providerPackage: (provider) => entryOf(provider)?.providerPackage ?? null,

    providerOptionsFor(route, reasoningEffort) {
      return providerOptionsFor(route, reasoningEffort, entryOf(route.provider)?.providerPackage ?? null);
    },
  };
}

/** The public part of a route, without its key: what events, rows and results may carry. */
export function publicRoute(route: ModelRoute): ModelRoute {
  return { spec: route.spec, provider: route.provider, model: route.model, baseUrl: route.baseUrl };
}
