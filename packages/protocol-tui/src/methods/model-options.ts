import { buildModelOptions } from '@hermes/core';
import { booleanParam, type MethodContext, stringParam } from './context.js';

/**
 * `model.options` (§4.9): the core's model inventory (the one `GET /api/model/options` answers, with
 * its probe policy and cache), in the gateway's shape: `slug`, model ids as strings, `authenticated`,
 * and `warning` for a listing that failed. `model` and `provider` are the session's when `session_id`
 * names a live one.
 */
export async function modelOptions(context: MethodContext): Promise<Record<string, unknown>> {
  const { gateway, params } = context;
  const id = stringParam(params, 'session_id');
  const session = id ? gateway.sessions.get(id) : undefined;
  const info = session && !session.finalized ? gateway.info(session) : null;
  const options = await buildModelOptions(gateway.host, {
    refresh: booleanParam(params, 'refresh') ?? false,
    includeUnconfigured: booleanParam(params, 'include_unconfigured') ?? false,
    explicitOnly: booleanParam(params, 'explicit_only') ?? false,
    ...(info ? { current: { model: info.model, provider: info.provider } } : {}),
  });
  const providers = options.providers.map((row) => ({
    slug: row.id,
    name: row.name,
    models: row.models.map((model) => model.id),
    total_models: row.models.length,
    is_current: row.is_current,
    authenticated: row.configured,
    ...(row.error !== null ? { warning: row.error } : {}),
  }));
  return { providers, model: options.model, provider: options.provider };
}
