import { isSecretVariableName } from '../config/environment.js';

/** Provider variables of spec/core.md §4.4 that never reach subprocesses. */
const PROVIDER_VARIABLES = new Set([
  'HERMES_API_KEY',
  'HERMES_BASE_URL',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'OPENROUTER_API_KEY',
  'OLLAMA_BASE_URL',
  'VLLM_BASE_URL',
  'VLLM_API_KEY',
  'LLAMACPP_BASE_URL',
  'LMSTUDIO_BASE_URL',
]);

/**
 * The environment for `terminal` and `process` subprocesses (spec/core.md §20): `env` minus
 * variables whose names end in `_API_KEY`, `_TOKEN`, `_SECRET` or `_PASSWORD`, the provider
 * variables of §4.4 (`ANTHROPIC_*` included) and undefined values, except the names in
 * `passthrough` (`terminal.env_passthrough`).
 */
export function filterSubprocessEnv(
  env: Readonly<Record<string, string | undefined>>,
  passthrough: readonly string[] = [],
): Record<string, string> {
  const allowed = new Set(passthrough);
  const filtered: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const secret = isSecretVariableName(name) || PROVIDER_VARIABLES.has(name) || name.startsWith('ANTHROPIC_');
    if (secret && !allowed.has(name)) continue;
    filtered[name] = value;
  }
  return filtered;
}
