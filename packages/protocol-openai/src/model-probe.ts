import type { AgentHost } from '@hermes/core';
import { redactSecrets } from '@hermes/core';

/** A saved custom provider's probed model list (spec §16). */
export interface ProbedProvider {
  id: string;
  models: string[];
  error: string | null;
}

const PROBE_TIMEOUT_MS = 10_000;

/** The saved custom providers: the named OpenAI-compatible endpoints of `providers:` in config.yaml. */
export function customProviders(host: AgentHost): { id: string; baseUrl: string; apiKey: string | null }[] {
  return Object.entries(host.config.providers).flatMap(([id, provider]) => {
    if (!provider.base_url) return [];
    const apiKey =
      (provider.api_key_env ? host.lookupEnv(provider.api_key_env) : undefined) ?? provider.api_key ?? null;
    return [{ id, baseUrl: provider.base_url.replace(/\/+$/, ''), apiKey }];
  });
}

/**
 * Probes custom providers' `GET /models` with a 10 s timeout each, caching the lists: without
 * `refresh` only the selected custom provider is probed (when it is one), with `refresh` the cache
 * is cleared and every saved one is. A failed probe becomes that row's redacted `error`.
 */
export class ModelProbe {
  private readonly cache = new Map<string, ProbedProvider>();

  constructor(
    private readonly host: AgentHost,
    private readonly fetcher: typeof globalThis.fetch = globalThis.fetch,
  ) {}

  async inventory(options: { refresh: boolean; selectedProvider: string }): Promise<ProbedProvider[]> {
    const providers = customProviders(this.host);
    if (options.refresh) this.cache.clear();
    const toProbe = providers.filter((provider) => options.refresh || provider.id === options.selectedProvider);
    await Promise.all(toProbe.map(async (provider) => this.cache.set(provider.id, await this.probe(provider))));
    return providers.map(
      (provider) =>
        this.cache.get(provider.id) ?? { id: provider.id, models: this.configuredModels(provider.id), error: null },
    );
  }

  private configuredModels(id: string): string[] {
    return [...(this.host.config.providers[id]?.models ?? [])];
  }

  private async probe(provider: { id: string; baseUrl: string; apiKey: string | null }): Promise<ProbedProvider> {
    try {
      const response = await this.fetcher(`${provider.baseUrl}/models`, {
        headers: provider.apiKey ? { authorization: `Bearer ${provider.apiKey}` } : {},
        signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`GET /models answered ${response.status}`);
      const body = (await response.json()) as { data?: { id?: unknown }[] };
      const models = (body.data ?? []).map((entry) => entry.id).filter((id): id is string => typeof id === 'string');
      return { id: provider.id, models: models.length > 0 ? models : this.configuredModels(provider.id), error: null };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return {
        id: provider.id,
        models: this.configuredModels(provider.id),
        error: redactSecrets(message, provider.apiKey ? [provider.apiKey] : []),
      };
    }
  }
}
