import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { parse as parseDotenv } from 'dotenv';
import YAML from 'yaml';
import {
  type CommandAllowlistEntry,
  type RawCommandAllowlistEntry,
  sameAllowlistEntry,
} from '../command-allowlist-entry.js';
import { HermesError } from '../errors.js';
import { configFilePath, dotenvFilePath, ensureHomeDir } from './home.js';
import { yamlErrorMessage } from './load.js';

/*
 * The core writes config.yaml for `always` approvals and global model switches (spec/core.md §4.2),
 * and `.env` for answered secret requests (§24.7). Each write re-reads the file, applies one change
 * and replaces the file atomically. The read-change-write sequence is synchronous on purpose: two
 * writes started by the same process cannot interleave, so neither loses the other's change.
 */

function readOptionalSync(file: string): { text: string; mode: number } | null {
  try {
    const text = readFileSync(file, 'utf8');
    return { text, mode: statSync(file).mode & 0o777 };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Replaces `file` with `content` atomically: a temporary file beside it, flushed, given `mode`, then
 * renamed over the target. Readers see the old or the new file, never a partial one.
 */
export function writeFileAtomicSync(file: string, content: string, mode: number): void {
  // A config.yaml linked from a dotfiles repository stays a link: the file it points at is replaced.
  const target = existsSync(file) ? realpathSync(file) : file;
  const temporary = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
  );
  const descriptor = openSync(temporary, 'wx', mode);
  try {
    try {
      writeSync(descriptor, content);
      fsyncSync(descriptor);
    } finally {
      closeSync(descriptor);
    }
    // The umask may have narrowed the creation mode; the target's mode is restored exactly.
    chmodSync(temporary, mode);
    renameSync(temporary, target);
  } catch (error) {
    try {
      unlinkSync(temporary);
    } catch {
      // Already renamed or never created: nothing to clean up.
    }
    throw error;
  }
}

/** Mode of a config.yaml the core creates: it may hold `model.api_key`. */
const NEW_CONFIG_MODE = 0o600;

/**
 * Applies `mutate` to config.yaml through the `yaml` Document API, which keeps comments, key order
 * and formatting of everything the change does not touch. The file is re-read first, created when
 * missing (with the home directory), and replaced atomically keeping its mode. Throws
 * `config_invalid` rather than overwrite a file that does not parse.
 */
export async function updateConfigFile(homeDir: string, mutate: (document: YAML.Document) => void): Promise<void> {
  await ensureHomeDir(homeDir);
  const file = configFilePath(homeDir);
  const existing = readOptionalSync(file);
  const text = existing?.text ?? '';
  const document: YAML.Document = YAML.parseDocument(text, { prettyErrors: false });
  const firstError = document.errors[0];
  if (firstError !== undefined) {
    throw new HermesError('config_invalid', `config.yaml: ${yamlErrorMessage(firstError, text)}`);
  }
  if (document.contents === null) {
    document.contents = document.createNode({});
  } else if (!YAML.isMap(document.contents)) {
    throw new HermesError('config_invalid', 'config.yaml: expected a mapping at the top level');
  }
  mutate(document);
  writeFileAtomicSync(file, String(document), existing?.mode ?? NEW_CONFIG_MODE);
}

/** Returns the mapping at `key` of the top-level map, replacing an empty (`key:`) value by a new mapping. */
function ensureMap(document: YAML.Document, key: string): YAML.YAMLMap {
  const node = document.get(key, true);
  if (YAML.isMap(node)) return node;
  if (node === undefined || node === null || (YAML.isScalar(node) && node.value === null)) {
    const created = document.createNode({}) as YAML.YAMLMap;
    document.set(key, created);
    return created;
  }
  throw new HermesError('config_invalid', `${key}: expected a mapping`);
}

/** The `command_allowlist` sequence of config.yaml, created when absent. */
function allowlistSequence(document: YAML.Document): YAML.YAMLSeq {
  let node = document.get('command_allowlist', true);
  if (node === undefined || node === null || (YAML.isScalar(node) && node.value === null)) {
    node = document.createNode([]) as YAML.YAMLSeq;
    document.set('command_allowlist', node);
  }
  if (!YAML.isSeq(node)) throw new HermesError('config_invalid', 'command_allowlist: expected a list');
  return node;
}

function plainEntry(item: unknown): RawCommandAllowlistEntry | null {
  const value = YAML.isNode(item) ? item.toJSON() : item;
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object') {
    if (typeof (value as { command?: unknown }).command === 'string')
      return { command: (value as { command: string }).command };
    if (typeof (value as { pattern?: unknown }).pattern === 'string')
      return { pattern: (value as { pattern: string }).pattern };
  }
  return null;
}

/**
 * Adds entries to `command_allowlist` (an `always` approval: `{ command }`, docs/adr/0034), skipping
 * the ones already present. A plain string is written as a bare key (older files; not honoured).
 * Returns the entries actually added.
 */
export async function appendCommandAllowlist<T extends RawCommandAllowlistEntry>(
  homeDir: string,
  entries: readonly T[],
): Promise<T[]> {
  const added: T[] = [];
  await updateConfigFile(homeDir, (document) => {
    const sequence = allowlistSequence(document);
    const present = sequence.items.map(plainEntry).filter((item): item is RawCommandAllowlistEntry => item !== null);
    for (const entry of entries) {
      const exists = present.some((item) =>
        typeof entry === 'string' ? item === entry : sameAllowlistEntry(item, entry),
      );
      if (exists) continue;
      present.push(entry);
      added.push(entry);
      sequence.add(document.createNode(entry));
    }
  });
  return added;
}

/**
 * Removes an entry from `command_allowlist` (`{ pattern }` also removes a bare key of that name).
 * Returns how many items were removed.
 */
export async function removeCommandAllowlist(homeDir: string, entry: CommandAllowlistEntry): Promise<number> {
  let removed = 0;
  await updateConfigFile(homeDir, (document) => {
    const node = document.get('command_allowlist', true);
    if (!YAML.isSeq(node)) return;
    for (let index = node.items.length - 1; index >= 0; index -= 1) {
      const item = plainEntry(node.items[index]);
      if (item !== null && sameAllowlistEntry(item, entry)) {
        node.items.splice(index, 1);
        removed += 1;
      }
    }
  });
  return removed;
}

/**
 * Writes `model.default` and `model.provider` (`switchModel(…, { persist: 'global' })`,
 * spec/core.md §10.6). Other `model` keys, such as `base_url`, are kept.
 */
export async function setDefaultModel(homeDir: string, route: { provider: string; model: string }): Promise<void> {
  await updateConfigFile(homeDir, (document) => {
    const model = ensureMap(document, 'model');
    model.set('default', route.model);
    model.set('provider', route.provider);
  });
}

const DOTENV_KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const PLAIN_DOTENV_VALUE = /^[A-Za-z0-9_\-.:/+=@,~%^]*$/;

/** Renders `KEY=value` so that `dotenv.parse` reads back exactly `value`. */
function dotenvLine(key: string, value: string): string {
  const candidates = [value, `'${value}'`, `"${value}"`, `\`${value}\``];
  for (const [index, rendered] of candidates.entries()) {
    if (index === 0 && !PLAIN_DOTENV_VALUE.test(value)) continue;
    const line = `${key}=${rendered}`;
    if (parseDotenv(line)[key] === value) return line;
  }
  throw new HermesError('invalid_input', `${key}: the value cannot be written to .env unchanged`);
}

/**
 * Adds or replaces `KEY=value` in `HERMES_HOME/.env` (a `secret` callback answer, spec/core.md
 * §24.7). Other lines are kept as they are; the file gets mode 0600 and is replaced atomically.
 * The value is never logged.
 */
export async function writeDotenvValue(homeDir: string, key: string, value: string): Promise<void> {
  if (!DOTENV_KEY.test(key)) throw new HermesError('invalid_input', `${key}: not a valid variable name`);
  if (/[\r\n]/.test(value)) throw new HermesError('invalid_input', `${key}: a value on one line is expected`);
  await ensureHomeDir(homeDir);
  const file = dotenvFilePath(homeDir);
  const line = dotenvLine(key, value);
  const existing = readOptionalSync(file);
  const lines = existing === null || existing.text === '' ? [] : existing.text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const assignment = new RegExp(`^\\s*(?:export\\s+)?${key.replace(/[.-]/g, '\\$&')}\\s*=`);
  let replaced = false;
  const result: string[] = [];
  for (const current of lines) {
    if (!assignment.test(current)) {
      result.push(current);
      continue;
    }
    // Later duplicates would win in dotenv's reading; only one assignment is kept.
    if (!replaced) result.push(line);
    replaced = true;
  }
  if (!replaced) result.push(line);
  writeFileAtomicSync(file, `${result.join('\n')}\n`, 0o600);
}
