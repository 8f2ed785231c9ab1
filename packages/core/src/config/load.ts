import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseDotenv } from 'dotenv';
import YAML from 'yaml';
import type { z } from 'zod';
import { HermesError } from '../errors.js';
import type { DeepPartial, Logger } from '../types.js';
import { environmentOverrides, type VariableLookup } from './environment.js';
import { configFilePath, dotenvFilePath, type Environment } from './home.js';
import { deepMerge, isPlainObject } from './merge.js';
import { normalizeRawConfig } from './normalize.js';
import { type HermesConfig, hermesConfigSchema, mcpServerProblem } from './schema.js';

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /** The resolved HERMES_HOME (see `resolveHomeDir`). */
  homeDir: string;
  /** Replaces `process.env` as the environment source (spec/core.md §4.2). */
  env?: Environment;
  /** Settings passed in code; they win over everything else. */
  overrides?: DeepPartial<HermesConfig> | undefined;
  /** Receives one warning per unknown key. */
  logger?: Logger | undefined;
}

/** The configuration of one HERMES_HOME, with the sources it was built from. */
export interface LoadedConfig {
  /** Every setting of spec/core.md §4.3, after precedence and defaults. */
  config: HermesConfig;
  homeDir: string;
  configPath: string;
  /** The file (or, when absent, the directory that would hold it) can be written: `always` approvals are offered. */
  writable: boolean;
  /** Unknown keys and malformed entries that were ignored. */
  warnings: string[];
  /** `HERMES_HOME/.env`, parsed into a private map; never copied into `process.env`. */
  dotenv: Record<string, string>;
  /** The environment source used: `process.env` or the `env` option. */
  env: Environment;
  /** A variable from the environment first, then `.env`; empty values count as unset. */
  lookup: VariableLookup;
  /** The parsed config.yaml as written (unknown keys and protocol-owned sections included). */
  raw: Record<string, unknown>;
  /** Raw value of a top-level section, for the protocol-owned ones of spec/core.md §24.9. */
  section(name: string): unknown;
}

function isMissingFile(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

async function readOptional(file: string, label: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if (isMissingFile(error)) return null;
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new HermesError('config_invalid', `${label}: cannot be read (${code})`, { cause: error });
  }
}

/**
 * Message of a YAML error with its line and column but without the source excerpt that the `yaml`
 * package's pretty errors add: that excerpt could show a key written in config.yaml.
 */
export function yamlErrorMessage(error: YAML.YAMLError, text: string): string {
  const offset = Math.min(error.pos[0], text.length);
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - (before.lastIndexOf('\n') + 1) + 1;
  return `line ${line}, column ${column}: ${error.message}`;
}

/** Parses config.yaml text into a plain mapping; an empty document is an empty mapping. */
export function parseConfigText(
  text: string,
  label = 'config.yaml',
): { raw: Record<string, unknown>; warnings: string[] } {
  const document = YAML.parseDocument(text, { prettyErrors: false });
  const firstError = document.errors[0];
  if (firstError !== undefined) {
    throw new HermesError('config_invalid', `${label}: ${yamlErrorMessage(firstError, text)}`);
  }
  const warnings = document.warnings.map((warning) => `${label}: ${yamlErrorMessage(warning, text)}`);
  const value: unknown = document.toJS();
  if (value === null || value === undefined) return { raw: {}, warnings };
  if (!isPlainObject(value)) throw new HermesError('config_invalid', `${label}: expected a mapping at the top level`);
  return { raw: value, warnings };
}

function formatIssuePath(issuePath: readonly PropertyKey[]): string {
  let result = '';
  for (const part of issuePath) {
    if (typeof part === 'number') result += `[${part}]`;
    else result += result === '' ? String(part) : `.${String(part)}`;
  }
  return result === '' ? '(top level)' : result;
}

/** Turns zod issues into one `config_invalid` error whose message starts with the first key path. */
export function configInvalidError(issues: readonly z.core.$ZodIssue[]): HermesError {
  const lines = issues.map((issue) => `${formatIssuePath(issue.path)}: ${issue.message}`);
  return new HermesError('config_invalid', lines.join('; '), {
    details: { issues: lines, path: issues[0] === undefined ? null : formatIssuePath(issues[0].path) },
  });
}

async function isWritable(configPath: string, homeDir: string): Promise<boolean> {
  try {
    await access(configPath, constants.W_OK);
    return true;
  } catch (error) {
    if (!isMissingFile(error)) return false;
  }
  // No file yet: writing it needs the home directory (or the ancestor that would create it).
  let directory = homeDir;
  for (;;) {
    try {
      await access(directory, constants.W_OK);
      return true;
    } catch (error) {
      if (!isMissingFile(error)) return false;
    }
    const parent = path.dirname(directory);
    if (parent === directory) return false;
    directory = parent;
  }
}

/** Builds the lookup of spec/core.md §4.2: environment first, then `.env`. */
export function createLookup(env: Environment, dotenv: Readonly<Record<string, string>>): VariableLookup {
  return (name) => {
    const fromEnvironment = env[name];
    if (fromEnvironment !== undefined && fromEnvironment !== '') return fromEnvironment;
    const fromDotenv = dotenv[name];
    if (fromDotenv !== undefined && fromDotenv !== '') return fromDotenv;
    return undefined;
  };
}

/**
 * Loads the configuration of a home directory (spec/core.md §4.2): overrides, then the environment
 * mappings of §4.4 (from the environment, then `.env`), then config.yaml, then the defaults. A
 * missing file means all defaults. Throws `config_invalid` naming the key path of the first invalid
 * value. Reads only; creates nothing.
 */
export async function loadConfig(options: LoadConfigOptions): Promise<LoadedConfig> {
  const env = options.env ?? process.env;
  const homeDir = options.homeDir;
  const configPath = configFilePath(homeDir);
  const warnings: string[] = [];

  const configText = await readOptional(configPath, 'config.yaml');
  let raw: Record<string, unknown> = {};
  if (configText !== null) {
    const parsed = parseConfigText(configText);
    raw = parsed.raw;
    warnings.push(...parsed.warnings);
  }

  const dotenvText = await readOptional(dotenvFilePath(homeDir), '.env');
  const dotenv: Record<string, string> = dotenvText === null ? {} : parseDotenv(dotenvText);
  const lookup = createLookup(env, dotenv);

  const normalized = normalizeRawConfig(raw, hermesConfigSchema);
  for (const key of normalized.unknownKeys) warnings.push(`config.yaml: unknown key '${key}' is ignored`);

  const layered = deepMerge(deepMerge(normalized.value, environmentOverrides(lookup)), options.overrides);
  const result = hermesConfigSchema.safeParse(layered);
  if (!result.success) throw configInvalidError(result.error.issues);
  const config = result.data;

  for (const [name, server] of Object.entries(config.mcp_servers)) {
    const problem = mcpServerProblem(server);
    if (problem !== null) warnings.push(`config.yaml: mcp_servers.${name}: ${problem}; the server is skipped`);
  }

  for (const warning of warnings) options.logger?.warn(warning, { file: configPath });

  const writable = await isWritable(configPath, homeDir);
  return {
    config,
    homeDir,
    configPath,
    writable,
    warnings,
    dotenv,
    env,
    lookup,
    raw,
    section: (name) => raw[name],
  };
}
