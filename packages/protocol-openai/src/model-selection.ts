import { type AgentHost, HermesError } from '@hermes/core';
import { ApiError } from './http-error.js';
import type { ApiServerSettings } from './settings.js';

/** Where the model of a turn came from (spec §12). */
export interface ModelSelection {
  /** Model spec for `runTurn`, or undefined for the session's or host's default. */
  spec: string | undefined;
  routeSource: 'model_route' | 'raw_request' | 'default';
  requested: { model: string | null; provider: string | null };
}

function providerExists(host: AgentHost, provider: string): boolean {
  // The core reads an unknown `prefix:` as part of a model name on the default provider, so a known provider is
  // one whose prefix survives resolution.
  try {
    return host.resolveModel(`${provider}:probe`).model === 'probe';
  } catch (error) {
    return !(HermesError.isInstance(error) && error.code === 'unknown_provider');
  }
}

/**
 * Applies the precedence of section 12 to `model` and `provider`. `honourBareModel` is false on the
 * OpenAI-compatible endpoints unless `direct_model_requests` is on.
 */
export function selectModel(
  host: AgentHost,
  settings: ApiServerSettings,
  body: Record<string, unknown>,
  honourBareModel: boolean,
): ModelSelection {
  const model = typeof body.model === 'string' && body.model !== '' ? body.model : null;
  const provider = typeof body.provider === 'string' && body.provider !== '' ? body.provider : null;
  const requested = { model, provider };
  if (provider !== null && !providerExists(host, provider))
    throw new ApiError(400, 'unknown_provider', `Unknown provider: ${provider}`, { param: 'provider' });
  if (model === null || model === settings.modelName) return { spec: undefined, routeSource: 'default', requested };
  const alias = settings.modelRoutes[model];
  if (alias) {
    if (provider !== null && alias.provider !== undefined && alias.provider !== provider)
      throw new ApiError(400, 'model_route_conflict', `Provider ${provider} contradicts the route ${model}.`, {
        param: 'provider',
      });
    const spec = alias.provider ? `${alias.provider}:${alias.model}` : alias.model;
    return { spec, routeSource: 'model_route', requested };
  }
  if (provider !== null) return { spec: `${provider}:${model}`, routeSource: 'raw_request', requested };
  if (honourBareModel) return { spec: model, routeSource: 'raw_request', requested };
  return { spec: undefined, routeSource: 'default', requested };
}
