import { HermesError } from '../errors.js';

/** Ids of the built-in providers (spec/core.md §10.3). */
export const BUILTIN_PROVIDER_IDS = [
  'openai',
  'anthropic',
  'openrouter',
  'ollama',
  'vllm',
  'llamacpp',
  'lmstudio',
  'custom',
] as const;
/** A built-in provider id. */
export type BuiltinProviderId = (typeof BUILTIN_PROVIDER_IDS)[number];

/** Provider aliases of spec/core.md §10.1, keyed in lower case. */
export const PROVIDER_ALIASES: Readonly<Record<string, string>> = {
  'lm-studio': 'lmstudio',
  'llama.cpp': 'llamacpp',
  'llama-cpp': 'llamacpp',
  'openai-compatible': 'custom',
};

/** What a model spec is parsed against. */
export interface ModelSpecContext {
  /** `model_aliases`: whole specs replaced before parsing. */
  aliases?: Readonly<Record<string, string>> | undefined;
  /** Every known provider id: built-ins, registered adapters and named endpoints. Default: the built-ins. */
  providers?: Iterable<string> | undefined;
  /** More provider aliases (from registered adapters), alias → id. Matched case-insensitively. */
  providerAliases?: Readonly<Record<string, string>> | undefined;
  /** The session's provider, for a bare model id. */
  currentProvider?: string | null | undefined;
  /** The default route's provider, used when there is no current provider. */
  defaultProvider?: string | null | undefined;
  /** A custom base URL is configured (HERMES_BASE_URL): a bare id with no provider means `custom`. */
  customBaseUrl?: boolean | undefined;
  /**
   * `providerNameIndex` of `providers` and `providerAliases`, built once by a caller that parses often (the
   * catalog, on every route resolution); when set, those two are not read.
   */
  nameIndex?: ReadonlyMap<string, string> | undefined;
}

/** A parsed model spec. */
export interface ParsedModelSpec {
  /** Canonical form, `provider:model`. */
  spec: string;
  provider: string;
  model: string;
  /** The provider was written in the spec (or its alias), not taken from the context. */
  explicitProvider: boolean;
}

/** Builds the case-insensitive map of provider names (ids and aliases) to canonical ids. */
export function providerNameIndex(
  context: Pick<ModelSpecContext, 'providers' | 'providerAliases'>,
): Map<string, string> {
  const index = new Map<string, string>();
  for (const id of context.providers ?? BUILTIN_PROVIDER_IDS) index.set(id.toLowerCase(), id);
  const aliases = { ...PROVIDER_ALIASES, ...context.providerAliases };
  for (const [alias, id] of Object.entries(aliases)) {
    // An alias never hides a provider that has that id itself.
    if (!index.has(alias.toLowerCase())) index.set(alias.toLowerCase(), index.get(id.toLowerCase()) ?? id);
  }
  return index;
}

/** The canonical id of a provider name or alias, or the name unchanged when it is not known. */
export function canonicalProvider(name: string, index: ReadonlyMap<string, string>): string {
  return index.get(name.trim().toLowerCase()) ?? name.trim();
}

function expandAlias(spec: string, aliases: Readonly<Record<string, string>> | undefined): string {
  if (aliases === undefined) return spec;
  let current = spec;
  const seen = new Set<string>();
  // Aliases may point at aliases; a cycle stops at the first repeat instead of looping.
  while (Object.hasOwn(aliases, current) && !seen.has(current)) {
    seen.add(current);
    current = (aliases[current] ?? current).trim();
  }
  return current;
}

/**
 * Parses a model spec (spec/core.md §10.1). Aliases from `model_aliases` are replaced first. The
 * string is split at its first colon only when the part before it is a known provider id, a
 * provider alias (case-insensitive) or a named endpoint; otherwise the whole string is a bare model
 * id for the current provider, else the default one, else `custom` when a custom base URL is set.
 * Throws `invalid_model_spec` for an empty spec or a bare one with no provider to attach it to.
 */
export function parseModelSpec(spec: string, context: ModelSpecContext = {}): ParsedModelSpec {
  const written = spec.trim();
  if (written === '') throw new HermesError('invalid_model_spec', 'The model spec is empty');
  const expanded = expandAlias(written, context.aliases);
  if (expanded === '') throw new HermesError('invalid_model_spec', `The alias '${written}' names an empty model spec`);
  const index = context.nameIndex ?? providerNameIndex(context);

  const colon = expanded.indexOf(':');
  if (colon > 0) {
    const provider = index.get(expanded.slice(0, colon).trim().toLowerCase());
    if (provider !== undefined) {
      const model = expanded.slice(colon + 1).trim();
      if (model === '') {
        throw new HermesError(
          'invalid_model_spec',
          `The model spec '${written}' names provider '${provider}' but no model`,
        );
      }
      return { spec: `${provider}:${model}`, provider, model, explicitProvider: true };
    }
  }

  const fallbackProvider =
    context.currentProvider || context.defaultProvider || (context.customBaseUrl === true ? 'custom' : null);
  if (!fallbackProvider) {
    throw new HermesError(
      'invalid_model_spec',
      `The model spec '${written}' has no provider: write it as provider:model or configure model.provider`,
    );
  }
  const provider = canonicalProvider(fallbackProvider, index);
  return { spec: `${provider}:${expanded}`, provider, model: expanded, explicitProvider: false };
}
