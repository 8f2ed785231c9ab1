import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext, stringParam } from './context.js';

/** The provider row of `model.options` after its key was saved (the key is present now). */
function providerEntry(context: MethodContext, slug: string, keyEnv: string) {
  const models = context.gateway.host
    .listModels()
    .filter((option) => option.provider === slug)
    .map((option) => option.model);
  return {
    slug,
    name: slug,
    models,
    total_models: models.length,
    authenticated: true,
    auth_type: 'api_key',
    key_env: keyEnv,
  };
}

/** `model.save_key`: stores an API key for a provider in HERMES_HOME/.env; usable at once. */
export async function modelSaveKey(context: MethodContext): Promise<Record<string, unknown>> {
  const slug = stringParam(context.params, 'slug')?.trim();
  const apiKey = stringParam(context.params, 'api_key')?.trim();
  if (!slug) fail(ErrorCode.invalidValue, 'slug is required');
  if (!apiKey) fail(ErrorCode.invalidValue, 'api_key is required');
  let saved: { provider: string; variable: string };
  try {
    saved = await context.gateway.host.saveProviderKey(slug, apiKey);
  } catch (error) {
    fail(ErrorCode.invalidValue, `key not saved: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { saved: true, key_env: saved.variable, provider: providerEntry(context, saved.provider, saved.variable) };
}

/**
 * `model.disconnect`: blanks a provider's key in HERMES_HOME/.env. `disconnected` is false, with
 * the reason, when the key also comes from the process environment or config.yaml.
 */
export async function modelDisconnect(context: MethodContext): Promise<Record<string, unknown>> {
  const slug = stringParam(context.params, 'slug')?.trim();
  if (!slug) fail(ErrorCode.invalidValue, 'slug is required');
  let status: { provider: string; variable: string | null; present: boolean };
  try {
    status = await context.gateway.host.removeProviderKey(slug);
  } catch (error) {
    fail(ErrorCode.invalidValue, `cannot disconnect: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (status.present)
    return {
      disconnected: false,
      provider: status.provider,
      reason: `the key is still set outside HERMES_HOME/.env${status.variable ? ` (${status.variable} in the environment or config.yaml)` : ''}`,
    };
  return { disconnected: true, provider: status.provider, key_env: status.variable };
}
