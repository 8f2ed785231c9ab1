import { isSecretVariableName, SECRET_VARIABLES, secretValues } from '../config/environment.js';
import type { HermesConfig } from '../config/schema.js';
import type { NamedSecret } from './secret-redactor.js';

/**
 * Variables that hold the secrets of the server itself (its API key, the gateway token, the database
 * URL with its password). They never reach a subprocess, whatever `terminal.env` says.
 */
export const SERVER_SECRET_VARIABLES: readonly string[] = [
  'API_SERVER_KEY',
  'HERMES_GATEWAY_TOKEN',
  'HERMES_DATABASE_URL',
  'DATABASE_URL',
];

/** Names shaped like a secret: `…KEY`, `…TOKEN`, `…SECRET`, `…PASSWORD`, `…PASSWD`, `…CREDENTIAL(S)`. */
const SECRET_SHAPE = /(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?)$/i;

/** True for a variable whose value the host treats as secret (for redaction and for subprocess environments). */
export function isHostSecretName(name: string): boolean {
  return SERVER_SECRET_VARIABLES.includes(name) || isSecretVariableName(name) || SECRET_SHAPE.test(name);
}

/**
 * The password of a URL with credentials (`postgres://user:password@host/db`), or null. A password
 * equal to the user name is not treated as a secret (a throw-away `postgres:postgres`).
 */
export function urlPassword(value: string): string | null {
  const match = /^[a-z][a-z0-9+.-]*:\/\/([^:/?#@\s]*):([^@/?#\s]+)@/i.exec(value.trim());
  if (!match) return null;
  const [, user = '', password = ''] = match;
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // Keep it as written.
  }
  return decoded === '' || decoded === user ? null : decoded;
}

/** What {@link collectHostSecrets} reads: the loaded configuration of a host. */
export interface SecretSources {
  config: HermesConfig;
  env: Readonly<Record<string, string | undefined>>;
  dotenv: Readonly<Record<string, string>>;
  lookup: (name: string) => string | undefined;
}

/** A secret the host knows; `server` marks the host's own credentials, which never reach a subprocess. */
export interface HostSecret extends NamedSecret {
  /**
   * The server's key, gateway token, database URL, a provider key or a key from config.yaml: never
   * passed to a subprocess, even when `terminal.env_passthrough` names its variable. Other
   * secret-shaped variables (a `NPM_TOKEN` the user passes through on purpose) are only redacted.
   */
  server: boolean;
}

/**
 * Every secret the host knows, by name: secret-shaped variables of the environment and of `.env`
 * (the server's key, the gateway token, provider keys), the database URL and its password, keys
 * written in config.yaml, and `extra` (secrets the embedding application passes, such as a key it
 * generated). Used to redact tool output and to keep values out of subprocess environments.
 */
export function collectHostSecrets(sources: SecretSources, extra: Readonly<Record<string, string>> = {}): HostSecret[] {
  const secrets: HostSecret[] = [];
  const add = (name: string, value: string | undefined, server: boolean) => {
    if (value === undefined || value.trim() === '') return;
    secrets.push({ name, value, server });
    const trimmed = value.trim();
    if (trimmed !== value) secrets.push({ name, value: trimmed, server });
    const password = urlPassword(trimmed);
    if (password !== null) secrets.push({ name: `${name}:password`, value: password, server });
  };
  const serverVariables = new Set([...SERVER_SECRET_VARIABLES, ...SECRET_VARIABLES]);
  for (const source of [sources.env, sources.dotenv]) {
    for (const [name, value] of Object.entries(source)) {
      if (isHostSecretName(name)) add(name, value, serverVariables.has(name));
      // A URL with a password in any variable (a second database, a proxy) gives its password away too.
      else if (value !== undefined && urlPassword(value) !== null) add(name, value, false);
    }
  }
  add('database.url', sources.config.database.url, true);
  add('model.api_key', sources.config.model.api_key, true);
  for (const [id, provider] of Object.entries(sources.config.providers)) {
    add(`providers.${id}.api_key`, provider.api_key, true);
    if (provider.api_key_env !== undefined) add(provider.api_key_env, sources.lookup(provider.api_key_env), true);
  }
  for (const [name, value] of Object.entries(extra)) add(name, value, true);
  // Whatever the logger already redacts (MCP server keys and headers) is redacted here too.
  const named = new Set(secrets.map((secret) => secret.value));
  for (const value of secretValues(sources)) if (!named.has(value)) add('secret', value, false);
  return secrets;
}
