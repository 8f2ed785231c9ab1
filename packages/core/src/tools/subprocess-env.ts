import { isSecretVariableName } from '../config/environment.js';
import { isHostSecretName, SERVER_SECRET_VARIABLES } from '../security/host-secrets.js';

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
 * The environment for `terminal` and `process` subprocesses in the former denylist form: `env`
 * minus variables whose names end in `_API_KEY`, `_TOKEN`, `_SECRET` or `_PASSWORD`, the provider
 * variables of §4.4 (`ANTHROPIC_*` included) and undefined values, except the names in
 * `passthrough`. The host now builds the environment with {@link buildSubprocessEnv} (an
 * allowlist); this stays for embedders that relied on it.
 */
export function filterSubprocessEnv(
  env: Readonly<Record<string, string | undefined>>,
  passthrough: readonly string[] = [],
): Record<string, string> {
  const allowed = new Set(passthrough);
  const filtered: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (isDeniedByShape(name) && !allowed.has(name)) continue;
    filtered[name] = value;
  }
  return filtered;
}

function isDeniedByShape(name: string): boolean {
  return isSecretVariableName(name) || PROVIDER_VARIABLES.has(name) || name.startsWith('ANTHROPIC_');
}

/** How the subprocess environment starts (`terminal.env`). */
export type SubprocessEnvMode = 'core' | 'all' | 'none';

/**
 * The variables of the `core` environment: what a shell and everyday tools need to find programs,
 * the home directory, the locale and the terminal type, and nothing that could carry a credential.
 */
export const CORE_ENV_PATTERNS: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'USERNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'LC_*',
  'TERM',
  'COLORTERM',
  'TZ',
  'TMPDIR',
  'TEMP',
  'TMP',
];

/** The policy of {@link buildSubprocessEnv} (`terminal.env`, `env_include`, `env_exclude`, `env_passthrough`). */
export interface SubprocessEnvPolicy {
  mode: SubprocessEnvMode;
  /** Name patterns (`*` and `?` wildcards, case-insensitive) added to the mode's set. */
  include?: readonly string[];
  /** Name patterns removed from the result (after `include` and `passthrough`). */
  exclude?: readonly string[];
  /** Exact names passed through as they are, secret-shaped ones included (`terminal.env_passthrough`). */
  passthrough?: readonly string[];
  /**
   * Values the host knows are secret (its API key, gateway token, provider keys, database URL): a
   * variable holding one of them is never passed, under any name and whatever the lists say.
   */
  secretValues?: Iterable<string>;
}

/** A case-insensitive matcher for a name pattern with `*` and `?` wildcards. */
export function nameMatcher(pattern: string): (name: string) => boolean {
  const source = pattern
    .split('')
    .map((character) => {
      if (character === '*') return '.*';
      if (character === '?') return '.';
      return character.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
    })
    .join('');
  const expression = new RegExp(`^${source}$`, 'i');
  return (name) => expression.test(name);
}

function anyMatcher(patterns: readonly string[]): (name: string) => boolean {
  const matchers = patterns.map(nameMatcher);
  return (name) => matchers.some((matches) => matches(name));
}

/**
 * The environment of commands the model runs (spec/core.md §20, issue 32): built from an allowlist.
 * `core` starts from {@link CORE_ENV_PATTERNS}, `all` from everything except secret-shaped names and
 * provider variables, `none` from nothing; `include` patterns and `passthrough` names add to that,
 * `exclude` patterns remove. Whatever the policy, the server's own secrets
 * ({@link SERVER_SECRET_VARIABLES}) and every variable whose value is one of `secretValues` are left
 * out, and so are `include` matches with a secret-shaped name (only an exact `passthrough` name lets
 * such a variable through).
 */
export function buildSubprocessEnv(
  env: Readonly<Record<string, string | undefined>>,
  policy: SubprocessEnvPolicy,
): Record<string, string> {
  const core = anyMatcher(CORE_ENV_PATTERNS);
  const included = anyMatcher(policy.include ?? []);
  const excluded = anyMatcher(policy.exclude ?? []);
  const passthrough = new Set(policy.passthrough ?? []);
  const secrets = new Set([...(policy.secretValues ?? [])].filter((value) => value.trim() !== ''));
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (SERVER_SECRET_VARIABLES.includes(name) || secrets.has(value) || secrets.has(value.trim())) continue;
    const secretShaped = isHostSecretName(name) || isDeniedByShape(name);
    let keep: boolean;
    if (passthrough.has(name)) keep = true;
    else if (secretShaped) keep = false;
    else if (policy.mode === 'all') keep = true;
    else if (policy.mode === 'core') keep = core(name) || included(name);
    else keep = included(name);
    if (keep && excluded(name)) keep = false;
    if (keep) result[name] = value;
  }
  return result;
}
