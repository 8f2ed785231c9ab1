import { type AgentEvent, redactSecrets, type SessionRow, type SessionSummary, type StoredMessage } from '@hermes/core';
import type { Context, Hono } from 'hono';
import { approvalPayload } from './approval-payload.js';
import { ApiError, invalidField } from './http-error.js';
import { hexId, nativeTime, turnRunId } from './ids.js';
import { selectModel } from './model-selection.js';
import { isValidSessionId, normalizeContent, toTurnInput } from './normalize-input.js';
import { approvalSource, type LiveRun, type RunEventPayload, type RunRegistry } from './runs.js';
import {
  agentForSession,
  interruptReason,
  readJsonBody,
  type ServerContext,
  sessionKeyHeader,
} from './server-context.js';
import { SseWriter, streamSse, turnStreamOptions } from './sse-writer.js';
import { sessionBusy } from './turn-admission.js';

type SessionLike = SessionRow | SessionSummary;

function liveTurnRunId(server: ServerContext, sessionId: string): string | null {
  const turnId = server.host.live.turnOn(sessionId);
  return turnId === undefined ? null : turnRunId(turnId);
}

function sessionObject(server: ServerContext, session: SessionLike, withUsage = false): Record<string, unknown> {
  const isRow = 'inputTokens' in session;
  const object: Record<string, unknown> = {
    object: 'hermes.session',
    id: session.id,
    title: session.title,
    source: session.source,
    kind: session.kind,
    model: session.model,
    parent_session_id: session.parentSessionId,
    created_at: nativeTime(session.startedAt),
    updated_at: nativeTime(session.lastActivityAt),
    ended_at: session.endedAt === null ? null : nativeTime(session.endedAt),
    end_reason: session.endReason,
    message_count: session.messageCount,
    preview: 'preview' in session ? session.preview : '',
    hidden: session.hidden,
    estimated_cost_usd: isRow ? session.estimatedCostUsd : session.costUsd,
    // A run's id; else, for a turn no run started (a gateway turn, a chat completion), the id the runs API serves it
    // under (ADR 0076).
    active_run_id: server.admission.activeRunId(session.id) ?? liveTurnRunId(server, session.id),
  };
  if (withUsage && isRow)
    object.usage = {
      input_tokens: session.inputTokens,
      output_tokens: session.outputTokens,
      cache_read_tokens: session.cacheReadTokens,
      cache_write_tokens: session.cacheWriteTokens,
      reasoning_tokens: session.reasoningTokens,
      api_calls: session.apiCallCount,
    };
  return object;
}

/** A transcript row in the shape of section 21.4. */
export function messageObject(row: StoredMessage): Record<string, unknown> {
  const object: Record<string, unknown> = {
    id: row.rowId,
    role: row.role,
    content: row.content,
    timestamp: nativeTime(row.timestamp),
  };
  if (row.contentParts) object.content_parts = row.contentParts;
  if (row.role === 'assistant') {
    if (row.toolCalls) object.tool_calls = row.toolCalls;
    object.reasoning = row.reasoning;
    object.finish_reason = row.finishReason;
  }
  if (row.role === 'tool') {
    object.tool_call_id = row.toolCallId;
    object.tool_name = row.toolName;
  }
  if (row.displayKind) object.display_kind = row.displayKind;
  return object;
}

function integerParam(context: Context, name: string, minimum: number, maximum: number, fallback: number): number {
  const raw = context.req.query(name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw invalidField(name, `'${name}' must be an integer.`);
  const value = Number(raw);
  if (value < minimum || value > maximum) throw invalidField(name, `'${name}' is out of range.`);
  return value;
}

/** Session REST routes and native session chat (spec §20, §21). */
export function registerSessionRoutes(app: Hono, server: ServerContext, registry: RunRegistry): void {
  const { host } = server;
  const { store } = host;
  const requireSession = async (id: string) => {
    const row = await store.getSession(id);
    if (!row) throw new ApiError(404, 'session_not_found', `Session not found: ${id}`);
    return row;
  };

  app.get('/api/sessions', async (context) => {
    const limit = integerParam(context, 'limit', 1, 200, 50);
    const cursor = context.req.query('cursor');
    const source = context.req.query('source');
    const includeHidden = context.req.query('include_hidden');
    if (includeHidden !== undefined && !['true', 'false'].includes(includeHidden))
      throw invalidField('include_hidden', "'include_hidden' must be true or false.");
    const page = await store.listSessions({
      kinds: ['root', 'branch'],
      limit,
      includeHidden: includeHidden === 'true',
      ...(cursor ? { cursor } : {}),
      ...(source ? { sources: [source] } : {}),
    });
    return context.json({
      object: 'list',
      data: page.items.map((item) => sessionObject(server, item)),
      has_more: page.nextCursor !== null,
      next_cursor: page.nextCursor,
    });
  });

  app.post('/api/sessions', async (context) => {
    const body = await readJsonBody(context);
    if (body.id !== undefined && (typeof body.id !== 'string' || !isValidSessionId(body.id)))
      throw invalidField('id', 'Invalid session id.');
    if (body.title !== undefined && body.title !== null && typeof body.title !== 'string')
      throw invalidField('title', "'title' must be a string.");
    const named = body.id as string | undefined;
    // An id the server draws is one no session holds (ADR 0087); a 409 is for the client's own id.
    const id = named ?? (await host.newStoredSessionId());
    if (named !== undefined && (await store.getSession(id)))
      throw new ApiError(409, 'session_exists', `Session already exists: ${id}`);
    const title = typeof body.title === 'string' ? body.title : null;
    if (title !== null && (await store.isTitleTaken(title)))
      throw new ApiError(409, 'title_taken', `Title already in use: ${title}`);
    const row = await store.createSession({
      id,
      source: 'api_server',
      ...(title !== null ? { title, titleSource: 'user' as const } : {}),
    });
    return context.json(sessionObject(server, row), 201);
  });

  app.get('/api/sessions/:id', async (context) =>
    context.json(sessionObject(server, await requireSession(context.req.param('id')), true)),
  );

  app.patch('/api/sessions/:id', async (context) => {
    const id = context.req.param('id');
    const body = await readJsonBody(context);
    for (const key of Object.keys(body))
      if (key !== 'title' && key !== 'hidden') throw invalidField(key, `Unknown field '${key}'.`);
    if (body.title !== undefined && body.title !== null && typeof body.title !== 'string')
      throw invalidField('title', "'title' must be a string or null.");
    if (body.hidden !== undefined && typeof body.hidden !== 'boolean')
      throw invalidField('hidden', "'hidden' must be a boolean.");
    await requireSession(id);
    if (typeof body.title === 'string' && (await store.isTitleTaken(body.title, id)))
      throw new ApiError(409, 'title_taken', `Title already in use: ${body.title}`);
    if (body.title !== undefined) await store.setTitle(id, body.title as string | null, 'user');
    if (typeof body.hidden === 'boolean') await store.setHidden(id, body.hidden);
    return context.json(sessionObject(server, await requireSession(id), true));
  });

  app.delete('/api/sessions/:id', async (context) => {
    const id = context.req.param('id');
    await requireSession(id);
    if (server.admission.busyWith(id)) throw sessionBusy(id);
    const live = host.getAgent(id);
    if (live) await live.close().catch(() => undefined);
    await store.deleteSession(id);
    return context.json({ id, object: 'hermes.session', deleted: true });
  });

  app.get('/api/sessions/:id/messages', async (context) => {
    const id = context.req.param('id');
    await requireSession(id);
    const limit = integerParam(context, 'limit', 1, 1000, 200);
    const after = integerParam(context, 'after', 0, Number.MAX_SAFE_INTEGER, 0);
    // The rows after `after` only: a later page reads what it lists, not the transcript before it.
    const rows = (await store.loadConversation(id, { fromRowId: after + 1 })).filter(
      (row) => row.displayKind !== 'hidden',
    );
    return context.json({
      object: 'list',
      session_id: id,
      has_more: rows.length > limit,
      data: rows.slice(0, limit).map(messageObject),
    });
  });

  app.post('/api/sessions/:id/fork', async (context) => {
    const id = context.req.param('id');
    const body = await readJsonBody(context);
    if (body.title !== undefined && typeof body.title !== 'string')
      throw invalidField('title', "'title' must be a string.");
    if (body.up_to_row_id !== undefined && !Number.isInteger(body.up_to_row_id))
      throw invalidField('up_to_row_id', "'up_to_row_id' must be an integer.");
    await requireSession(id);
    if (typeof body.title === 'string' && (await store.isTitleTaken(body.title)))
      throw new ApiError(409, 'title_taken', `Title already in use: ${body.title}`);
    const child = await store.branch(id, {
      source: 'api_server',
      ...(typeof body.title === 'string' ? { title: body.title } : {}),
      ...(typeof body.up_to_row_id === 'number' ? { upToRowId: body.up_to_row_id } : {}),
    });
    return context.json(sessionObject(server, child), 201);
  });

  const startChat = async (context: Context, streaming: boolean) => {
    const sessionId = context.req.param('id') ?? '';
    const sessionKey = sessionKeyHeader(context);
    const body = await readJsonBody(context);
    await requireSession(sessionId);
    const message = normalizeContent(body.message ?? body.input ?? '', 'message');
    if (!message.text && message.images.length === 0)
      throw new ApiError(400, 'missing_message', 'Missing message.', { param: 'message' });
    const systemText =
      typeof body.system_message === 'string'
        ? body.system_message
        : typeof body.instructions === 'string'
          ? body.instructions
          : '';
    const selection = selectModel(host, server.settings, body, true);
    const runId = hexId('run_', 24);
    const slot = server.admission.admit(sessionId, runId, 'session_chat');
    server.metrics.turns += 1;
    await slot.guard(() =>
      store.runs.create({ id: runId, sessionId, input: { body: body as never }, holder: host.holderId }),
    );
    const run = registry.register(runId, sessionId, selection.display, selection);
    if (streaming) {
      run.coreLog = [];
      // While this run holds the session's claim, every turn event of the session in this process is its turn's: the
      // stream reads them from the host's live-session hub, as the gateway does (ADR 0053).
      const stop = host.live.subscribe(sessionId, ({ event, remote }) => {
        if (remote || event.turnId === null || run.coreLog === null) return;
        run.coreLog.push(event);
        for (const wake of run.subscribers) wake();
      });
      const stopWhenSettled = () => {
        if (!run.terminal) return;
        run.subscribers.delete(stopWhenSettled);
        stop();
      };
      run.subscribers.add(stopWhenSettled);
    }
    registry.start(run, slot, async () => {
      const agent = await agentForSession(host, sessionId, false);
      if (agent.model) Object.assign(run.runtime, { provider: agent.model.provider, model: agent.model.model });
      return { agent, input: toTurnInput(message, systemText), model: selection.spec, memoryScope: sessionKey };
    });
    context.header('X-Hermes-Session-Id', sessionId);
    if (sessionKey !== undefined) context.header('X-Hermes-Session-Key', sessionKey);
    return { run, message };
  };

  const waitTerminal = (run: LiveRun, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (run.terminal) return resolve();
      const wake = () => {
        if (run.terminal) {
          run.subscribers.delete(wake);
          resolve();
        }
      };
      run.subscribers.add(wake);
      signal.addEventListener('abort', () => run.controller.abort(interruptReason('client_disconnect', 'gone')));
    });

  /**
   * A session chat's turn result (its whole text) is read by its own handler only. Once that handler is done with it,
   * or its client is gone, the settled run, kept an hour for its backlog (spec §19.9), no longer keeps it (ADR 0038).
   */
  const dropResultWhenSettled = (run: LiveRun) => {
    const drop = () => {
      if (!run.terminal) return;
      run.subscribers.delete(drop);
      run.result = null;
    };
    run.subscribers.add(drop);
    drop();
  };

  /**
   * The turn's stored rows. Read from its first row id on, not the whole transcript: a long session's every turn read
   * all of it back to pick out its own few rows (ADR 0093).
   */
  const turnMessages = async (run: LiveRun) => {
    const ids = new Set([...(run.result?.userRowId ? [run.result.userRowId] : []), ...(run.result?.rowIds ?? [])]);
    if (ids.size === 0) return [];
    const rows = await store.loadConversation(run.sessionId, { fromRowId: Math.min(...ids) });
    return rows.filter((row) => ids.has(row.rowId)).map(messageObject);
  };

  app.post('/api/sessions/:id/chat', async (context) => {
    const { run } = await startChat(context, false);
    await waitTerminal(run, context.req.raw.signal);
    const terminal = (run.terminalPayload ?? {}) as Record<string, unknown>;
    const { event: _event, run_id: _run, timestamp: _time, seq: _seq, output, ...flags } = terminal;
    const content = run.result?.finalText ?? (output as string | undefined) ?? '';
    dropResultWhenSettled(run);
    return context.json({
      object: 'hermes.session.chat.completion',
      session_id: run.sessionId,
      run_id: run.id,
      message: { role: 'assistant', content },
      ...flags,
      usage: flags.usage ?? null,
      runtime: run.runtime,
    });
  });

  app.post('/api/sessions/:id/chat/stream', async (context) => {
    const { run, message } = await startChat(context, true);
    return streamSse(context, async (streamApi) => {
      const writer = new SseWriter(
        streamApi,
        server.keepaliveMs,
        turnStreamOptions(server.settings.streamBufferBytes, host.logger.warn.bind(host.logger), 'session.chat'),
      );
      streamApi.onAbort(() => run.controller.abort(interruptReason('client_disconnect', 'the client disconnected')));
      let seq = 1;
      /** `shared`: the answer's text, which the closing frames each hold (encoded once, ADR 0097). */
      const send = (event: string, payload: Record<string, unknown>, shared?: string) => {
        // A delta frame being merged takes its `seq` when it closes, before this one's.
        writer.closeMerge();
        const framed = { session_id: run.sessionId, run_id: run.id, seq, ts: Date.now() / 1000, ...payload };
        seq += 1;
        return writer.frame(framed, { event, shared });
      };
      const messageId = hexId('msg_', 24);
      // Answer text goes out as mergeable `assistant.delta` frames (ADR 0062): the deltas of one model chunk, or of
      // however long the client's socket is congested, join one frame. A frame a delta cost the server about ten times
      // its text (its ids, seq and ts), held for a client that does not read until the bound cut it.
      const deltaHead = `${JSON.stringify({ session_id: run.sessionId, run_id: run.id }).slice(0, -1)},"seq":`;
      const deltaMessage = `,"message_id":${JSON.stringify(messageId)},"delta":`;
      const encodeDelta = (text: string) => {
        const json = `${deltaHead}${seq},"ts":${Date.now() / 1000}${deltaMessage}${JSON.stringify(text)}}`;
        seq += 1;
        return json;
      };
      await send('run.started', { user_message: { role: 'user', content: message.text }, runtime: run.runtime });
      await send('message.started', { message: { id: messageId, role: 'assistant' } });
      const log = run.coreLog ?? [];
      // However the stream ends (cut, client gone, done), the run stops collecting core events for it: a settled run
      // is kept an hour (spec §19.9), and a cut stream's unread events must not be kept with it (ADR 0038).
      streamApi.onAbort(() => {
        run.coreLog = null;
        log.length = 0;
        dropResultWhenSettled(run);
      });
      let next = 0;
      let deltas = 0;
      const toolNames = new Map<string, string>();
      const requested = new Set<string>();
      const reasoned = new Set<string>();
      const showReasoning = server.settings.showReasoning;
      for (;;) {
        while (next < log.length) {
          const event = log[next] as AgentEvent;
          next += 1;
          switch (event.type) {
            case 'message.delta':
              if (event.text) {
                deltas += 1;
                await writer.mergeable(event.text, encodeDelta, 'assistant.delta');
              }
              break;
            case 'message.end':
              if (event.hasToolCalls && event.text)
                await send('assistant.commentary', { message_id: messageId, text: event.text, already_streamed: true });
              break;
            case 'reasoning.delta':
              reasoned.add(event.messageId);
              if (showReasoning) await send('reasoning.delta', { delta: event.text });
              break;
            case 'reasoning.end':
              if (showReasoning && !reasoned.has(event.messageId) && event.text)
                await send('reasoning.delta', { delta: event.text });
              break;
            case 'tool.start':
              toolNames.set(event.callId, event.name);
              await send('tool.started', {
                tool_call_id: event.callId,
                tool: event.name,
                preview: redactSecrets(event.title).slice(0, 200),
              });
              break;
            case 'tool.progress':
              await send('tool.progress', {
                tool_call_id: event.callId,
                tool: toolNames.get(event.callId) ?? null,
                text: redactSecrets(event.output ?? event.message ?? ''),
              });
              break;
            case 'tool.end': {
              const duration = Math.round(event.durationMs) / 1000;
              if (event.status === 'completed')
                await send('tool.completed', {
                  tool_call_id: event.callId,
                  tool: event.name,
                  duration,
                  preview: redactSecrets(event.result).slice(0, 500),
                });
              else
                await send('tool.failed', {
                  tool_call_id: event.callId,
                  tool: event.name,
                  duration,
                  status: event.status,
                  error: redactSecrets(event.result).slice(0, 500),
                });
              break;
            }
            case 'approval.request': {
              requested.add(event.request.requestId);
              const { run_id: _run, ...payload } = approvalPayload(run.id, event.request);
              await send('approval.request', payload);
              break;
            }
            case 'approval.resolved':
              if (requested.has(event.requestId))
                await send('approval.responded', {
                  choice: event.choice ?? 'deny',
                  request_id: event.requestId,
                  resolved: 1,
                  source: approvalSource(event.source),
                });
              break;
            default:
              break;
          }
        }
        // Read events leave the log, so a long turn's stream holds only what its client has not been sent yet.
        log.splice(0, next);
        next = 0;
        if (run.terminal && next >= log.length) {
          const terminal = (run.terminalPayload ?? { event: 'run.failed' }) as RunEventPayload;
          const { event: name, run_id: _run, timestamp: _time, seq: _seq, ...payload } = terminal;
          const finalText = run.result?.finalText ?? '';
          if (deltas === 0 && finalText) await send('assistant.delta', { message_id: messageId, delta: finalText });
          const { output: _output, usage, runtime: _runtime, ...flags } = payload;
          await send('assistant.completed', { message_id: messageId, content: finalText, ...flags }, finalText);
          await send(
            name,
            { ...payload, messages: await turnMessages(run), usage: usage ?? null, runtime: run.runtime },
            finalText,
          );
          await send('done', {});
          dropResultWhenSettled(run);
          await writer.finish();
          return;
        }
        if (streamApi.aborted) return;
        await new Promise<void>((resolve) => {
          const wake = () => {
            run.subscribers.delete(wake);
            resolve();
          };
          run.subscribers.add(wake);
          if (next < log.length || run.terminal) wake();
        });
      }
    });
  });
}
