import { HermesError } from '../errors.js';
import type { HermesConfig } from './schema.js';

/** Reads a variable: the process environment (or the `env` option) first, then `.env`. */
export type VariableLookup = (name: string) => string | undefined;

/** Variables of spec/core.md §4.4 whose values are secrets. */
export const SECRET_VARIABLES: readonly string[] = [
  'HERMES_API_KEY',
  'OPENAI_API_KEY',
  'ANTHROPIC_API_KEY',
  'OPENROUTER_API_KEY',
  'VLLM_API_KEY',
];

const SECRET_NAME_SHAPE = /_(API_KEY|TOKEN|SECRET|PASSWORD)$/i;

/** True for a variable name that holds a secret: the keys of §4.4 and names ending in `_API_KEY`, `_TOKEN`, `_SECRET`, `_PASSWORD`. */
export function isSecretVariableName(name: string): boolean {
  return SECRET_VARIABLES.includes(name) || SECRET_NAME_SHAPE.test(name);
}

/**
 * Builds the partial configuration that environment variables impose (spec/core.md §4.4). Keys are
 * never copied into the configuration: HERMES_API_KEY is looked up by the provider catalog when a
 * request needs it, so the resolved configuration can be shown without leaking it.
 */
export function environmentOverrides(lookup: VariableLookup): Record<string, unknown> {
  const model: Record<string, unknown> = {};
  const agent: Record<string, unknown> = {};
  const approvals: Record<string, unknown> = {};

  const defaultModel = lookup('HERMES_MODEL')?.trim();
  if (defaultModel) model.default = defaultModel;
  const baseUrl = lookup('HERMES_BASE_URL')?.trim();
  if (baseUrl) model.base_url = baseUrl;

  const maxIterations = lookup('HERMES_MAX_ITERATIONS')?.trim();
  if (maxIterations) {
    if (!/^\d+$/.test(maxIterations) || Number(maxIterations) < 1) {
      throw new HermesError(
        'config_invalid',
        'agent.max_iterations: expected integer ≥ 1 (from HERMES_MAX_ITERATIONS)',
        { details: { path: 'agent.max_iterations', variable: 'HERMES_MAX_ITERATIONS' } },
      );
    }
    agent.max_iterations = Number(maxIterations);
  }

  const yolo = lookup('HERMES_YOLO_MODE')?.trim().toLowerCase();
  if (yolo === '1' || yolo === 'true') approvals.yolo = true;

  const result: Record<string, unknown> = {};
  if (Object.keys(model).length > 0) result.model = model;
  if (Object.keys(agent).length > 0) result.agent = agent;
  if (Object.keys(approvals).length > 0) result.approvals = approvals;
  return result;
}

/**
 * Every value that looks like a secret, for the logger's redaction (spec/core.md §20): secret
 * variables from the environment and from `.env`, keys written in the configuration, and the
 * variables that `providers.<id>.api_key_env` points at.
 */
export function secretValues(loaded: {
  config: HermesConfig;
  env: Readonly<Record<string, string | undefined>>;
  dotenv: Readonly<Record<string, string>>;
  lookup: VariableLookup;
}): string[] {
  const values = new Set<string>();
  const add = (value: string | undefined) => {
    if (value !== undefined && value.trim() !== '') values.add(value);
  };
  for (const source of [loaded.env, loaded.dotenv]) {
    for (const [name, value] of Object.entries(source)) {
      if (isSecretVariableName(name)) add(value);
    }
  }
  add(loaded.config.model.api_key);
  for (const provider of Object.values(loaded.config.providers)) {
    add(provider.api_key);
    if (provider.api_key_env !== undefined) add(loaded.lookup(provider.api_key_env));
  }
  for (const server of Object.values(loaded.config.mcp_servers)) {
    for (const [name, value] of Object.entries(server.env)) {
      if (isSecretVariableName(name)) add(value);
    }
    for (const [name, value] of Object.entries(server.headers)) {
      if (/^(authorization|x-api-key|api-key)$/i.test(name)) add(value);
    }
  }
  return [...values];
}
