import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import type { Agent, ChatMessage, SessionOptions, StoredSession } from '@hermes/core';
import type { GatewayConnection } from '../connection.js';
import type { GatewayState } from '../gateway-state.js';
import type { LiveSession } from '../live-session.js';
import { isUserOriginated, lineageRows, project } from '../projection.js';
import { listOpenRequests } from '../server-requests.js';
import { emptyUsage, usageOf } from '../usage.js';
import { ErrorCode, type TranscriptMessage } from '../wire/index.js';
import { booleanParam, fail, integerParam, type MethodContext, requireSession, stringParam } from './context.js';

/** Expands `~` and checks the path is an existing directory. */
export function directoryOrNull(value: string | undefined): string | null {
  if (!value) return null;
  const expanded = value === '~' ? homedir() : value.startsWith('~/') ? resolve(homedir(), value.slice(2)) : value;
  const absolute = resolve(expanded);
  try {
    return existsSync(absolute) && statSync(absolute).isDirectory() ? absolute : null;
  } catch {
    return null;
  }
}

/** The display projection of a live session (§3.7). */
export async function projectionOf(session: LiveSession): Promise<TranscriptMessage[]> {
  return project(await displayRows(session));
}

/** Rows of the display lineage of a live session's agent. */
export async function displayRows(session: LiveSession) {
  const agent = session.agent;
  if (!agent.persisted) return agent.history();
  return lineageRows(await agent.history({ includeInactive: true }));
}

/**
 * The live-session snapshot of §9.1. `projected` is the session's display projection when the caller has just built
 * it from the store (a resume); otherwise it is read.
 */
export async function snapshot(
  session: LiveSession,
  caller: GatewayConnection | null,
  omitMessages: boolean,
  projected?: TranscriptMessage[],
) {
  const gateway = session.gateway;
  const messages = projected ?? (await projectionOf(session));
  const openRequests = listOpenRequests(session, caller);
  const status =
    openRequests.length > 0
      ? 'waiting'
      : session.running && session.buildState !== 'ready'
        ? 'starting'
        : session.busy
          ? 'working'
          : 'idle';
  const result: Record<string, unknown> = {
    session_id: session.runtimeId,
    stored_session_id: session.storedId,
    session_key: session.storedId,
    message_count: messages.length,
    messages: omitMessages ? [] : messages,
    info: gateway.info(session),
    running: session.running || session.foreignTurn,
    status,
    started_at: session.startedAt,
    turn_started_at: session.turnStartedAt,
    inflight: inflightView(session),
    open_requests: openRequests,
  };
  if (omitMessages) result.messages_omitted = true;
  const first = session.queue[0];
  if (first) result.queued = { user: first.hidden ? '' : first.text };
  if (session.todos) result.todo_state = session.todos;
  return result;
}

function inflightView(session: LiveSession): Record<string, unknown> | null {
  const inflight = session.inflight;
  if (!inflight) return null;
  const view: Record<string, unknown> = {
    user: inflight.user,
    assistant: inflight.assistant,
    streaming: inflight.streaming,
  };
  if (inflight.streaming) {
    view.user_originated = inflight.user_originated;
    if (inflight.corrections.length > 0) {
      view.corrections = inflight.corrections;
      view.correction_offsets = inflight.correction_offsets;
    }
  } else {
    view.status = 'error';
    view.error = inflight.error;
    view.recoverable = true;
    view.error_surface = inflight.error_surface;
  }
  return view;
}

function seedRows(value: unknown): ChatMessage[] {
  if (!Array.isArray(value)) return [];
  const rows: ChatMessage[] = [];
  for (const entry of value) {
    if (typeof entry !== 'object' || entry === null) continue;
    const row = entry as Record<string, unknown>;
    if (row.role !== 'user' && row.role !== 'assistant') continue;
    const content = typeof row.content === 'string' ? row.content : typeof row.text === 'string' ? row.text : '';
    rows.push({ role: row.role, content });
  }
  return rows;
}

/** Cleans a title by the store rules (§3.6): control characters removed, whitespace collapsed, 100 code points. */
export function cleanTitle(value: string): string {
  const visible = [...value].filter((character) => {
    const code = character.codePointAt(0) ?? 0;
    return code > 0x1f && code !== 0x7f;
  });
  return [...visible.join('').replace(/\s+/g, ' ').trim()].slice(0, 100).join('').trim();
}

/** `session.create` (§4.2). */
export async function sessionCreate(context: MethodContext) {
  const { gateway, params } = context;
  const options: SessionOptions = {
    source: stringParam(params, 'source') ?? 'tui',
    cwd: directoryOrNull(stringParam(params, 'cwd')) ?? gateway.defaultCwd ?? defaultWorkspace(gateway),
  };
  const seed = seedRows(params.messages);
  if (seed.length > 0) options.seed = seed;
  const parent = stringParam(params, 'parent_session_id');
  if (parent) options.parentSessionId = parent;
  const title = stringParam(params, 'title');
  if (title && cleanTitle(title)) options.title = cleanTitle(title);
  if (booleanParam(params, 'hidden')) options.hidden = true;
  const effort = stringParam(params, 'reasoning_effort');
  if (effort === 'none' || effort === 'low' || effort === 'medium' || effort === 'high')
    options.reasoningEffort = effort;
  const model = stringParam(params, 'model');
  const provider = stringParam(params, 'provider');
  const pin = model ? (provider && !model.includes(':') ? `${provider}:${model}` : model) : null;
  let session: LiveSession | null = null;
  const callbacksProxy: NonNullable<SessionOptions['callbacks']> = {
    approve: (request, signal) => requireLive(session).callbacks().approve(request, signal),
    clarify: (request, signal) => requireLive(session).callbacks().clarify(request, signal),
    sudo: (request, signal) => requireLive(session).callbacks().sudo(request, signal),
    secret: (request, signal) => requireLive(session).callbacks().secret(request, signal),
    clientRequest: (request, signal) => requireLive(session).callbacks().clientRequest(request, signal),
  };
  options.callbacks = callbacksProxy;
  const agent = await gateway.host.newSession(options);
  // `persist: true` asks for the row now (§ session.create). Across instances (a shared relay bus) the row is always
  // written now: a resume or attach of the new session from another instance finds it at once, instead of failing
  // with 4007 until the first turn commits it (issue 33 item 5).
  if (booleanParam(params, 'persist') === true || gateway.relay !== null) {
    try {
      await agent.persist();
    } catch (error) {
      await agent.close().catch(() => {});
      fail(
        ErrorCode.storeWriteFailed,
        `failed to create session row: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  session = gateway.addSession(agent, {
    closeOnDisconnect: booleanParam(params, 'close_on_disconnect') ?? false,
    modelPin: pin,
  });
  const cols = integerParam(params, 'cols');
  if (cols !== undefined && cols >= 1) session.cols = cols;
  gateway.attach(session, context.connection);
  const created = session;
  // Other instances know the session is watched before the client can start a turn there (ADR 0053).
  await gateway.host.live.announced();
  const messages = await projectionOf(created);
  context.after(() => {
    setTimeout(() => {
      if (!created.finalized) void created.startBuild();
    }, gateway.options.buildDelayMs);
  });
  return {
    session_id: created.runtimeId,
    stored_session_id: created.storedId,
    session_key: created.storedId,
    message_count: messages.length,
    messages,
    info: gateway.info(created),
  };
}

function requireLive(session: LiveSession | null): LiveSession {
  if (!session) throw new Error('session not ready');
  return session;
}

/** The default workspace for new sessions (§1.2). */
export function defaultWorkspace(gateway: GatewayState): string {
  const configured = gateway.section('tui_gateway', 'default_cwd');
  return directoryOrNull(typeof configured === 'string' ? configured : undefined) ?? process.cwd();
}

/** `session.resume` (§4.2). */
export async function sessionResume(context: MethodContext) {
  const { gateway, params } = context;
  const target = params.session_id;
  if (typeof target !== 'string' || target === '') fail(ErrorCode.sessionIdRequired, 'session_id required');
  const omit = booleanParam(params, 'omit_messages') ?? false;
  let storedId: string | null = null;
  const store = gateway.host.store;
  const relay = gateway.relay;
  // The session, its transcript, usage and lease, and the instances listening on the bus, in one read (one statement
  // on PostgreSQL): for an open session live nowhere else, all a resume reads (issue 34, ADR 0065).
  let found: StoredSession | null;
  try {
    found = await store.readSession(target, relay ? { listeningBesides: relay.holder } : {});
  } catch (error) {
    fail(ErrorCode.genericFailure, `resume failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (found) storedId = found.session.id;
  else {
    const live = [...gateway.sessions.values()].find(
      (candidate) =>
        candidate.storedId === target || (!candidate.agent.persisted && candidate.agent.title() === target),
    );
    if (live) storedId = live.storedId;
  }
  if (!storedId) fail(ErrorCode.storedSessionNotFound, 'session not found');
  const reaping = gateway.reapingSessionFor(storedId);
  if (reaping?.settling) fail(ErrorCode.sessionBusy, 'session disconnect interrupt settling');
  if (reaping) fail(ErrorCode.storedSessionNotFound, 'session no longer live; retry resume');
  const existing = gateway.sessionByStoredId(storedId);
  if (existing) {
    gateway.attach(existing, context.connection);
    // A stored session's projection is read from the store: the read above is that read.
    const projection = found && existing.agent.persisted ? project(lineageRows(found.rows)) : undefined;
    return { ...(await snapshot(existing, context.connection, omit, projection)), resumed: storedId };
  }
  // A session whose row is open may be live on another instance: then the caller attaches there (ADR 0020).
  if (relay && found && found.session.endedAt === null) {
    const known = { listed: found.listening ?? null, leaseHolder: found.leaseHolder };
    const { owner, asked } = await relay.ownerOf(storedId, known);
    if (owner) return relay.resumeRemote(context.connection, owner, { ...params, session_id: storedId }, context.after);
    // The answers took time, in which another instance may have written: read the session again.
    if (asked) {
      try {
        found = await store.readSession(storedId);
      } catch (error) {
        fail(ErrorCode.genericFailure, `resume failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (!found) fail(ErrorCode.storedSessionNotFound, 'session not found');
    }
  }
  // The one read serves the size check, the runtime (its row, rows and usage) and the snapshot: a resume used to read
  // the transcript three times and the row twice, each a round trip or more on PostgreSQL.
  const projected = found ? project(lineageRows(found.rows)) : undefined;
  const max = gateway.maxResumeMessages();
  if (max > 0) {
    const count = (projected ?? project(lineageRows(await store.loadConversation(storedId, { includeInactive: true }))))
      .length;
    if (count > max)
      fail(
        ErrorCode.sessionTooLarge,
        `session too large to resume: ${count} messages exceed sessions.max_resume_messages (${max})`,
      );
  }
  let session: LiveSession | null = null;
  let agent: Agent;
  // A runtime of this session already in the host (another surface's) is returned as it is, not made from these rows.
  const madeFromStored = found !== null && gateway.host.getAgent(storedId) === undefined;
  try {
    agent = await gateway.host.resumeSession(storedId, {
      callbacks: {
        approve: (request, signal) => requireLive(session).callbacks().approve(request, signal),
        clarify: (request, signal) => requireLive(session).callbacks().clarify(request, signal),
        sudo: (request, signal) => requireLive(session).callbacks().sudo(request, signal),
        secret: (request, signal) => requireLive(session).callbacks().secret(request, signal),
        clientRequest: (request, signal) => requireLive(session).callbacks().clientRequest(request, signal),
      },
      ...(found ? { stored: found } : {}),
    });
  } catch (error) {
    fail(ErrorCode.genericFailure, `resume failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  session = gateway.addSession(agent, {
    closeOnDisconnect: booleanParam(params, 'close_on_disconnect') ?? false,
    modelPin: null,
  });
  const cols = integerParam(params, 'cols');
  if (cols !== undefined && cols >= 1) session.cols = cols;
  const created = session;
  if (booleanParam(params, 'eager_build')) {
    const outcome = await created.waitForAgent(gateway.options.turnBuildWaitMs);
    if (outcome !== 'ready') {
      await gateway.finalize(created, 'tui_close');
      fail(ErrorCode.genericFailure, `resume failed: agent init failed: ${created.buildFailure}`);
    }
  } else {
    context.after(() => {
      if (!created.finalized) void created.startBuild();
    });
  }
  gateway.attach(created, context.connection);
  await gateway.host.live.announced();
  const ownProjection = madeFromStored ? projected : undefined;
  return { ...(await snapshot(created, context.connection, omit, ownProjection)), resumed: storedId };
}

/** `session.activate` (§4.2). */
export async function sessionActivate(context: MethodContext) {
  const id = context.params.session_id;
  const reaping = typeof id === 'string' ? context.gateway.reapingSessionByRuntimeId(id) : undefined;
  if (reaping?.settling) fail(ErrorCode.sessionBusy, 'session disconnect interrupt settling');
  if (reaping) fail(ErrorCode.storedSessionNotFound, 'session no longer live; retry resume');
  const session = requireSession(context);
  if (session.settling) fail(ErrorCode.sessionBusy, 'session disconnect interrupt settling');
  if (session.reaping) fail(ErrorCode.storedSessionNotFound, 'session no longer live; retry resume');
  context.gateway.attach(session, context.connection);
  return snapshot(session, context.connection, booleanParam(context.params, 'omit_messages') ?? false);
}

/** `session.close` (§4.2). */
export async function sessionClose(context: MethodContext) {
  const id = context.params.session_id;
  const session = typeof id === 'string' ? context.gateway.sessions.get(id) : undefined;
  if (!session) return { closed: false };
  await context.gateway.finalize(session, 'tui_close');
  return { closed: true };
}

/** `session.list` (§4.2). */
export async function sessionList(context: MethodContext) {
  const { gateway, params } = context;
  const store = gateway.host.store;
  try {
    const title = stringParam(params, 'title');
    const excluded = ['tool', 'kanban', 'subagent'];
    const toEntry = (summary: {
      id: string;
      title: string | null;
      preview: string;
      startedAt: number;
      messageCount: number;
      source: string;
    }) => ({
      id: summary.id,
      title: summary.title ?? '',
      preview: summary.preview,
      started_at: summary.startedAt / 1000,
      message_count: summary.messageCount,
      source: summary.source,
    });
    if (title !== undefined) {
      const page = await store.listSessions({
        titlePrefix: title,
        includeHidden: true,
        excludeSources: excluded,
        limit: 1000,
      });
      const match = page.items
        .filter((item) => item.title === title)
        .sort((left, right) => right.lastActivityAt - left.lastActivityAt)[0];
      return { sessions: match ? [toEntry(match)] : [] };
    }
    const limit = integerParam(params, 'limit');
    const page = await store.listSessions({
      excludeSources: excluded,
      includeHidden: booleanParam(params, 'include_hidden') ?? false,
      limit: limit !== undefined && limit >= 1 ? limit : 200,
    });
    return { sessions: page.items.map(toEntry) };
  } catch (error) {
    fail(ErrorCode.sessionListFailed, `session list failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** `session.active_list` (§4.2). */
export async function sessionActiveList(context: MethodContext) {
  const current = stringParam(context.params, 'current_session_id');
  const sessions = [];
  for (const session of context.gateway.sessions.values()) {
    const messages = await projectionOf(session);
    const firstUser = messages.find((message) => message.role === 'user')?.text ?? '';
    const info = context.gateway.info(session);
    sessions.push({
      current: session.runtimeId === current,
      id: session.runtimeId,
      last_active: session.lastActive / 1000,
      message_count: messages.length,
      model: info.model,
      preview: firstUser.replace(/\s+/g, ' ').trim().slice(0, 120),
      session_key: session.storedId,
      started_at: session.startedAt,
      status: session.openRequests.size > 0 ? 'waiting' : session.busy ? 'working' : 'idle',
      title: info.title ?? '',
    });
  }
  return { sessions };
}

/** `session.history` (§4.3). */
export async function sessionHistory(context: MethodContext) {
  const session = requireSession(context);
  const messages = await projectionOf(session);
  return { count: messages.length, messages };
}

/** `session.title` (§4.3). */
export async function sessionTitle(context: MethodContext) {
  const session = requireSession(context);
  const { params } = context;
  if (!('title' in params) || params.title === null) {
    return { title: session.agent.title() ?? '', session_key: session.storedId };
  }
  const raw = params.title;
  const cleaned = typeof raw === 'string' ? cleanTitle(raw) : '';
  if (!cleaned) fail(ErrorCode.titleRequired, 'title required');
  const pending = !session.agent.persisted;
  try {
    const stored = await session.agent.setTitle(cleaned);
    context.after(() => session.emit('session.info', context.gateway.info(session)));
    return { title: stored ?? cleaned, session_key: session.storedId, pending };
  } catch (error) {
    const code = (error as { code?: string }).code;
    const message = error instanceof Error ? error.message : String(error);
    if (code === 'title_taken') fail(ErrorCode.titleRefused, message);
    fail(ErrorCode.storeWriteFailed, `failed to set title: ${message}`);
  }
}

/** `session.usage` (§4.3). */
export async function sessionUsage(context: MethodContext) {
  const session = requireSession(context);
  return session.buildState === 'ready' ? usageOf(session.agent, true) : emptyUsage();
}

/** `session.status` (§4.3). */
export async function sessionStatus(context: MethodContext) {
  const session = requireSession(context);
  const info = context.gateway.info(session);
  const lines = ['Session Status', `Session ID: ${session.storedId}`, `Path: ${info.cwd}`];
  if (info.title) lines.push(`Title: ${info.title}`);
  lines.push(
    `Model: ${info.model} (${info.provider})`,
    `Created: ${localTime(session.startedAt * 1000)}`,
    `Last Activity: ${localTime(session.lastActive)}`,
    `Tokens: ${info.usage?.total ?? 0}`,
    `Agent Running: ${session.running ? 'Yes' : 'No'}`,
  );
  return { output: lines.join('\n') };
}

function localTime(ms: number): string {
  const date = new Date(ms);
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** `session.undo` (§4.3). */
export async function sessionUndo(context: MethodContext) {
  const session = requireSession(context);
  if (session.busy) fail(ErrorCode.sessionBusy, 'session busy — interrupt the current turn before /undo');
  const rows = await session.agent.history();
  if (!rows.some(isUserOriginated)) fail(ErrorCode.staleTarget, 'nothing to undo');
  if (!session.agent.persisted)
    fail(ErrorCode.historyWriteFailed, 'failed to persist undo: the core cannot cut an unpersisted transcript');
  try {
    const result = await session.agent.undo();
    session.inflight = null;
    return { removed: result.removed.length };
  } catch (error) {
    fail(
      ErrorCode.historyWriteFailed,
      `failed to persist undo: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** `session.compress` (§4.3). */
export async function sessionCompress(context: MethodContext) {
  const session = requireSession(context);
  const { gateway } = context;
  if (session.running) fail(ErrorCode.sessionBusy, 'session busy — /interrupt the current turn before /compress');
  if (session.compressing) fail(ErrorCode.sessionBusy, 'session busy — compression already running');
  session.compressing = true;
  try {
    const state = await session.waitForAgent(gateway.options.methodBuildWaitMs);
    if (state === 'timeout') fail(ErrorCode.agentInitFailed, 'agent initialization timed out');
    if (state !== 'ready') fail(ErrorCode.agentInitFailed, `agent initialization failed: ${session.buildFailure}`);
    const before = (await session.agent.history()).length;
    const usageBefore = session.agent.usage().context.estimatedTokens;
    const noop = () => ({
      status: 'compressed',
      removed: 0,
      before_messages: before,
      after_messages: before,
      before_tokens: usageBefore,
      after_tokens: usageBefore,
      summary: { noop: true, aborted: false, headline: 'Nothing to compress', token_line: '' },
    });
    if (before < 4) {
      return {
        ...noop(),
        usage: usageOf(session.agent, true),
        info: gateway.info(session),
        messages: await projectionOf(session),
      };
    }
    session.emit('status.update', { kind: 'compressing', text: `compressing ${before} messages…` });
    let result: Awaited<ReturnType<Agent['compress']>>;
    try {
      const focus = stringParam(context.params, 'focus_topic');
      result = await session.agent.compress({ force: true, ...(focus ? { focus } : {}) });
    } catch (error) {
      session.emit('status.update', { kind: 'ready', text: '' });
      fail(
        ErrorCode.compressionFailed,
        `compression failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    session.emit('status.update', { kind: 'ready', text: '' });
    if (result.skipped === 'busy')
      fail(ErrorCode.sessionBusy, 'session busy — /interrupt the current turn before /compress');
    const after = (await session.agent.history()).length;
    session.emit('session.info', gateway.info(session));
    const base = {
      usage: usageOf(session.agent, true),
      info: gateway.info(session),
      messages: await projectionOf(session),
    };
    if (result.skipped === 'too_short') return { ...noop(), ...base };
    const aborted = !result.ok;
    return {
      status: aborted ? 'aborted' : 'compressed',
      removed: aborted ? 0 : result.archivedRows,
      before_messages: before,
      after_messages: after,
      before_tokens: result.tokensBefore,
      after_tokens: result.tokensAfter,
      summary: {
        noop: false,
        aborted,
        headline: aborted ? 'Compression aborted' : `Compressed ${result.archivedRows} messages`,
        token_line: `${result.tokensBefore} → ${result.tokensAfter} tokens`,
        ...(aborted && result.error ? { note: result.error.message } : {}),
      },
      ...base,
    };
  } finally {
    session.compressing = false;
    gateway.afterTurn(session);
  }
}

/** `session.branch` (§4.3). */
export async function sessionBranch(context: MethodContext) {
  const source = requireSession(context);
  const { gateway, params } = context;
  if (source.busy) fail(ErrorCode.sessionBusy, 'session busy — interrupt the current turn before /branch');
  const rows = await source.agent.history();
  if (!rows.some(isUserOriginated)) fail(ErrorCode.nothingToBranch, 'nothing to branch — send a message first');
  const name = stringParam(params, 'name');
  const title = name ? cleanTitle(name) : '';
  if (title && (await gateway.host.store.isTitleTaken(title)))
    fail(ErrorCode.titleRefused, `The title "${title}" is already used by another session.`);
  const count = integerParam(params, 'count');
  let upToRowId: number | undefined;
  if (count !== undefined && count > 0) {
    let seen = 0;
    for (const row of rows) {
      if ((row.role === 'user' || row.role === 'assistant') && row.content.length > 0) seen += 1;
      if (seen === count) {
        upToRowId = row.rowId;
        break;
      }
    }
  }
  let agent: Agent;
  try {
    agent = await source.agent.branch({
      ...(title ? { title } : {}),
      ...(upToRowId !== undefined && upToRowId > 0 ? { upToRowId } : {}),
    });
  } catch (error) {
    fail(ErrorCode.historyWriteFailed, `branch failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const session = gateway.addSession(agent, { closeOnDisconnect: false, modelPin: source.modelPin });
  gateway.attach(session, context.connection);
  const messages = await projectionOf(session);
  context.after(() => {
    setTimeout(() => {
      if (!session.finalized) void session.startBuild();
    }, gateway.options.buildDelayMs);
  });
  return {
    session_id: session.runtimeId,
    stored_session_id: session.storedId,
    title: agent.title() ?? '',
    parent: source.storedId,
    message_count: messages.length,
    messages,
    info: gateway.info(session),
  };
}

/** `session.events.since` (§4.3, §9.3). */
export function sessionEventsSince(context: MethodContext) {
  const { gateway, params } = context;
  const id = typeof params.session_id === 'string' ? params.session_id : '';
  let lastSeen = 0;
  if ('last_seen' in params && params.last_seen !== null) {
    const value = params.last_seen;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
      fail(ErrorCode.invalidParams, 'invalid params: last_seen must be a non-negative integer');
    lastSeen = value;
  }
  const replay = gateway.rings.since(id, lastSeen);
  const live = gateway.sessions.get(id);
  return {
    events: replay.events,
    latest_seq: replay.latestSeq,
    truncated: replay.truncated,
    count: replay.events.length,
    epoch: gateway.replayEpoch,
    open_requests: live ? listOpenRequests(live, context.connection) : [],
  };
}
