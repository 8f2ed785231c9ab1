import type { GatewayState } from '../gateway-state.js';
import { booleanParam, type MethodContext, stringParam } from './context.js';

/** One probe's outcome: the ids the endpoint listed, or why it could not be asked. */
type Probe = { models: string[] } | { warning: string };

/**
 * Model lists fetched from custom providers, per gateway process. A normal `model.options` reuses
 * them; `refresh:true` replaces them (§4.9).
 */
const probeCaches = new WeakMap<GatewayState, Map<string, Probe>>();

function probeCache(gateway: GatewayState): Map<string, Probe> {
  let cache = probeCaches.get(gateway);
  if (!cache) {
    cache = new Map();
    probeCaches.set(gateway, cache);
  }
  return cache;
}

async function probe(gateway: GatewayState, provider: string): Promise<Probe> {
  try {
    return { models: await gateway.host.remoteModels(provider) };
  } catch (error) {
    return { warning: error instanceof Error ? error.message : String(error) };
  }
}

interface ProviderEntry {
  slug: string;
  name: string;
  models: string[];
  total_models: number;
  is_current: boolean;
  authenticated: boolean;
  warning?: string;
}

/**
 * `model.options` (§4.9). Opening the picker asks only the current provider's endpoint, and only when
 * it is a custom one (the user's own OpenAI-compatible server) not asked before: one picker open
 * never waits on every saved endpoint. `refresh:true` forgets what was fetched and asks every saved
 * custom provider again, in parallel; one that cannot be reached keeps `models:[]` and a `warning`.
 */
export async function modelOptions(context: MethodContext): Promise<Record<string, unknown>> {
  const { gateway, params } = context;
  const host = gateway.host;
  const includeUnconfigured = booleanParam(params, 'include_unconfigured') ?? false;
  const explicitOnly = booleanParam(params, 'explicit_only') ?? false;
  const refresh = booleanParam(params, 'refresh') ?? false;

  const id = stringParam(params, 'session_id');
  const session = id ? gateway.sessions.get(id) : undefined;
  const info = session && !session.finalized ? gateway.info(session) : null;
  const defaultSpec = host.config.model.default ?? host.lookupEnv('HERMES_MODEL') ?? '';
  const model = info?.model ?? defaultSpec.split(':').slice(1).join(':');
  const provider = info?.provider ?? defaultSpec.split(':')[0] ?? '';

  const byProvider = new Map<string, ProviderEntry>();
  const entryOf = (slug: string, authenticated: boolean): ProviderEntry => {
    let entry = byProvider.get(slug);
    if (!entry) {
      entry = { slug, name: slug, models: [], total_models: 0, is_current: slug === provider, authenticated };
      byProvider.set(slug, entry);
    }
    return entry;
  };
  for (const option of host.listModels()) {
    if (!option.configured && !includeUnconfigured) continue;
    const entry = entryOf(option.provider, option.configured);
    if (!entry.models.includes(option.model)) entry.models.push(option.model);
  }

  if (!explicitOnly) {
    const cache = probeCache(gateway);
    if (refresh) cache.clear();
    const custom = host.customProviders();
    const toProbe = refresh ? custom : custom.filter((slug) => slug === provider && !cache.has(slug));
    const results = await Promise.all(toProbe.map(async (slug) => [slug, await probe(gateway, slug)] as const));
    for (const [slug, result] of results) cache.set(slug, result);
    for (const slug of custom) {
      const result = cache.get(slug);
      if (!result) continue;
      const entry = entryOf(slug, true);
      if ('warning' in result) {
        entry.models = [];
        entry.warning = result.warning;
      } else {
        for (const listed of result.models) if (!entry.models.includes(listed)) entry.models.push(listed);
      }
    }
  }

  const providers = [...byProvider.values()].map((entry) => ({ ...entry, total_models: entry.models.length }));
  return { providers, model, provider };
}
