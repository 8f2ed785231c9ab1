import type { AgentHost } from '../api/types.js';

/** One model of a {@link ModelOptionsProvider}. */
export interface ModelOptionsModel {
  id: string;
  name: string;
  /** Known for models of the local catalog; null for ids only a custom endpoint reported. */
  context_window: number | null;
  /** Not known to the core yet: always null. */
  pricing: null;
  /** Not known to the core yet: always null. */
  capabilities: null;
}

/** One provider row of {@link ModelOptions}. */
export interface ModelOptionsProvider {
  id: string;
  name: string;
  /** Its credentials are present (a custom provider's endpoint counts as configured). */
  configured: boolean;
  /** One of the user's own OpenAI-compatible endpoints (`custom` or a `providers:` entry with a base URL). */
  is_custom: boolean;
  /** The provider of the current model. */
  is_current: boolean;
  models: ModelOptionsModel[];
  /** Why the endpoint's model list could not be obtained; null when it could or was not asked. */
  error: string | null;
}

/** The provider and model inventory that `GET /api/model/options` and the gateway's `model.options` answer. */
export interface ModelOptions {
  model: string;
  provider: string;
  providers: ModelOptionsProvider[];
}

/** What a caller asks of {@link buildModelOptions}. */
export interface ModelOptionsRequest {
  /** Forget every fetched list and ask every saved custom provider again. */
  refresh?: boolean;
  /** Also list providers whose credentials are missing (`configured:false`). */
  includeUnconfigured?: boolean;
  /** Only the models the configuration lists: no custom endpoint is asked. */
  explicitOnly?: boolean;
  /** The current route (a live session's); defaults to the configured default model. */
  current?: { model: string; provider: string };
}

/** How long one endpoint's `GET /models` may take before its row reports an error. */
const PROBE_TIMEOUT_MS = 10_000;

type Probe = { models: string[] } | { error: string };

/**
 * Fetched model lists, per host, shared by every surface of the process, so that the HTTP API and the
 * gateway follow one probe policy and do not each ask the same endpoint.
 */
const probeCaches = new WeakMap<AgentHost, Map<string, Probe>>();

function probeCache(host: AgentHost): Map<string, Probe> {
  let cache = probeCaches.get(host);
  if (!cache) {
    cache = new Map();
    probeCaches.set(host, cache);
  }
  return cache;
}

async function probe(host: AgentHost, provider: string): Promise<Probe> {
  try {
    return { models: await host.remoteModels(provider, { timeoutMs: PROBE_TIMEOUT_MS }) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // The message names the endpoint's URL; credentials in its user-info part must not reach a client.
    return { error: message.replace(/\/\/[^/@\s]+@/g, '//***@') };
  }
}

/** The configured default route, split into provider and model without resolving anything. */
function defaultRoute(host: AgentHost): { model: string; provider: string } {
  const spec = host.config.model.default ?? host.lookupEnv('HERMES_MODEL') ?? '';
  const separator = spec.indexOf(':');
  if (separator >= 0) return { provider: spec.slice(0, separator), model: spec.slice(separator + 1) };
  return { provider: host.config.model.provider ?? '', model: spec };
}

/**
 * Builds the model inventory every surface shows (openai-api §16, tui-gateway §4.9). The probe policy:
 * without `refresh` only the current provider's endpoint is asked, and only when it is a custom one not
 * asked before, so opening a picker never waits on every saved endpoint; `refresh` forgets what was
 * fetched and asks every saved custom provider, in parallel, 10 s each. A listing that fails leaves
 * that row with no models and its `error`; it never fails the request.
 */
export async function buildModelOptions(host: AgentHost, request: ModelOptionsRequest = {}): Promise<ModelOptions> {
  const current = request.current ?? defaultRoute(host);
  const custom = host.customProviders();
  const rows = new Map<string, ModelOptionsProvider>();
  const rowOf = (id: string, configured: boolean): ModelOptionsProvider => {
    let row = rows.get(id);
    if (!row) {
      row = {
        id,
        name: id,
        configured,
        is_custom: custom.includes(id),
        is_current: id === current.provider,
        models: [],
        error: null,
      };
      rows.set(id, row);
    }
    return row;
  };
  const addModel = (row: ModelOptionsProvider, id: string, contextWindow: number | null) => {
    if (row.models.some((model) => model.id === id)) return;
    row.models.push({ id, name: id, context_window: contextWindow, pricing: null, capabilities: null });
  };
  for (const option of host.listModels()) {
    if (!option.configured && !request.includeUnconfigured) continue;
    addModel(rowOf(option.provider, option.configured), option.model, option.contextWindow);
  }

  if (!request.explicitOnly) {
    const cache = probeCache(host);
    if (request.refresh) cache.clear();
    const toProbe = request.refresh ? custom : custom.filter((slug) => slug === current.provider && !cache.has(slug));
    const results = await Promise.all(toProbe.map(async (slug) => [slug, await probe(host, slug)] as const));
    for (const [slug, result] of results) cache.set(slug, result);
    for (const slug of custom) {
      const result = cache.get(slug);
      if (!result) continue;
      const row = rowOf(slug, true);
      if ('error' in result) {
        row.models = [];
        row.error = result.error;
      } else {
        for (const listed of result.models) addModel(row, listed, null);
      }
    }
  }
  return { model: current.model, provider: current.provider, providers: [...rows.values()] };
}
