import type { AgentEvent, ChatMessage, ClientToolResult, JsonValue, ResponseRecord, TurnResult } from '@hermes/core';
import { pendingToolCalls, redactSecrets, TextChunks } from '@hermes/core';
import type { Context, Hono } from 'hono';
import { NO_APPROVAL_CHANNEL } from './chat-completions.js';
import {
  checkResults,
  type IndexedResult,
  parseClientTools,
  responsesContinuation,
  toolConflictError,
} from './client-tools.js';
import { ApiError, invalidField } from './http-error.js';
import { hexId } from './ids.js';
import { historyRows, resolveItemReferences } from './item-references.js';
import { selectModel } from './model-selection.js';
import { normalizeConversation, parseStreamFlag, toTurnInput } from './normalize-input.js';
import { createNewSession, placeTurn, previousResponse } from './placement.js';
import {
  agentForSession,
  interruptReason,
  readJsonBody,
  type ServerContext,
  sessionKeyHeader,
} from './server-context.js';
import { paceClientTurn, SseWriter, streamSse, turnStreamOptions } from './sse-writer.js';
import { outcomeErrorCode, outcomeErrorText, responsesUsage } from './turn-outcome.js';

const CUT = 16_384;
function cut(value: string): string {
  return value.length > CUT ? `${value.slice(0, CUT)}…[truncated ${value.length - CUT} chars]` : value;
}

type Item = Record<string, unknown> & { id: string; type: string };

/** The `server_label` of the `mcp_call` items that stand for the agent's own tool calls. */
const SERVER_LABEL = 'hermes';

/** Builds a response object (spec §14.4). */
function responseObject(fields: {
  id: string;
  createdAt: number;
  status: string;
  model: string;
  output: Item[];
  usage: unknown;
  error: unknown;
  incompleteDetails: unknown;
  instructions: string | null;
  metadata: Record<string, string>;
  previousResponseId: string | null;
  store: boolean;
  truncation: string;
  tools: unknown[];
  toolChoice: unknown;
}) {
  return {
    id: fields.id,
    object: 'response',
    created_at: fields.createdAt,
    status: fields.status,
    model: fields.model,
    output: fields.output,
    usage: fields.usage,
    error: fields.error,
    incomplete_details: fields.incompleteDetails,
    instructions: fields.instructions,
    metadata: fields.metadata,
    parallel_tool_calls: false,
    temperature: null,
    top_p: null,
    tool_choice: fields.toolChoice,
    tools: fields.tools,
    previous_response_id: fields.previousResponseId,
    store: fields.store,
    truncation: fields.truncation,
  };
}

/** Status fields of a settled turn (spec §14.4). */
function outcomeFields(result: TurnResult) {
  if (result.outcome === 'completed') {
    if (result.finishReason === 'length')
      return { status: 'incomplete', error: null, incompleteDetails: { reason: 'max_output_tokens' } };
    if (result.finishReason === 'content_filter')
      return { status: 'incomplete', error: null, incompleteDetails: { reason: 'content_filter' } };
    return { status: 'completed', error: null, incompleteDetails: null };
  }
  if (result.outcome === 'cancelled')
    return { status: 'incomplete', error: null, incompleteDetails: { reason: 'interrupted' } };
  const code = outcomeErrorCode(result) === 'iteration_limit' ? 'iteration_limit' : 'agent_error';
  return { status: 'failed', error: { code, message: outcomeErrorText(result) }, incompleteDetails: null };
}

/** `/v1/responses` routes (spec §14). */
export function registerResponsesRoutes(app: Hono, server: ServerContext): void {
  const { host, settings, admission } = server;
  const store = host.store.responses;

  app.get('/v1/responses/:id', async (context) => {
    const id = context.req.param('id');
    const record = await store.get(id);
    if (!record) throw new ApiError(404, 'response_not_found', `Response not found: ${id}`);
    return context.json((record.request as { object?: unknown }).object ?? null);
  });

  app.delete('/v1/responses/:id', async (context) => {
    const id = context.req.param('id');
    if (!(await store.delete(id))) throw new ApiError(404, 'response_not_found', `Response not found: ${id}`);
    return context.json({ id, object: 'response', deleted: true });
  });

  app.post('/v1/responses', (context) => createResponse(server, context));

  async function createResponse(serverContext: ServerContext, context: Context): Promise<Response> {
    const sessionKey = sessionKeyHeader(context);
    const body = await readJsonBody(context);
    if (body.input === undefined || body.input === null)
      throw new ApiError(400, 'missing_required_field', "Missing 'input' field", { param: 'input' });
    if (typeof body.input !== 'string' && !Array.isArray(body.input))
      throw invalidField('input', "'input' must be a string or array");
    const streaming = parseStreamFlag(body.stream);
    const storeFlag = body.store === undefined ? true : body.store;
    if (typeof storeFlag !== 'boolean') throw invalidField('store', "'store' must be a boolean.");
    const truncation = body.truncation ?? 'disabled';
    if (truncation !== 'disabled' && truncation !== 'auto') throw invalidField('truncation', 'Invalid truncation.');
    const metadata = (body.metadata ?? {}) as Record<string, unknown>;
    if (
      typeof metadata !== 'object' ||
      Array.isArray(metadata) ||
      Object.values(metadata).some((v) => typeof v !== 'string')
    )
      throw invalidField('metadata', "'metadata' must be an object of strings.");
    const conversationName =
      typeof body.conversation === 'string'
        ? body.conversation
        : typeof (body.conversation as { id?: unknown } | undefined)?.id === 'string'
          ? (body.conversation as { id: string }).id
          : null;
    if (conversationName !== null && body.previous_response_id !== undefined)
      throw invalidField('conversation', 'Use either conversation or previous_response_id.');
    const inputItems = (typeof body.input === 'string' ? [body.input] : (body.input as unknown[])).map((item) =>
      typeof item === 'string' ? { role: 'user', content: item } : (item as Record<string, unknown>),
    );
    const resolved = await resolveItemReferences(store, inputItems);
    const clientTools = parseClientTools(body, 'responses', host);
    // An input that ends with function_call_output items continues the turn that stopped for the client's tools
    // (ADR 0052); the items up to that turn's user message are read as any input is.
    const continuation = responsesContinuation(resolved.items);
    const kept = (continuation ? resolved.items.slice(0, continuation.userPosition + 1) : resolved.items).filter(
      ({ item }) =>
        // Tool items sent back by clients are display copies; the session's transcript carries the calls.
        !['reasoning', 'function_call', 'function_call_output', 'mcp_call'].includes(String(item.type ?? '')),
    );
    const items = kept.map(({ item }) => item) as { role: unknown; content: unknown }[];
    let previous: ResponseRecord | null = null;
    if (typeof body.previous_response_id === 'string') {
      previous = await previousResponse(host, body.previous_response_id);
    } else if (conversationName !== null) {
      previous = await store.latestForConversation(conversationName);
    } else if (continuation) {
      // The whole conversation sent again: the stored response that holds its calls is the chain (the newest one),
      // found through the ids of its items that the input carries (`function_call` items sent in full with their
      // id, or any `item_reference`: the AI SDK references the step's message and sends the call without an id).
      const callIds = new Set(continuation.outputs.map((output) => output.callId));
      const itemIds = [
        ...continuation.callItemIds,
        ...inputItems.flatMap((item) =>
          item.type === 'item_reference' && typeof item.id === 'string' ? [item.id] : [],
        ),
      ];
      previous =
        (itemIds.length === 0 ? [] : await store.withOutputItems(itemIds)).findLast(
          (record) =>
            Array.isArray(record.output) &&
            record.output.some((item) => {
              const candidate = item as { type?: unknown; call_id?: unknown } | null;
              return candidate?.type === 'function_call' && callIds.has(String(candidate.call_id));
            }),
        ) ?? null;
    }
    const previousInstructions = previous
      ? ((previous.request as { instructions?: string | null }).instructions ?? null)
      : null;
    const instructions = typeof body.instructions === 'string' ? body.instructions : previousInstructions;
    const conversation =
      continuation && continuation.userPosition < 0
        ? { systemText: instructions ?? '', history: [], input: null, firstUserText: '' }
        : normalizeConversation(
            items,
            (index) => `input[${kept[index]?.index ?? index}]`,
            'No user message found in input',
            instructions ? [instructions] : [],
          );
    const selection = selectModel(host, settings, body, settings.directModelRequests);
    const model = selection.display;
    const responseId = hexId('resp_', 24);
    admission.checkCapacity();
    const placement = await placeTurn(host, previous, body.conversation_history, () => host.newStoredSessionId());
    const newSession = placement.rule === 'fresh' || placement.rule === 'explicit_history';
    const seedRows = placement.seed;
    const targetSession = placement.sessionId;
    const slot = admission.admit(targetSession, responseId, 'responses');
    serverContext.metrics.turns += 1;
    let firstRowId: number | null = null;
    let toolResults: ClientToolResult[] = [];
    // The setup may throw (a client gone while paced, a store failure): the slot goes back then (ADR 0037).
    const agent = await slot.guard(async () => {
      await paceClientTurn(admission, context);
      // A new session is created as new: an id stored meanwhile (another instance drew it) is never taken as this
      // client's conversation.
      if (newSession) await createNewSession(host, targetSession);
      else if (!(await host.store.getSession(targetSession)))
        await host.store.createSession({ id: targetSession, source: 'api_server' });
      if (continuation && previous) {
        // The chained session holds the open turn: nothing of the input is written again, the outputs answer the
        // calls it waits for. Outputs of calls it already has results for are copies the client keeps; skipped.
        const live = await agentForSession(host, targetSession);
        const stored = await live.history();
        const pending = new Set(pendingToolCalls(stored).map((call) => call.id));
        const answered = new Set(stored.map((row) => row.toolCallId).filter((id) => id !== null));
        const results = [...continuation.earlierOutputs, ...continuation.outputs].filter(
          (output) => pending.has(output.callId) || !answered.has(output.callId),
        );
        checkResults(results, pendingToolCalls(stored));
        toolResults = plainResults(results);
        return live;
      }
      const inputRows: (ChatMessage & { content: string })[] = historyRows(
        conversation.history.map((message) => ({ ...message, index: kept[message.index]?.index ?? message.index })),
        resolved.toolCalls,
      );
      if (continuation) {
        // No stored response holds the calls (store: false, or another deployment's ids): the input is the whole
        // history, the open turn's calls and earlier results included.
        if (conversation.input) inputRows.push({ role: 'user', content: conversation.input.text });
        inputRows.push(...(continuation.turnRows as (ChatMessage & { content: string })[]));
        checkResults(
          continuation.outputs,
          pendingToolCalls(
            inputRows.map((row) => ({
              role: row.role,
              displayKind: null,
              toolCalls: row.toolCalls ?? null,
              toolCallId: row.toolCallId ?? null,
            })),
          ),
        );
        toolResults = plainResults(continuation.outputs);
      }
      const history = [...seedRows, ...inputRows];
      if (history.length > 0) {
        const ids = await host.store.appendMessages(targetSession, history);
        firstRowId = ids[0] ?? null;
      }
      return agentForSession(host, targetSession);
    });
    const createdAtMs = Date.now();
    const createdAt = Math.floor(createdAtMs / 1000);
    const controller = new AbortController();
    const output: Item[] = [];
    const request = { instructions, metadata, input: items as unknown as JsonValue };
    const build = (status: string, extra: { usage?: unknown; error?: unknown; incompleteDetails?: unknown } = {}) =>
      responseObject({
        id: responseId,
        createdAt,
        status,
        model,
        output,
        usage: extra.usage ?? null,
        error: extra.error ?? null,
        incompleteDetails: extra.incompleteDetails ?? null,
        instructions,
        metadata: metadata as Record<string, string>,
        previousResponseId: previous?.id ?? null,
        store: storeFlag,
        truncation: truncation as string,
        tools: clientTools.declared,
        toolChoice: clientTools.choiceEcho,
      });
    const save = async (object: ReturnType<typeof build>, result: TurnResult | null) => {
      if (!storeFlag) return;
      const rowIds = result ? [...(result.userRowId !== null ? [result.userRowId] : []), ...result.rowIds] : [];
      await store
        .put({
          id: responseId,
          sessionId: targetSession,
          previousResponseId: previous?.id ?? null,
          conversation: conversationName,
          model,
          status: object.status as ResponseRecord['status'],
          request: { ...request, object: object as unknown as JsonValue } as JsonValue,
          output: object.output as unknown as JsonValue,
          usage: (object.usage ?? null) as JsonValue,
          error: (object.error ?? null) as JsonValue,
          firstRowId: firstRowId ?? (rowIds.length ? Math.min(...rowIds) : null),
          lastRowId: rowIds.length ? Math.max(...rowIds) : null,
          createdAt: createdAtMs,
          completedAt: result ? Date.now() : null,
        })
        .catch((error) => host.logger.warn('response store write failed', { error: String(error) }));
    };
    context.header('X-Hermes-Session-Id', targetSession);
    if (sessionKey !== undefined) context.header('X-Hermes-Session-Key', sessionKey);
    const turnInput = continuation
      ? { toolResults, ...(conversation.systemText ? { ephemeralSystemPrompt: conversation.systemText } : {}) }
      : toTurnInput(conversation.input as NonNullable<typeof conversation.input>, conversation.systemText);
    const turn = await slot.guard(async () => {
      try {
        return agent.runTurn(turnInput, {
          signal: controller.signal,
          ...(selection.spec ? { model: selection.spec } : {}),
          ...(sessionKey !== undefined ? { memoryScope: sessionKey } : {}),
          ...(slot.claim ? { claim: slot.claim } : {}),
          ...(clientTools.tools.length > 0 ? { clientTools: clientTools.tools } : {}),
          ...(clientTools.toolChoice !== undefined ? { toolChoice: clientTools.toolChoice } : {}),
          callbacks: { approve: async () => NO_APPROVAL_CHANNEL },
        });
      } catch (error) {
        throw toolConflictError(error);
      }
    });

    // Item bookkeeping shared by both modes (spec §14.7).
    let emit: (event: Record<string, unknown>) => Promise<void> = async () => undefined;
    /** A message item's text delta; on a stream, deltas that arrive in one burst share an event (spec §14.7). */
    let emitTextDelta = (item: Item, delta: string): Promise<void> =>
      emit({
        type: 'response.output_text.delta',
        item_id: item.id,
        output_index: indexOf(item),
        content_index: 0,
        delta,
        logprobs: [],
      });
    let openMessage: Item | null = null;
    // Gathered in chunks, not with `+=`: a rope of one node per delta would live, and be promoted, for the whole
    // answer (ADR 0059, ADR 0069).
    let openText = new TextChunks();
    /** The last closed message's text: its closing events and the terminal one share its encoding (ADR 0097). */
    let closedText: string | undefined;
    const calls = new Map<string, Item>();
    const indexOf = (item: Item) => output.indexOf(item);
    /**
     * `ended`: the text the core's `message.end` carries, the very string it stores, so that the item does not hold a
     * second copy of a long answer joined from the deltas (ADR 0097).
     */
    const closeMessage = async (phase: string, status: string, ended?: string) => {
      if (!openMessage) return;
      const item = openMessage;
      openMessage = null;
      const text = ended ?? openText.toString();
      closedText = text;
      const part = { type: 'output_text', text, annotations: [] };
      Object.assign(item, { status, phase, content: [part] });
      const base = { item_id: item.id, output_index: indexOf(item), content_index: 0 };
      await emit({ type: 'response.output_text.done', ...base, text, logprobs: [] });
      await emit({ type: 'response.content_part.done', ...base, part });
      await emit({ type: 'response.output_item.done', output_index: indexOf(item), item: { ...item } });
    };
    const openMessageItem = async (): Promise<Item> => {
      const item: Item = {
        id: hexId('msg_', 24),
        type: 'message',
        status: 'in_progress',
        role: 'assistant',
        content: [],
      };
      output.push(item);
      openMessage = item;
      openText = new TextChunks();
      await emit({ type: 'response.output_item.added', output_index: indexOf(item), item: { ...item, content: [] } });
      await emit({
        type: 'response.content_part.added',
        item_id: item.id,
        output_index: indexOf(item),
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      return item;
    };
    // Reasoning items (spec §14.7, only with show_reasoning): one per burst, never overlapping a message item.
    let openReasoning: Item | null = null;
    let reasoningText = new TextChunks();
    let heldReasoning = '';
    const reasonedSteps = new Set<string>();
    const reasoningBase = (item: Item) => ({ item_id: item.id, output_index: indexOf(item), summary_index: 0 });
    const openReasoningItem = async (): Promise<Item> => {
      const item: Item = { id: hexId('rs_', 24), type: 'reasoning', summary: [] };
      output.push(item);
      openReasoning = item;
      reasoningText = new TextChunks();
      await emit({ type: 'response.output_item.added', output_index: indexOf(item), item: { ...item, summary: [] } });
      await emit({
        type: 'response.reasoning_summary_part.added',
        ...reasoningBase(item),
        part: { type: 'summary_text', text: '' },
      });
      return item;
    };
    const reasoningDelta = async (item: Item, delta: string) => {
      reasoningText.push(delta);
      await emit({ type: 'response.reasoning_summary_text.delta', ...reasoningBase(item), delta });
    };
    const closeReasoning = async () => {
      if (!openReasoning) return;
      const item = openReasoning;
      openReasoning = null;
      const text = reasoningText.toString();
      const part = { type: 'summary_text', text };
      item.summary = [part];
      await emit({ type: 'response.reasoning_summary_text.done', ...reasoningBase(item), text });
      await emit({ type: 'response.reasoning_summary_part.done', ...reasoningBase(item), part });
      await emit({ type: 'response.output_item.done', output_index: indexOf(item), item: { ...item } });
    };
    const wholeReasoning = async (text: string) => {
      const item = await openReasoningItem();
      await reasoningDelta(item, text);
      await closeReasoning();
    };
    const onEvent = async (event: AgentEvent) => {
      if (event.type === 'reasoning.delta' && settings.showReasoning && event.text) {
        reasonedSteps.add(event.messageId);
        // Reasoning that arrives while the step's message is open is held back until that message closes.
        if (openMessage) heldReasoning += event.text;
        else await reasoningDelta(openReasoning ?? (await openReasoningItem()), event.text);
      } else if (event.type === 'reasoning.end' && settings.showReasoning) {
        if (openReasoning) await closeReasoning();
        else if (!reasonedSteps.has(event.messageId) && event.text) {
          if (openMessage) heldReasoning += event.text;
          else await wholeReasoning(event.text);
        }
      } else if (event.type === 'message.delta' && event.text) {
        if (openReasoning) await closeReasoning();
        const item = openMessage ?? (await openMessageItem());
        openText.push(event.text);
        await emitTextDelta(item, event.text);
      } else if (event.type === 'message.end') {
        await closeMessage(
          event.hasToolCalls ? 'commentary' : 'final_answer',
          event.discarded || event.interrupted ? 'incomplete' : 'completed',
          event.text,
        );
        if (heldReasoning) {
          const held = heldReasoning;
          heldReasoning = '';
          await wholeReasoning(held);
        }
        if (openReasoning) await closeReasoning();
      } else if (event.type === 'tool.start') {
        // A tool the server runs itself is an `mcp_call` item, the Responses type for a tool executed on the
        // server's side: clients show it and never run it themselves, unlike `function_call` (ADR 0010).
        const args = cut(JSON.stringify(event.args ?? {}));
        const item: Item = {
          id: hexId('mcp_', 24),
          type: 'mcp_call',
          status: 'in_progress',
          server_label: SERVER_LABEL,
          name: event.name,
          arguments: '',
          output: null,
          error: null,
        };
        output.push(item);
        calls.set(event.callId, item);
        const base = { item_id: item.id, output_index: indexOf(item) };
        await emit({ type: 'response.output_item.added', output_index: indexOf(item), item: { ...item } });
        await emit({ type: 'response.mcp_call.in_progress', ...base });
        item.arguments = args;
        await emit({ type: 'response.mcp_call_arguments.delta', ...base, delta: args });
        await emit({ type: 'response.mcp_call_arguments.done', ...base, arguments: args });
      } else if (event.type === 'tool.end') {
        const call = calls.get(event.callId);
        if (!call) return;
        const text = cut(redactSecrets(event.result));
        const failed = event.status !== 'completed';
        Object.assign(call, {
          status: event.status === 'cancelled' ? 'incomplete' : failed ? 'failed' : 'completed',
          output: text,
          error: failed ? text : null,
        });
        const base = { item_id: call.id, output_index: indexOf(call) };
        await emit({ type: failed ? 'response.mcp_call.failed' : 'response.mcp_call.completed', ...base });
        await emit({ type: 'response.output_item.done', output_index: indexOf(call), item: { ...call } });
      }
    };
    const finalize = async (result: TurnResult) => {
      if (openReasoning) await closeReasoning();
      if (openMessage) await closeMessage('final_answer', result.outcome === 'completed' ? 'completed' : 'incomplete');
      // The calls the run stopped for are the client's to run: `function_call` items, complete, never cut (ADR 0052).
      for (const call of result.clientToolCalls ?? []) {
        const item: Item = {
          id: hexId('fc_', 24),
          type: 'function_call',
          status: 'in_progress',
          call_id: call.id,
          name: call.name,
          arguments: '',
        };
        output.push(item);
        const base = { item_id: item.id, output_index: indexOf(item) };
        await emit({ type: 'response.output_item.added', output_index: indexOf(item), item: { ...item } });
        item.arguments = call.arguments;
        await emit({ type: 'response.function_call_arguments.delta', ...base, delta: call.arguments });
        await emit({ type: 'response.function_call_arguments.done', ...base, arguments: call.arguments });
        item.status = 'completed';
        await emit({ type: 'response.output_item.done', output_index: indexOf(item), item: { ...item } });
      }
      if (!output.some((item) => item.type === 'message') && result.finalText) {
        const item = await openMessageItem();
        openText = new TextChunks();
        openText.push(result.finalText);
        await emit({
          type: 'response.output_text.delta',
          item_id: item.id,
          output_index: indexOf(item),
          content_index: 0,
          delta: result.finalText,
          logprobs: [],
        });
        await closeMessage('final_answer', 'completed');
      }
      const fields = outcomeFields(result);
      const object = build(fields.status, {
        usage: responsesUsage(result.usage.turn),
        error: fields.error,
        incompleteDetails: fields.incompleteDetails,
      });
      await save(object, result);
      return object;
    };
    const settle = turn.result;
    slot.releaseWhen(settle);

    if (!streaming) {
      const onAbort = () => controller.abort(interruptReason('client_disconnect', 'the client disconnected'));
      context.req.raw.signal.addEventListener('abort', onAbort, { once: true });
      for await (const event of turn as AsyncIterable<AgentEvent>) await onEvent(event);
      const object = await finalize(await settle);
      return context.json(object);
    }
    let writer: SseWriter | null = null;
    return streamSse(
      context,
      async (streamApi) => {
        writer = new SseWriter(
          streamApi,
          serverContext.keepaliveMs,
          turnStreamOptions(settings.streamBufferBytes, host.logger.warn.bind(host.logger), 'responses'),
        );
        const sse = writer;
        let sequence = 0;
        emit = async (event) => {
          // A merged text delta takes its number when it closes, before this event's.
          sse.closeMerge();
          const framed = { ...event, sequence_number: sequence };
          sequence += 1;
          await sse.frame(framed, { event: String(event.type), shared: closedText });
        };
        // One encoder per message item, so that only deltas of the same item are merged.
        const deltaEncoders = new WeakMap<Item, (text: string) => string>();
        emitTextDelta = (item, delta) => {
          let encode = deltaEncoders.get(item);
          if (!encode) {
            const head = JSON.stringify({
              type: 'response.output_text.delta',
              item_id: item.id,
              output_index: indexOf(item),
              content_index: 0,
            }).slice(0, -1);
            encode = (text) => {
              const json = `${head},"delta":${JSON.stringify(text)},"logprobs":[],"sequence_number":${sequence}}`;
              sequence += 1;
              return json;
            };
            deltaEncoders.set(item, encode);
          }
          return sse.mergeable(delta, encode, 'response.output_text.delta');
        };
        streamApi.onAbort(() => controller.abort(interruptReason('client_disconnect', 'the client disconnected')));
        const initial = build('in_progress');
        await save(initial, null);
        await emit({ type: 'response.created', response: initial });
        await emit({ type: 'response.in_progress', response: initial });
        for await (const event of turn as AsyncIterable<AgentEvent>) await onEvent(event);
        const object = await finalize(await settle);
        const terminal =
          object.status === 'completed'
            ? 'response.completed'
            : object.status === 'failed'
              ? 'response.failed'
              : 'response.incomplete';
        await emit({ type: terminal, response: object });
        await sse.finish();
      },
      async (error) => {
        // A failure of this handler still ends the stream with a terminal event (spec §22.2).
        host.logger.error('responses stream failed', { error: redactSecrets(String(error)) });
        controller.abort(interruptReason('internal_error', 'the handler failed'));
        const failed = build('failed', { error: { code: 'agent_error', message: 'Internal server error' } });
        await save(failed, null);
        await emit({ type: 'response.failed', response: failed });
        await writer?.finish();
      },
    );
  }
}

/** Results as the core takes them. */
function plainResults(results: IndexedResult[]): ClientToolResult[] {
  return results.map(({ callId, content }) => ({ callId, content }));
}
