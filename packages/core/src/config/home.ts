import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';

/** An environment source: `process.env` or the `env` host option that replaces it. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** Files inside HERMES_HOME (spec/core.md §4.1). */
export const CONFIG_FILE_NAME = 'config.yaml';
/** The secrets file inside HERMES_HOME. */
export const DOTENV_FILE_NAME = '.env';

function userHome(env: Environment): string {
  // The `env` option replaces process.env, so HOME comes from it when present.
  const fromEnvironment = process.platform === 'win32' ? env.USERPROFILE : env.HOME;
  return fromEnvironment !== undefined && fromEnvironment !== '' ? fromEnvironment : homedir();
}

function expandTilde(value: string, env: Environment): string {
  if (value === '~') return userHome(env);
  if (value.startsWith('~/') || value.startsWith('~\\')) return path.join(userHome(env), value.slice(2));
  return value;
}

/**
 * Resolves HERMES_HOME (spec/core.md §4.1): the `homeDir` option, then `HERMES_HOME` from the
 * environment, then `~/.hermes` (`%LOCALAPPDATA%\hermes` on Windows). Always absolute; a leading
 * `~` is expanded. Creates nothing.
 */
export function resolveHomeDir(options: { homeDir?: string | undefined; env?: Environment }): string {
  const env = options.env ?? process.env;
  if (options.homeDir !== undefined && options.homeDir !== '') return path.resolve(expandTilde(options.homeDir, env));
  const fromEnvironment = env.HERMES_HOME;
  if (fromEnvironment !== undefined && fromEnvironment !== '') return path.resolve(expandTilde(fromEnvironment, env));
  if (process.platform === 'win32') {
    const localAppData = env.LOCALAPPDATA;
    const base =
      localAppData !== undefined && localAppData !== '' ? localAppData : path.join(userHome(env), 'AppData', 'Local');
    return path.resolve(base, 'hermes');
  }
  return path.resolve(userHome(env), '.hermes');
}

/**
 * Creates HERMES_HOME when missing, with mode 0700 (it holds `.env` and the session store). An
 * existing directory keeps the mode its owner gave it. Returns the path.
 */
export async function ensureHomeDir(homeDir: string): Promise<string> {
  await mkdir(homeDir, { recursive: true, mode: 0o700 });
  return homeDir;
}

/** Path of config.yaml inside a home directory. */
export function configFilePath(homeDir: string): string {
  return path.join(homeDir, CONFIG_FILE_NAME);
}

/** Path of `.env` inside a home directory. */
export function dotenvFilePath(homeDir: string): string {
  return path.join(homeDir, DOTENV_FILE_NAME);
}
