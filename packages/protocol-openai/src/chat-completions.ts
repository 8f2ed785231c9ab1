import { hash } from 'node:crypto';
import type { Agent, AgentEvent, ApprovalDecision, TurnResult } from '@hermes/core';
import { pendingToolCalls, redactSecrets } from '@hermes/core';
import type { Context } from 'hono';
import { approvalPayload } from './approval-payload.js';
import {
  chatContinuation,
  chatToolCalls,
  checkResults,
  parseClientTools,
  storedOpenTurn,
  toolConflictError,
} from './client-tools.js';
import { ApiError } from './http-error.js';
import { hexId } from './ids.js';
import { selectModel } from './model-selection.js';
import {
  isValidSessionId,
  normalizeContent,
  normalizeConversation,
  parseStreamFlag,
  toChatMessage,
  toTurnInput,
} from './normalize-input.js';
import {
  agentForSession,
  copyRow,
  interruptReason,
  readJsonBody,
  type ServerContext,
  sessionKeyHeader,
} from './server-context.js';
import { paceClientTurn, SseWriter, streamSse, turnStreamOptions } from './sse-writer.js';
import { chatFinishReason, chatUsage, hermesOutcome, outcomeErrorCode, outcomeErrorText } from './turn-outcome.js';

const TOOL_EMOJI: Record<string, string> = {
  read: '📖',
  edit: '✏️',
  delete: '🗑️',
  move: '📦',
  search: '🔍',
  execute: '💻',
  think: '💭',
  fetch: '🌐',
  other: '🔧',
};

/** The decision for a command needing approval on a request that has no approval channel. */
export const NO_APPROVAL_CHANNEL = {
  choice: 'deny',
  policy: 'this API request has no approval channel, so commands that need approval are not run (no person was asked)',
} as const satisfies ApprovalDecision;

/** How long a settled completion id keeps answering `approval_not_active` (spec §13.7). */
const APPROVAL_ID_RETENTION_MS = 3_600_000;

/** Parses `X-Hermes-Events` or falls back to the setting (spec §9.3). */
function selectedFrames(header: string | undefined, fallback: string[]): Set<string> {
  const tokens = (header ?? fallback.join(','))
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter(Boolean);
  return new Set(tokens.filter((token) => token === 'tool' || token === 'status' || token === 'approval'));
}

/** The derived session id of a header-less conversation (spec §13.3). */
export function derivedSessionId(systemText: string, firstUserText: string): string {
  return `api-${hash('sha256', `${systemText}\n${firstUserText}`).slice(0, 16)}`;
}

/** Appends the rows an ephemeral turn produced to its derived session, and records the turn's usage there. */
async function persistDerived(
  server: ServerContext,
  agent: Agent,
  seedCount: number,
  sessionId: string,
  result: TurnResult,
): Promise<void> {
  try {
    const rows = (await agent.history()).slice(seedCount);
    // One transaction for the session (when new), the rows and the usage (ADR 0021).
    await server.host.store.recordTurn(sessionId, {
      create: { source: 'api_server' },
      rows: rows.map((row) => copyRow(row, result.turnId)),
      ...(result.route
        ? {
            usage: {
              provider: result.route.provider,
              model: result.route.model,
              task: 'main' as const,
              usage: result.usage.turn,
              costUsd: result.cost.turnUsd ?? 0,
              costStatus: result.cost.status,
            },
          }
        : {}),
    });
  } catch (error) {
    server.host.logger.warn('could not record a header-less turn', { error: String(error) });
  }
}

/** `POST /v1/chat/completions` (spec §13). */
export async function handleChatCompletions(server: ServerContext, context: Context): Promise<Response> {
  const { host, settings, admission } = server;
  const headerSession = context.req.header('X-Hermes-Session-Id');
  if (headerSession !== undefined && !isValidSessionId(headerSession))
    throw new ApiError(400, 'invalid_session_id', 'Invalid X-Hermes-Session-Id.', { param: 'X-Hermes-Session-Id' });
  const sessionKey = sessionKeyHeader(context);
  const body = await readJsonBody(context);
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    throw new ApiError(400, 'missing_required_field', "Missing or invalid 'messages' field", { param: 'messages' });
  const streaming = parseStreamFlag(body.stream);
  const clientTools = parseClientTools(body, 'chat', host);
  const items = messages.map((message) =>
    typeof message === 'object' && message !== null ? message : { role: null },
  ) as Record<string, unknown>[];
  // A list that ends with tool results continues the turn that stopped for the client's tools (ADR 0052): the
  // messages up to that turn's user message are read as any body is.
  const continuation = chatContinuation(items);
  const conversation =
    continuation && continuation.userIndex < 0
      ? {
          systemText: items
            .map((item, index) =>
              item.role === 'system' || item.role === 'developer'
                ? normalizeContent(item.content, `messages[${index}].content`).text
                : '',
            )
            .filter(Boolean)
            .join('\n'),
          history: [],
          input: null,
          firstUserText: '',
        }
      : normalizeConversation(
          (continuation ? items.slice(0, continuation.userIndex + 1) : items) as { role: unknown; content: unknown }[],
          (index) => `messages[${index}]`,
          'No user message found in messages',
        );
  const selection = selectModel(host, settings, body, settings.directModelRequests);
  const includeUsage =
    streaming && (body.stream_options as { include_usage?: unknown } | null | undefined)?.include_usage === true;
  const frames = streaming
    ? selectedFrames(context.req.header('X-Hermes-Events'), settings.chatStreamEvents)
    : new Set();
  const sessionId = headerSession ?? derivedSessionId(conversation.systemText, conversation.firstUserText);
  const completionId = hexId('chatcmpl-', 29);
  const slot = admission.admit(sessionId, completionId, 'chat');
  server.metrics.turns += 1;
  const controller = new AbortController();
  const approvalQueue = frames.has('approval') ? server.approvals.open(completionId) : null;
  const pendingApprovalFrames: unknown[] = [];
  let notifyApproval: (() => void) | null = null;
  const approve = approvalQueue
    ? server.approvals.callback(approvalQueue, (request) => {
        pendingApprovalFrames.push(approvalPayload(completionId, request));
        notifyApproval?.();
      })
    : // Without an approval channel the agent is denied at once rather than stalling until the timeout (spec §13.7).
      // Nobody was asked, so the model is told it was the server's policy, not the user.
      async () => NO_APPROVAL_CHANNEL;
  const settleApprovals = () => {
    if (!approvalQueue) return;
    approvalQueue.settled = true;
    approvalQueue.settledAt = Date.now();
    setTimeout(() => server.approvals.queues.delete(completionId), APPROVAL_ID_RETENTION_MS).unref();
  };
  let seedCount = 0;
  let continuedTurnId: string | undefined;
  // Everything up to the turn's start may throw (a client gone while paced, a session that cannot be resumed, input
  // the agent refuses): the slot goes back then; after it, the turn's settle gives it back (ADR 0037).
  const { agent, run } = await slot.guard(async () => {
    try {
      await paceClientTurn(admission, context);
      let agent: Agent;
      if (headerSession !== undefined) {
        agent = await agentForSession(host, headerSession);
        // The stored session holds the open turn: the results must answer the calls it waits for.
        if (continuation) checkResults(continuation.results, pendingToolCalls(await agent.history()));
      } else {
        // Without the header the body is the history (spec §13.3). The open turn comes from the derived session,
        // where the server recorded it with its own tool calls; the body's copy of it is the fallback.
        const stored = continuation ? await storedOpenTurn(host, sessionId, continuation) : null;
        if (stored) continuedTurnId = stored.turnId;
        const seed = [
          ...conversation.history.map(toChatMessage),
          ...(stored
            ? stored.rows
            : continuation
              ? [...(conversation.input ? [toChatMessage(conversation.input)] : []), ...continuation.turnRows]
              : []),
        ];
        if (continuation)
          checkResults(
            continuation.results,
            pendingToolCalls(
              seed.map((message) => ({
                role: message.role,
                displayKind: null,
                toolCalls: message.toolCalls ?? null,
                toolCallId: message.toolCallId ?? null,
              })),
            ),
          );
        agent = await host.newSession({ ephemeral: true, seed, source: 'api_server' });
        seedCount = (await agent.history()).length;
      }
      const input = continuation
        ? {
            toolResults: continuation.results.map(({ callId, content }) => ({ callId, content })),
            ...(conversation.systemText ? { ephemeralSystemPrompt: conversation.systemText } : {}),
          }
        : toTurnInput(conversation.input as NonNullable<typeof conversation.input>, conversation.systemText);
      let run: ReturnType<Agent['runTurn']>;
      try {
        run = agent.runTurn(input, {
          signal: controller.signal,
          ...(selection.spec ? { model: selection.spec } : {}),
          ...(sessionKey !== undefined ? { memoryScope: sessionKey } : {}),
          // Only a session named by the header is the claim's; a derived one runs on a fresh ephemeral agent.
          ...(headerSession !== undefined && slot.claim ? { claim: slot.claim } : {}),
          ...(clientTools.tools.length > 0 ? { clientTools: clientTools.tools } : {}),
          ...(clientTools.toolChoice !== undefined ? { toolChoice: clientTools.toolChoice } : {}),
          ...(continuedTurnId !== undefined ? { turnId: continuedTurnId } : {}),
          callbacks: { approve },
        });
      } catch (error) {
        if (headerSession === undefined) await agent.close().catch(() => undefined);
        throw toolConflictError(error);
      }
      return { agent, run };
    } catch (error) {
      settleApprovals();
      throw error;
    }
  });
  const created = Math.floor(Date.now() / 1000);
  const model = selection.display;
  const settle = run.result.then(async (result) => {
    try {
      if (headerSession === undefined) {
        await persistDerived(server, agent, seedCount, sessionId, result);
        await agent.close().catch(() => undefined);
      }
    } finally {
      settleApprovals();
    }
    return result;
  });
  slot.releaseWhen(settle);
  context.header('X-Hermes-Session-Id', sessionId);
  if (sessionKey !== undefined) context.header('X-Hermes-Session-Key', sessionKey);

  if (!streaming) {
    const onAbort = () => controller.abort(interruptReason('client_disconnect', 'the client disconnected'));
    context.req.raw.signal.addEventListener('abort', onAbort, { once: true });
    for await (const _event of run) {
      // Events are not needed for a JSON answer; draining them keeps the core's buffer from filling.
    }
    const result = await settle;
    context.req.raw.signal.removeEventListener('abort', onAbort);
    const code = outcomeErrorCode(result);
    if (result.outcome !== 'completed' && code !== 'iteration_limit' && result.finalText === '') {
      throw new ApiError(502, 'agent_incomplete', outcomeErrorText(result), { hermes: hermesOutcome(result) });
    }
    const message: Record<string, unknown> = { role: 'assistant', content: result.finalText, refusal: null };
    if (result.clientToolCalls) {
      // The OpenAI shape of a step that called the client's tools: the calls, and the step's text or null.
      message.content = result.finalText === '' ? null : result.finalText;
      message.tool_calls = chatToolCalls(result.clientToolCalls);
    }
    if (settings.showReasoning && result.lastReasoning) message.reasoning_content = result.lastReasoning;
    const answer: Record<string, unknown> = {
      id: completionId,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOf(result) }],
      usage: chatUsage(result.usage.turn),
    };
    if (result.outcome !== 'completed') {
      const hermes = hermesOutcome(result);
      answer.hermes = hermes;
      context.header('X-Hermes-Completed', 'false');
      context.header('X-Hermes-Partial', String(hermes.partial));
      context.header('X-Hermes-Error', hermes.error_code);
    }
    return context.json(answer);
  }

  const base = { id: completionId, object: 'chat.completion.chunk', created, model };
  const usageKey = includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null, extra = {}) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...usageKey,
    ...extra,
  });
  // A text delta is most of a stream's frames: its JSON is the fixed envelope around the encoded text, built once, with
  // the same bytes `JSON.stringify(chunk({ content }))` gives.
  const envelope = JSON.stringify(chunk({ content: '\u0000' })).split('"\\u0000"');
  const [contentHead, contentTail] = envelope;
  const contentChunk =
    envelope.length === 2
      ? (text: string) => `${contentHead}${JSON.stringify(text)}${contentTail}`
      : (text: string) => JSON.stringify(chunk({ content: text }));
  let writer: SseWriter | null = null;
  let contentSent = false;
  const finishAndClose = async (result: TurnResult | null) => {
    if (!writer) return;
    if (result && !contentSent && result.finalText !== '') await writer.frame(chunk({ content: result.finalText }));
    // Each call the run stopped for is one delta with its id, name and whole arguments, indexed as OpenAI streams them.
    for (const [index, call] of chatToolCalls(result?.clientToolCalls ?? []).entries())
      await writer.frame(chunk({ tool_calls: [{ index, ...call }] }));
    const finishReason = result ? finishReasonOf(result) : 'error';
    const failed = result?.outcome !== 'completed';
    const extra = failed
      ? {
          error: {
            message: result ? outcomeErrorText(result) : 'Internal server error',
            type: 'server_error',
            param: null,
            code: result ? outcomeErrorCode(result) : 'agent_error',
          },
          ...(result ? { hermes: hermesOutcome(result) } : {}),
        }
      : {};
    await writer.frame(chunk({}, finishReason, extra));
    if (includeUsage && result) await writer.frame({ ...base, choices: [], usage: chatUsage(result.usage.turn) });
    await writer.frame('[DONE]');
    await writer.finish();
  };
  return streamSse(
    context,
    async (streamApi) => {
      writer = new SseWriter(
        streamApi,
        server.keepaliveMs,
        turnStreamOptions(settings.streamBufferBytes, host.logger.warn.bind(host.logger), 'chat.completions'),
      );
      const sse = writer;
      // The stream's abort is the client's disconnect (the node response's `close`, or hono's stream cancelled). The
      // request's own `signal` is not read: @hono/node-server builds an AbortController for it on first access.
      streamApi.onAbort(() => controller.abort(interruptReason('client_disconnect', 'the client disconnected')));
      notifyApproval = () => {
        for (const payload of pendingApprovalFrames.splice(0)) void sse.frame(payload, { event: 'approval.request' });
      };
      await sse.frame(chunk({ role: 'assistant', content: '' }));
      const started = new Set<string>();
      const reasoningSent = new Set<string>();
      for await (const event of run as AsyncIterable<AgentEvent>) {
        if (event.type === 'message.delta' && event.text) {
          contentSent = true;
          // Deltas that arrive in one burst share a chunk (spec §13.6: deltas may be coalesced).
          await sse.mergeable(event.text, contentChunk);
        } else if (event.type === 'reasoning.delta' && settings.showReasoning) {
          reasoningSent.add(event.messageId);
          await sse.frame(chunk({ reasoning_content: event.text }));
        } else if (event.type === 'reasoning.end' && settings.showReasoning && !reasoningSent.has(event.messageId)) {
          if (event.text) await sse.frame(chunk({ reasoning_content: event.text }));
        } else if (event.type === 'tool.start' && frames.has('tool') && !event.name.startsWith('_')) {
          started.add(event.callId);
          await sse.frame(
            {
              tool: event.name,
              emoji: TOOL_EMOJI[event.kind] ?? TOOL_EMOJI.other,
              label: redactSecrets(event.title).slice(0, 120),
              toolCallId: event.callId,
              status: 'running',
            },
            { event: 'hermes.tool.progress' },
          );
        } else if (event.type === 'tool.end' && frames.has('tool') && started.has(event.callId)) {
          await sse.frame(
            {
              tool: event.name,
              toolCallId: event.callId,
              status: event.status === 'completed' ? 'completed' : 'failed',
            },
            { event: 'hermes.tool.progress' },
          );
        } else if (frames.has('status')) {
          const status = statusFrame(event);
          if (status) await sse.frame(status, { event: 'hermes.status' });
        }
      }
      const result = await settle;
      if (sse.closed) return;
      await finishAndClose(result);
    },
    async (error) => {
      host.logger.error('chat stream failed', { error: redactSecrets(String(error)) });
      controller.abort(interruptReason('internal_error', 'the handler failed'));
      await finishAndClose(null);
    },
  );
}

/** `finish_reason`: `tool_calls` when the run stopped for the client's tools (ADR 0052), else spec §13.5. */
function finishReasonOf(result: TurnResult): string {
  return result.clientToolCalls ? 'tool_calls' : chatFinishReason(result);
}

function statusFrame(event: AgentEvent): { kind: string; message: string } | null {
  switch (event.type) {
    case 'status':
      return { kind: event.phase, message: event.text };
    case 'retry':
      return {
        kind: 'retrying',
        message: `Retrying (attempt ${event.attempt}/${event.maxRetries}) in ${Math.round(event.delayMs / 1000)}s`,
      };
    case 'fallback':
      return { kind: 'fallback', message: `Falling back to ${event.to.spec}` };
    case 'compaction.start':
      return { kind: 'compressing', message: 'Compressing the conversation' };
    case 'compaction.end':
      return { kind: 'compressed', message: 'Conversation compressed' };
    default:
      return null;
  }
}
