import { isAbsolute, relative, resolve } from 'node:path';
import type { LiveSession } from '../live-session.js';
import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext, requireSession, stringParam } from './context.js';

/**
 * `rollback.*`: the file checkpoints the core takes before every file-tool write (ADR 0006), in
 * the shapes the Hermes TUI reads: `{enabled, checkpoints:[{hash,message,timestamp}]}`,
 * `{diff, stat}` and `{success, restored_to, message}`.
 */

function checkpointOf(context: MethodContext, session: LiveSession) {
  const hash = (stringParam(context.params, 'hash') ?? '').trim();
  if (!hash) fail(ErrorCode.invalidValue, 'hash is required');
  const found = context.gateway.host.checkpoints.find(session.storedId, hash);
  if (!found) fail(ErrorCode.checkpointNotFound, `checkpoint not found: ${hash}`);
  return found;
}

function shown(session: LiveSession, path: string): string {
  const inside = relative(session.agent.cwd, path);
  return inside && !inside.startsWith('..') && !isAbsolute(inside) ? inside : path;
}

/** `rollback.list`: the session's checkpoints, newest first. */
export function rollbackList(context: MethodContext) {
  const session = requireSession(context);
  const checkpoints = context.gateway.host.checkpoints.list(session.storedId).map((checkpoint) => ({
    hash: checkpoint.id,
    message: checkpoint.message,
    timestamp: new Date(checkpoint.createdAt).toISOString(),
    path: checkpoint.path,
  }));
  return { enabled: true, checkpoints };
}

/** `rollback.diff`: what changed since a checkpoint, as one unified diff plus a per-file stat. */
export async function rollbackDiff(context: MethodContext) {
  const session = requireSession(context);
  const checkpoint = checkpointOf(context, session);
  const changes = await context.gateway.host.checkpoints.diff(session.storedId, checkpoint.id);
  const stat = changes
    .map((change) => {
      const lines = change.diff.split('\n');
      const added = lines.filter((line) => line.startsWith('+') && !line.startsWith('+++')).length;
      const removed = lines.filter((line) => line.startsWith('-') && !line.startsWith('---')).length;
      const state = change.after === null ? ' (deleted)' : change.before === null ? ' (new)' : '';
      return ` ${shown(session, change.path)}${state} | +${added} -${removed}`;
    })
    .join('\n');
  return { hash: checkpoint.id, diff: changes.map((change) => change.diff).join('\n'), stat, files: changes.length };
}

/**
 * `rollback.restore`: puts every file written since the checkpoint back (or only `file_path`,
 * relative to the session's directory). Refused while a turn runs (4009).
 */
export async function rollbackRestore(context: MethodContext) {
  const session = requireSession(context);
  if (session.busy) fail(ErrorCode.sessionBusy, 'session busy — interrupt the current turn before a rollback');
  const checkpoint = checkpointOf(context, session);
  const filePath = stringParam(context.params, 'file_path')?.trim();
  const options = filePath ? { path: resolve(session.agent.cwd, filePath) } : {};
  let restored: string[];
  try {
    restored = await context.gateway.host.checkpoints.restore(session.storedId, checkpoint.id, options);
  } catch (error) {
    fail(ErrorCode.rollbackFailed, `rollback failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const names = restored.map((path) => shown(session, path));
  return {
    success: true,
    restored_to: checkpoint.id,
    files: names,
    message: `restored ${names.length} file${names.length === 1 ? '' : 's'} to ${checkpoint.id.slice(0, 10)}: ${names.join(', ')}`,
    history_removed: 0,
  };
}
