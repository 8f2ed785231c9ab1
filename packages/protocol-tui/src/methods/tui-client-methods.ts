import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
import type { LiveSession } from '../live-session.js';
import { ErrorCode } from '../wire/index.js';
import { requestAnswer } from './answer-methods.js';
import { commandsCatalog } from './command-methods.js';
import { fail, type MethodContext, requireSession, stringParam } from './context.js';
import { imageAttach } from './runtime-methods.js';
import { defaultWorkspace } from './session-methods.js';

/**
 * Methods the Hermes TUI calls at start and while typing (issue 16.1): setup probe, completion,
 * file drops, collapsed pastes, the `!cmd` shell escape, and the legacy `sudo.respond` /
 * `secret.respond` answers.
 */

/** The session a method acts on: `session_id` when given, else the caller's most recently active one. */
export function callerSession(context: MethodContext): LiveSession | undefined {
  const id = stringParam(context.params, 'session_id');
  if (id) return context.gateway.sessions.get(id);
  let best: LiveSession | undefined;
  for (const session of context.gateway.sessions.values()) {
    if (session.finalized || !session.attached.has(context.connection)) continue;
    if (!best || session.lastActive > best.lastActive) best = session;
  }
  return best;
}

/** The working directory of the caller's session, or the default workspace. */
export function callerCwd(context: MethodContext): string {
  return callerSession(context)?.agent.cwd ?? context.gateway.defaultCwd ?? defaultWorkspace(context.gateway);
}

/** `setup.status`: whether the default model's provider can be used (a key is present). */
export function setupStatus(context: MethodContext) {
  const host = context.gateway.host;
  const spec = host.config.model.default ?? host.lookupEnv('HERMES_MODEL');
  if (!spec) return { provider_configured: false, reason: 'no model configured (set model.default or HERMES_MODEL)' };
  try {
    const route = host.resolveModel(spec);
    return { provider_configured: true, provider: route.provider, model: route.model };
  } catch (error) {
    return { provider_configured: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * `complete.slash`: command names for the word after `/`. Items replace from `replace_from`
 * (just after the slash) with `text`; arguments are not completed.
 */
export async function completeSlash(context: MethodContext) {
  const text = stringParam(context.params, 'text') ?? '';
  if (!text.startsWith('/') || /\s/.test(text)) return { items: [], replace_from: text.length };
  const typed = text.slice(1).toLowerCase();
  const catalog = await commandsCatalog({ ...context, params: {} });
  const items = catalog.pairs
    .filter(([name]) => name.slice(1).toLowerCase().startsWith(typed))
    .map(([name, description]) => ({ text: name.slice(1), display: name, meta: description, kind: 'command' }));
  return { items, replace_from: 1 };
}

const MAX_PATH_ITEMS = 50;

/**
 * `complete.path`: entries of the directory named by `word` (relative to the caller's session
 * directory, `~` expanded) whose names start with its last segment. An `@file:` / `@folder:`
 * prefix is kept and narrows the kind. Hidden entries appear only when the segment starts with `.`.
 */
export function completePath(context: MethodContext) {
  const word = stringParam(context.params, 'word') ?? '';
  const reference = /^@(file|folder):/.exec(word);
  const prefix = reference ? reference[0] : word.startsWith('@') ? '@' : '';
  const quote = /^["']/.test(word.slice(prefix.length)) ? word.slice(prefix.length, prefix.length + 1) : '';
  const typed = word.slice(prefix.length + quote.length);
  const slash = typed.lastIndexOf('/');
  const directoryPart = slash === -1 ? '' : typed.slice(0, slash + 1);
  const partial = slash === -1 ? typed : typed.slice(slash + 1);
  const expanded = directoryPart.startsWith('~') ? join(homedir(), directoryPart.slice(1)) : directoryPart;
  const directory = resolve(callerCwd(context), expanded || '.');
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return { items: [] };
  }
  const items: { text: string; display: string; meta: string; kind: string }[] = [];
  for (const name of names.sort()) {
    if (!name.startsWith(partial) || (name.startsWith('.') && !partial.startsWith('.'))) continue;
    let isDirectory = false;
    try {
      isDirectory = statSync(join(directory, name)).isDirectory();
    } catch {
      continue;
    }
    if (reference?.[1] === 'folder' && !isDirectory) continue;
    const shown = `${name}${isDirectory ? '/' : ''}`;
    items.push({
      text: `${prefix}${quote}${directoryPart}${shown}`,
      display: shown,
      meta: isDirectory ? 'dir' : 'file',
      kind: 'path',
    });
    if (items.length >= MAX_PATH_ITEMS) break;
  }
  return { items };
}

/** A dropped path as typed: quotes, `file://` and backslash escapes removed, `~` expanded. */
function droppedPath(text: string, cwd: string): string | null {
  let path = text.trim();
  if (!path || path.includes('\n')) return null;
  if ((path.startsWith('"') && path.endsWith('"')) || (path.startsWith("'") && path.endsWith("'")))
    path = path.slice(1, -1);
  if (path.startsWith('file://')) {
    try {
      path = decodeURIComponent(new URL(path).pathname);
    } catch {
      return null;
    }
  }
  path = path.replace(/\\(.)/g, '$1');
  if (path === '~' || path.startsWith('~/')) path = join(homedir(), path.slice(1));
  return resolve(cwd, path);
}

/**
 * `input.detect_drop`: when the text is a dropped file's path, an image is attached to the session
 * (as `image.attach` does) and any other file is named by its absolute path for the model to read.
 */
export function inputDetectDrop(context: MethodContext) {
  const session = requireSession(context);
  const text = stringParam(context.params, 'text') ?? '';
  if (!text.trim()) fail(ErrorCode.textRequired, 'text required');
  try {
    const attached = imageAttach({ ...context, params: { session_id: session.runtimeId, path: text } });
    const { attached: _attached, remainder, ...rest } = attached as Record<string, unknown>;
    return { matched: true, is_image: true, ...rest, text: typeof remainder === 'string' ? remainder : '' };
  } catch {
    // Not an image (or not a file): try a plain file below.
  }
  const path = droppedPath(text, session.agent.cwd);
  if (!path) return { matched: false };
  let isFile = false;
  try {
    isFile = statSync(path).isFile();
  } catch {}
  if (!isFile) return { matched: false };
  return { matched: true, is_image: false, name: basename(path), path, text: `[file: ${path}]` };
}

/**
 * `paste.collapse`: keeps a long paste as a file under HERMES_HOME/pastes so the collapsed token
 * in the composer can point at it. Returns the file's path and its size.
 */
export function pasteCollapse(context: MethodContext) {
  const text = stringParam(context.params, 'text');
  if (text === undefined || text === '') fail(ErrorCode.textRequired, 'text required');
  const directory = join(context.gateway.host.homeDir, 'pastes');
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  const path = join(directory, `paste_${stamp}_${Math.random().toString(16).slice(2, 8)}.txt`);
  try {
    mkdirSync(directory, { recursive: true, mode: 0o700 });
    writeFileSync(path, text, { mode: 0o600 });
  } catch (error) {
    fail(
      ErrorCode.genericFailure,
      `paste could not be saved: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return { path, lines: text.split('\n').length, chars: text.length };
}

const SHELL_TIMEOUT_S = 120;
const SHELL_OUTPUT_CAP = 200_000;

/**
 * Whether `shell.exec` may run for this caller: `tui_gateway.allow_shell_exec` when set, else on
 * for local transports (stdio, in-process) and off for WebSocket connections.
 */
function shellExecAllowed(context: MethodContext): boolean {
  const configured = context.gateway.section('tui_gateway', 'allow_shell_exec');
  if (typeof configured === 'boolean') return configured;
  return !context.connection.isWebSocket;
}

/** `shell.exec`: the TUI's `!cmd` escape; the system shell runs `command` in the session's directory. */
export function shellExec(context: MethodContext): Promise<Record<string, unknown>> {
  const command = stringParam(context.params, 'command') ?? '';
  if (!command.trim()) fail(ErrorCode.textRequired, 'command required');
  if (!shellExecAllowed(context))
    fail(
      ErrorCode.featureDisabled,
      context.connection.isWebSocket
        ? 'shell.exec is off for WebSocket connections; set tui_gateway.allow_shell_exec: true to allow it'
        : 'shell.exec is off (tui_gateway.allow_shell_exec: false)',
    );
  const requested = context.params.timeout;
  const seconds =
    typeof requested === 'number' && requested > 0 ? Math.min(requested, SHELL_TIMEOUT_S) : SHELL_TIMEOUT_S;
  const cwd = callerCwd(context);
  return new Promise((resolvePromise) => {
    const child = spawn(command, { cwd, shell: true, stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout = (stdout + chunk.toString('utf8')).slice(-SHELL_OUTPUT_CAP);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-SHELL_OUTPUT_CAP);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, seconds * 1000);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolvePromise({ code: 127, stdout, stderr: `${stderr}${error.message}\n`, cwd });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const note = timedOut ? `timed out after ${seconds} s\n` : '';
      resolvePromise({ code: code ?? (signal ? 128 : -1), stdout, stderr: `${stderr}${note}`, cwd });
    });
  });
}

/** `sudo.respond`: the TUI's answer to a `sudo` server request (an empty password cancels). */
export function sudoRespond(context: MethodContext) {
  const id = stringParam(context.params, 'request_id') ?? '';
  const value = stringParam(context.params, 'password') ?? '';
  return requestAnswer({ ...context, params: { id, result: { value } } });
}

/** `secret.respond`: the TUI's answer to a `secret` server request (an empty value cancels). */
export function secretRespond(context: MethodContext) {
  const id = stringParam(context.params, 'request_id') ?? '';
  const value = stringParam(context.params, 'value') ?? '';
  return requestAnswer({ ...context, params: { id, result: { value } } });
}

/** `shared_metrics.slash_command`: this host keeps no usage metrics, and says so. */
export function sharedMetricsSlashCommand() {
  return { recorded: false, reason: 'this host does not collect usage metrics' };
}

/** `session.control.read`: goals are not a feature of this host; the control block is empty. */
export function sessionControlRead(context: MethodContext) {
  requireSession(context);
  return { control: { goal: null }, goals_available: false };
}

/** Writes `text` to `path`, creating its directory. */
export function writeTextFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

/** `true` when `child` is `parent` or below it. */
export function isInside(parent: string, child: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : `${parent}${sep}`);
}
