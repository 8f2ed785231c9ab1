import { createHash } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { ErrorCode } from '../wire/index.js';
import { booleanParam, fail, integerParam, type MethodContext, requireSession, stringParam } from './context.js';

/** `mcp_rev` (§4.9): 12 hex of the SHA-256 of the canonical JSON of `mcp_servers`, `toolsets`, `tools`. */
export function mcpRevision(context: MethodContext): string {
  const host = context.gateway.host;
  const config = host.config as unknown as Record<string, unknown>;
  const sections = {
    mcp_servers: config.mcp_servers ?? null,
    toolsets: config.toolsets ?? null,
    tools: config.tools ?? null,
  };
  return createHash('sha256').update(canonical(sections)).digest('hex').slice(0, 12);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null)
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value ?? null);
}

/** `reload.mcp` (§4.9). */
export async function reloadMcp(context: MethodContext): Promise<Record<string, unknown>> {
  const { gateway, params } = context;
  const confirmRequired = gateway.section('approvals', 'mcp_reload_confirm') !== false;
  if (params.confirm !== true && confirmRequired)
    return {
      status: 'confirm_required',
      message: 'Reloading restarts every MCP server and refreshes the tool list. Send confirm:true to proceed.',
    };
  if (params.confirm === true && params.always === true)
    await gateway.persistConfig(['approvals', 'mcp_reload_confirm'], false);
  if (gateway.mcpReloading) await gateway.mcpReloading.catch(() => {});
  const wanted = stringParam(params, 'rev') ?? mcpRevision(context);
  if (gateway.mcpLoadedRevision === wanted)
    return { status: 'reloaded', loaded_rev: gateway.mcpLoadedRevision, coalesced: true };
  // The client that asked can answer a server's missing variable (`secret`, §6.4) through its session.
  const id = stringParam(params, 'session_id');
  const asking = id ? gateway.sessions.get(id) : undefined;
  try {
    gateway.mcpReloading = (async () => {
      await gateway.host.reloadConfig();
      await gateway.host.mcp.reload(asking && !asking.finalized ? { sessionId: asking.agent.sessionId } : {});
    })();
    await gateway.mcpReloading;
  } catch (error) {
    fail(ErrorCode.reloadFailed, `MCP reload failed: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    gateway.mcpReloading = null;
  }
  const loaded = mcpRevision(context);
  gateway.mcpLoadedRevision = loaded;
  for (const session of gateway.sessions.values()) session.emit('session.info', gateway.info(session));
  return { status: 'reloaded', loaded_rev: loaded };
}

/** `reload.env` (§4.9). */
export async function reloadEnv(context: MethodContext): Promise<Record<string, unknown>> {
  const host = context.gateway.host;
  const file = join(host.homeDir, '.env');
  try {
    const keys = existsSync(file)
      ? readFileSync(file, 'utf8')
          .split('\n')
          .map(
            (line) =>
              line
                .replace(/^export\s+/, '')
                .split('=')[0]
                ?.trim() ?? '',
          )
          .filter((key) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
      : [];
    const before = new Map(keys.map((key) => [key, host.lookupEnv(key)]));
    await host.reloadConfig();
    let updated = 0;
    for (const key of keys) if (host.lookupEnv(key) !== before.get(key)) updated += 1;
    return { updated };
  } catch (error) {
    fail(ErrorCode.reloadFailed, `env reload failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** `process.list` (§4.9). */
export function processList(context: MethodContext) {
  const session = requireSession(context);
  const processes = context.gateway.host.processes.list(session.storedId).map((info) => ({
    process_id: info.id,
    command: info.command,
    pid: info.pid,
    status: info.status === 'running' ? 'running' : 'exited',
    exit_code: info.exitCode,
    started_at: info.startedAt / 1000,
  }));
  return { processes };
}

/** `process.kill` (§4.9). */
export async function processKill(context: MethodContext) {
  const session = requireSession(context);
  const id = stringParam(context.params, 'process_id');
  if (!id) fail(ErrorCode.textRequired, 'process_id required');
  const registry = context.gateway.host.processes;
  if (!registry.get(session.storedId, id)) fail(ErrorCode.noSuchProcess, 'no such process');
  try {
    await registry.kill(session.storedId, id);
  } catch (error) {
    fail(
      ErrorCode.processFailed,
      `process operation failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return { killed: true, process_id: id };
}

/** `process.stop` (§4.9). */
export async function processStop(context: MethodContext) {
  const registry = context.gateway.host.processes;
  let killed = 0;
  for (const session of context.gateway.sessions.values()) killed += registry.runningCount(session.storedId);
  try {
    await registry.killAll();
  } catch (error) {
    fail(
      ErrorCode.processFailed,
      `process operation failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return { killed };
}

const IMAGE_SIGNATURES: [string, (bytes: Buffer) => boolean][] = [
  ['png', (bytes) => bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))],
  ['jpeg', (bytes) => bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff],
  ['gif', (bytes) => bytes.subarray(0, 4).toString('latin1') === 'GIF8'],
  [
    'webp',
    (bytes) =>
      bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP',
  ],
];

function imageSize(kind: string, bytes: Buffer): { width: number; height: number } | null {
  if (kind === 'png' && bytes.length >= 24) return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  if (kind === 'gif' && bytes.length >= 10) return { width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) };
  return null;
}

/** `image.attach` (§4.5). */
export function imageAttach(context: MethodContext) {
  const session = requireSession(context);
  const value = stringParam(context.params, 'path');
  if (!value) fail(ErrorCode.pathRequired, 'path required');
  const trimmed = value.trim();
  const candidates: string[] = [trimmed];
  for (let index = trimmed.length - 1; index > 0; index -= 1) {
    if (/\s/.test(trimmed[index] ?? '') && !/\s/.test(trimmed[index - 1] ?? ''))
      candidates.push(trimmed.slice(0, index));
  }
  for (const candidate of candidates) {
    let path = candidate;
    if ((path.startsWith('"') && path.endsWith('"')) || (path.startsWith("'") && path.endsWith("'")))
      path = path.slice(1, -1);
    path = path.replace(/\\(.)/g, '$1');
    if (path === '~' || path.startsWith('~/')) path = join(homedir(), path.slice(1));
    const absolute = resolve(session.agent.cwd, path);
    let isFile = false;
    try {
      isFile = statSync(absolute).isFile();
    } catch {}
    if (!isFile) continue;
    let bytes: Buffer;
    try {
      bytes = readFileSync(absolute);
    } catch (error) {
      fail(ErrorCode.attachFailed, `image attach failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    const kind = IMAGE_SIGNATURES.find(([, test]) => test(bytes))?.[0];
    if (!kind) fail(ErrorCode.imageNotFound, `unsupported image type: ${basename(absolute)}`);
    if (!session.images.includes(absolute)) session.images.push(absolute);
    const result: Record<string, unknown> = {
      attached: true,
      path: absolute,
      count: session.images.length,
      remainder: trimmed.slice(candidate.length).trim(),
      text: `[Image: ${basename(absolute)}]`,
      name: basename(absolute),
    };
    const size = imageSize(kind, bytes);
    if (size) {
      result.width = size.width;
      result.height = size.height;
      result.token_estimate = 85 * Math.ceil(size.width / 512) * Math.ceil(size.height / 512);
    }
    return result;
  }
  fail(ErrorCode.imageNotFound, `image not found: ${value}`);
}

/** `image.detach` (§4.5). */
export function imageDetach(context: MethodContext) {
  const session = requireSession(context);
  const path = stringParam(context.params, 'path');
  if (!path) fail(ErrorCode.pathRequired, 'path required');
  const index = session.images.indexOf(path);
  if (index >= 0) session.images.splice(index, 1);
  return { detached: index >= 0, count: session.images.length };
}

/** `terminal.resize` (§4.5). */
export function terminalResize(context: MethodContext) {
  const session = requireSession(context);
  const cols = integerParam(context.params, 'cols');
  if (cols !== undefined && cols >= 1) session.cols = cols;
  return { cols: session.cols };
}

/** `delegation.status` (§4.10). */
export function delegationStatus(context: MethodContext) {
  const filter = stringParam(context.params, 'session_id');
  const active = [];
  for (const session of context.gateway.sessions.values()) {
    if (filter && session.runtimeId !== filter) continue;
    for (const child of session.agent.subagents()) {
      if (child.status !== 'running') continue;
      active.push({
        goal: child.goal,
        task_count: 1,
        task_index: 0,
        subagent_id: child.childId,
        child_session_id: child.childSessionId,
        status: 'running',
      });
    }
  }
  const config = context.gateway.host.config as unknown as {
    delegation?: { max_spawn_depth?: number; max_concurrent_children?: number };
  };
  return {
    active,
    paused: context.gateway.delegationPaused,
    max_spawn_depth: config.delegation?.max_spawn_depth ?? 1,
    max_concurrent_children: config.delegation?.max_concurrent_children ?? 3,
  };
}

/** `delegation.pause` (§4.10): the host's spawn gate holds new children until resumed. */
export function delegationPause(context: MethodContext) {
  const paused = booleanParam(context.params, 'paused') ?? true;
  // Unpausing starts the held children, whose events must follow this response (§2.5).
  context.after(() => context.gateway.host.pauseDelegation(paused));
  context.gateway.delegationPaused = paused;
  return { paused };
}

function authorizedSession(context: MethodContext) {
  const id = stringParam(context.params, 'session_id');
  const session = id ? context.gateway.sessions.get(id) : undefined;
  if (!session?.attached.has(context.connection)) fail(ErrorCode.sessionNotFound, 'session not found');
  return session;
}

/** `subagent.interrupt` (§4.10). */
export function subagentInterrupt(context: MethodContext) {
  const subagentId = stringParam(context.params, 'subagent_id');
  if (!subagentId) fail(ErrorCode.unknownParamsKey, 'subagent_id required');
  const session = authorizedSession(context);
  const child = session.agent
    .subagents()
    .find((candidate) => candidate.childId === subagentId && candidate.status === 'running');
  const found = child ? child.interrupt({ issuer: 'user' }) : false;
  return { found, subagent_id: subagentId };
}

/** `subagent.steer` (§4.10). */
export function subagentSteer(context: MethodContext) {
  const subagentId = stringParam(context.params, 'subagent_id');
  if (!subagentId) fail(ErrorCode.unknownParamsKey, 'subagent_id required');
  const text = stringParam(context.params, 'text');
  if (!text) fail(ErrorCode.invalidValue, 'text is required');
  const session = authorizedSession(context);
  const child = session.agent
    .subagents()
    .find((candidate) => candidate.childId === subagentId && candidate.status === 'running');
  const status = child && child.steer(text).status !== 'rejected' ? 'queued' : 'rejected';
  return { status, subagent_id: subagentId, text };
}

/** `subagent.list` (§4.10). */
export function subagentList(context: MethodContext) {
  const session = requireSession(context);
  const subagents = session.agent.subagents().map((child) => ({
    goal: child.goal,
    task_count: 1,
    task_index: 0,
    subagent_id: child.childId,
    child_session_id: child.childSessionId,
    status: child.status === 'completed' ? 'completed' : child.status,
  }));
  return { subagents, delegations: [] };
}

function spawnRoot(context: MethodContext): string {
  return join(context.gateway.host.homeDir, 'spawn-trees');
}

const sanitize = (value: string) => value.replace(/[^A-Za-z0-9._-]/g, '_');

/** `spawn_tree.save` (§4.10). */
export function spawnTreeSave(context: MethodContext) {
  const { params } = context;
  const subagents = params.subagents;
  if (!Array.isArray(subagents) || subagents.length === 0) fail(ErrorCode.unknownParamsKey, 'subagents list required');
  const sessionId = stringParam(params, 'session_id') ?? 'default';
  try {
    const folder = join(spawnRoot(context), sanitize(sessionId));
    mkdirSync(folder, { recursive: true });
    const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15);
    let path = join(folder, `${stamp}.json`);
    for (let suffix = 2; existsSync(path); suffix += 1) path = join(folder, `${stamp}-${suffix}.json`);
    const startedAt = typeof params.started_at === 'number' ? params.started_at : null;
    const finishedAt = typeof params.finished_at === 'number' ? params.finished_at : null;
    const label = stringParam(params, 'label') ?? '';
    writeFileSync(
      path,
      JSON.stringify({ session_id: sessionId, started_at: startedAt, finished_at: finishedAt, label, subagents }),
    );
    appendFileSync(
      join(folder, '_index.jsonl'),
      `${JSON.stringify({ path, session_id: sessionId, started_at: startedAt, finished_at: finishedAt, label, count: subagents.length })}\n`,
    );
    return { path, session_id: sessionId };
  } catch (error) {
    fail(ErrorCode.genericFailure, `spawn tree save failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** `spawn_tree.list` (§4.10). */
export function spawnTreeList(context: MethodContext) {
  const { params } = context;
  const root = spawnRoot(context);
  const limit = integerParam(params, 'limit');
  try {
    const folders = booleanParam(params, 'cross_session')
      ? existsSync(root)
        ? readdirSync(root)
        : []
      : [sanitize(stringParam(params, 'session_id') ?? 'default')];
    type Entry = { path: string; finished_at: number | null; started_at: number | null };
    let entries: Entry[] = [];
    for (const folder of folders) {
      const index = join(root, folder, '_index.jsonl');
      if (!existsSync(index)) continue;
      const lines = readFileSync(index, 'utf8').split('\n').filter(Boolean).reverse();
      for (const line of lines) {
        const entry = JSON.parse(line) as Entry;
        if (existsSync(entry.path)) entries.push(entry);
      }
    }
    if (folders.length > 1)
      entries = entries.sort(
        (left, right) =>
          (right.finished_at ?? 0) - (left.finished_at ?? 0) || (right.started_at ?? 0) - (left.started_at ?? 0),
      );
    return { entries: entries.slice(0, limit !== undefined && limit >= 1 ? limit : 50) };
  } catch (error) {
    fail(ErrorCode.genericFailure, `spawn tree list failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** `spawn_tree.load` (§4.10). */
export function spawnTreeLoad(context: MethodContext) {
  const path = stringParam(context.params, 'path');
  if (!path) fail(ErrorCode.unknownParamsKey, 'path required');
  const root = spawnRoot(context);
  let real: string;
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
  } catch {
    realRoot = resolve(root);
  }
  try {
    real = realpathSync(resolve(path));
  } catch {
    real = resolve(path);
  }
  if (!real.startsWith(`${realRoot}/`)) fail(ErrorCode.ordinalMismatch, 'path outside spawn-trees root');
  try {
    return JSON.parse(readFileSync(real, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    fail(ErrorCode.genericFailure, `spawn tree load failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
