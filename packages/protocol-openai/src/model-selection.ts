import { type AgentHost, HermesError } from '@hermes/core';
import { ApiError } from './http-error.js';
import type { ApiServerSettings } from './settings.js';

/** Where the model of a turn came from (spec §12). */
export interface ModelSelection {
  /** Model spec for `runTurn`, or undefined for the session's or host's default. */
  spec: string | undefined;
  routeSource: 'model_route' | 'raw_request' | 'default';
  requested: { model: string | null; provider: string | null };
  /**
   * The `model` an OpenAI-shaped answer shows: the advertised name for the default, else the id of the model that
   * runs (ADR 0010), so an answer never names a model that did not run.
   */
  display: string;
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

/** True when a bare model name is one this host knows: a listed model or the default's model (ADR 0010). */
function knownBareModel(host: AgentHost, model: string): boolean {
  if (host.listModels().some((option) => option.model === model || option.spec === model)) return true;
  const separator = model.indexOf(':');
  // `provider:model` names its provider explicitly; the provider is checked when the spec is resolved.
  return separator > 0 && providerExists(host, model.slice(0, separator));
}

function modelNotFound(model: string, settings: ApiServerSettings): ApiError {
  return new ApiError(
    404,
    'model_not_found',
    `The model '${model}' is not available on this server. Use '${settings.modelName}' for the configured default, a name from GET /v1/models, a model of a configured provider, or 'provider:model'.`,
    { param: 'model' },
  );
}

/** Resolves a spec now, so a model that cannot run is refused before the turn starts, and returns its model id. */
function resolvable(host: AgentHost, spec: string, param: 'model' | 'provider'): string {
  try {
    return host.resolveModel(spec).model;
  } catch (error) {
    if (!HermesError.isInstance(error)) throw error;
    if (error.code === 'unknown_provider')
      throw new ApiError(400, 'unknown_provider', error.message, {
        param: param === 'provider' ? 'provider' : 'model',
      });
    throw new ApiError(400, 'model_unavailable', `The model '${spec}' cannot be used: ${error.message}`, {
      param,
    });
  }
}

/**
 * Applies the precedence of section 12 to `model` and `provider`. A bare `model` that is not the advertised name or a
 * route alias is honoured when the host knows it (or on `trustBareModel` surfaces: runs, session chat, and the
 * OpenAI-compatible endpoints with `direct_model_requests`), and refused with 404 `model_not_found` otherwise, rather
 * than silently answered by another model (issue 16.5, ADR 0010).
 */
export function selectModel(
  host: AgentHost,
  settings: ApiServerSettings,
  body: Record<string, unknown>,
  trustBareModel: boolean,
): ModelSelection {
  const model = typeof body.model === 'string' && body.model !== '' ? body.model : null;
  const provider = typeof body.provider === 'string' && body.provider !== '' ? body.provider : null;
  const requested = { model, provider };
  if (provider !== null && !providerExists(host, provider))
    throw new ApiError(400, 'unknown_provider', `Unknown provider: ${provider}`, { param: 'provider' });
  if (model === null || model === settings.modelName)
    return { spec: undefined, routeSource: 'default', requested, display: settings.modelName };
  const alias = settings.modelRoutes[model];
  if (alias) {
    if (provider !== null && alias.provider !== undefined && alias.provider !== provider)
      throw new ApiError(400, 'model_route_conflict', `Provider ${provider} contradicts the route ${model}.`, {
        param: 'provider',
      });
    const spec = alias.provider ? `${alias.provider}:${alias.model}` : alias.model;
    return { spec, routeSource: 'model_route', requested, display: resolvable(host, spec, 'model') };
  }
  if (provider !== null) {
    const spec = `${provider}:${model}`;
    return { spec, routeSource: 'raw_request', requested, display: resolvable(host, spec, 'provider') };
  }
  if (!trustBareModel && !knownBareModel(host, model)) throw modelNotFound(model, settings);
  return { spec: model, routeSource: 'raw_request', requested, display: resolvable(host, model, 'model') };
}
