import { join } from 'node:path';
import { ErrorCode } from '../wire/index.js';
import { fail, type MethodContext, requireSession, stringParam } from './context.js';
import { projectionOf } from './session-methods.js';
import { writeTextFile } from './tui-client-methods.js';

/** Sources `session.list` leaves out; `session.most_recent` agrees with it. */
const EXCLUDED_SOURCES = ['tool', 'kanban', 'subagent'];

/**
 * `session.delete`: removes a stored session (by stored id). A live session is refused with 4023, as Hermes does:
 * one open in this gateway (attached to any client, the caller included, or still held for replay), or one with a
 * turn in flight from any surface of this process (the HTTP API included). Close it first. Result
 * `{deleted: <stored id>}`.
 */
export async function sessionDelete(context: MethodContext): Promise<Record<string, unknown>> {
  const { gateway } = context;
  const id = stringParam(context.params, 'session_id');
  if (!id) fail(ErrorCode.sessionIdRequired, 'session_id required');
  const live = gateway.sessions.get(id) ?? gateway.sessionByStoredId(id);
  const storedId = live?.storedId ?? id;
  if (live || gateway.host.turns.holder(storedId))
    fail(ErrorCode.liveSessionDelete, 'cannot delete an active session — close it first');
  const store = gateway.host.store;
  const row = await store.getSession(storedId);
  if (!row) fail(ErrorCode.storedSessionNotFound, `session not found: ${storedId}`);
  try {
    await store.deleteSession(storedId);
  } catch (error) {
    fail(ErrorCode.genericFailure, `delete failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  gateway.host.checkpoints.forget(storedId);
  return { deleted: storedId };
}

/** `session.most_recent`: the stored session with the latest activity, as `session.list` shows them. */
export async function sessionMostRecent(context: MethodContext): Promise<Record<string, unknown>> {
  const page = await context.gateway.host.store.listSessions({
    excludeSources: EXCLUDED_SOURCES,
    includeHidden: context.params.include_hidden === true,
    limit: 50,
  });
  const latest = [...page.items].sort((left, right) => right.lastActivityAt - left.lastActivityAt)[0];
  if (!latest) return { session_id: null };
  return {
    session_id: latest.id,
    title: latest.title ?? '',
    started_at: latest.startedAt / 1000,
    source: latest.source,
  };
}

/**
 * `session.save`: writes the session's transcript (the display projection) as JSON to
 * `hermes_conversation_<stored id>.json` in the session's working directory.
 */
export async function sessionSave(context: MethodContext): Promise<Record<string, unknown>> {
  const session = requireSession(context);
  const messages = await projectionOf(session);
  const info = context.gateway.info(session);
  const file = join(session.agent.cwd, `hermes_conversation_${session.storedId}.json`);
  const document = {
    session_id: session.storedId,
    title: info.title,
    model: info.model,
    provider: info.provider,
    saved_at: new Date().toISOString(),
    messages,
  };
  try {
    writeTextFile(file, `${JSON.stringify(document, null, 2)}\n`);
  } catch (error) {
    fail(ErrorCode.sessionExportFailed, `save failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { file, message_count: messages.length };
}
