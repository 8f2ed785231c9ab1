import type { AgentHost, ChatMessage, ClientTool, ClientToolResult, JsonObject, StoredToolCall } from '@hermes/core';
import { HermesError, pendingToolCalls } from '@hermes/core';
import { ApiError, invalidField } from './http-error.js';
import { normalizeContent } from './normalize-input.js';

/** The function names OpenAI accepts. */
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The client's function tools of one request and what the core is told about them (ADR 0052). */
export interface ClientToolsRequest {
  /** Offered to the model; empty with `tool_choice: "none"` or without tools. */
  tools: ClientTool[];
  /** The forced choice for the run's first model step, when the request asked for one. */
  toolChoice: 'required' | { toolName: string } | undefined;
  /** The declared function tools, echoed in a Responses object. */
  declared: Record<string, unknown>[];
  /** `tool_choice` as sent (a string or an object), echoed in a Responses object; `auto` when absent. */
  choiceEcho: unknown;
}

/**
 * Reads `tools` and `tool_choice` (spec §13.1, §14.1 and their amendment; ADR 0052). Only `type: "function"` tools
 * are the client's; any other type (hosted tools such as `web_search`) is ignored, as before. A name that one of the
 * server's registered tools has is a 400 `invalid_field` on `tools`: the model could not tell the two apart.
 */
export function parseClientTools(body: Record<string, unknown>, shape: 'chat' | 'responses', host: AgentHost) {
  const raw = body.tools;
  if (raw !== undefined && raw !== null && !Array.isArray(raw))
    throw invalidField('tools', "'tools' must be an array.");
  const serverNames = new Set(host.tools.list().map((tool) => tool.name));
  const tools: ClientTool[] = [];
  const declared: Record<string, unknown>[] = [];
  (Array.isArray(raw) ? raw : []).forEach((entry, index) => {
    if (typeof entry !== 'object' || entry === null) throw invalidField(`tools[${index}]`, 'A tool must be an object.');
    const item = entry as Record<string, unknown>;
    if (item.type !== 'function') return;
    const fields = (shape === 'chat' ? item.function : item) as Record<string, unknown> | undefined;
    const path = shape === 'chat' ? `tools[${index}].function` : `tools[${index}]`;
    if (typeof fields !== 'object' || fields === null) throw invalidField(path, 'A function tool needs a function.');
    const name = fields.name;
    if (typeof name !== 'string' || !FUNCTION_NAME.test(name))
      throw invalidField(`${path}.name`, 'A function name is 1 to 64 letters, digits, underscores or dashes.');
    if (serverNames.has(name))
      throw invalidField('tools', `The tool '${name}' has the name of one of the server's tools; rename it.`);
    if (tools.some((tool) => tool.name === name))
      throw invalidField('tools', `The tool '${name}' is declared more than once.`);
    const parameters = fields.parameters;
    if (
      parameters !== undefined &&
      parameters !== null &&
      (typeof parameters !== 'object' || Array.isArray(parameters))
    )
      throw invalidField(`${path}.parameters`, "'parameters' must be a JSON Schema object.");
    const inputSchema = (parameters ?? { type: 'object', properties: {} }) as JsonObject;
    tools.push({
      name,
      ...(typeof fields.description === 'string' ? { description: fields.description } : {}),
      inputSchema,
    });
    declared.push({
      type: 'function',
      name,
      description: typeof fields.description === 'string' ? fields.description : null,
      parameters: inputSchema,
      strict: typeof fields.strict === 'boolean' ? fields.strict : null,
    });
  });
  const choice = body.tool_choice;
  let toolChoice: ClientToolsRequest['toolChoice'];
  let offered = tools;
  if (choice === undefined || choice === null || choice === 'auto') {
    // the model chooses
  } else if (choice === 'none') {
    // OpenAI's "none": the model calls none of the client's tools. The server's own tools stay the server's business.
    offered = [];
  } else if (choice === 'required') {
    if (tools.length > 0) toolChoice = 'required';
  } else if (typeof choice === 'object' && (choice as { type?: unknown }).type === 'function') {
    const named =
      shape === 'chat'
        ? (choice as { function?: { name?: unknown } }).function?.name
        : (choice as { name?: unknown }).name;
    if (typeof named !== 'string' || !tools.some((tool) => tool.name === named))
      throw invalidField('tool_choice', "'tool_choice' names a function that is not in 'tools'.");
    toolChoice = { toolName: named };
  } else if (typeof choice === 'string') {
    throw invalidField('tool_choice', "'tool_choice' must be none, auto, required or a function.");
  }
  // Other object forms (allowed_tools, hosted tool types) leave the choice to the model.
  return {
    tools: offered,
    toolChoice,
    declared,
    choiceEcho: choice === undefined || choice === null ? 'auto' : choice,
  } satisfies ClientToolsRequest;
}

/** The core's refusal of a client tool named like a session tool (an MCP tool, say), as the 400 of `tools`. */
export function toolConflictError(error: unknown): unknown {
  if (HermesError.isInstance(error) && error.code === 'tool_name_conflict')
    return invalidField('tools', `${error.message} Rename it.`);
  return error;
}

/** A `tool` message or `function_call_output` item that answers a call, with its place for `param`. */
export interface IndexedResult extends ClientToolResult {
  param: string;
}

/** Result text from a tool message's or output item's content (a string or content parts). */
export function resultText(content: unknown, path: string): string {
  if (typeof content === 'string') return content;
  if (content === undefined || content === null) return '';
  return normalizeContent(content, path).text;
}

/**
 * Checks that every result answers one of the calls the session waits for; a 400 on the result's own field
 * otherwise. Without pending calls at all the request cannot continue anything.
 */
export function checkResults(results: IndexedResult[], pending: StoredToolCall[]): void {
  const ids = new Set(pending.map((call) => call.id));
  for (const result of results) {
    if (!ids.has(result.callId))
      throw new ApiError(400, 'invalid_field', `No tool call '${result.callId}' is waiting for a result.`, {
        param: result.param,
      });
  }
}

/** The stored row of a tool result the client sent back, named after the call among `turnRows` it answers. */
function toolResultRow(turnRows: readonly ChatMessage[], result: { callId: string; content: string }): ChatMessage {
  const call = turnRows.flatMap((row) => row.toolCalls ?? []).find((candidate) => candidate.id === result.callId);
  return { role: 'tool', content: result.content, toolCallId: result.callId, toolName: call?.name ?? 'unknown' };
}
/** A chat request that brings tool results (ADR 0052): the part of its messages that belongs to the open turn. */
export interface ChatContinuation {
  /**
   * Index of the turn's user message: the messages up to it are normalised as usual. -1 when the list has none (a
   * request with `X-Hermes-Session-Id` may send the results alone).
   */
  userIndex: number;
  /** The turn's exchange before the results: assistant messages with their calls, and earlier results. */
  turnRows: ChatMessage[];
  /** The trailing tool messages: the results the run brings. */
  results: IndexedResult[];
  /** The calls of the last assistant message, which the results answer. */
  calls: StoredToolCall[];
}

/**
 * Reads the tail of a chat `messages` list. A list that ends with `role: "tool"` messages continues a turn that
 * stopped for the client's tools: the results are those trailing messages; the assistant messages and earlier
 * results after the last user message are the turn so far. Any other list is an ordinary turn (null).
 */
export function chatContinuation(messages: Record<string, unknown>[]): ChatContinuation | null {
  if (messages.at(-1)?.role !== 'tool') return null;
  let userIndex = -1;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    if (messages[index]?.role === 'user') {
      userIndex = index;
      break;
    }
  }
  let resultsStart = messages.length;
  while (resultsStart > userIndex + 1 && messages[resultsStart - 1]?.role === 'tool') resultsStart -= 1;
  const turnRows: ChatMessage[] = [];
  let calls: StoredToolCall[] = [];
  for (let index = userIndex + 1; index < messages.length; index += 1) {
    const message = messages[index] as Record<string, unknown>;
    if (message.role === 'assistant') {
      calls = assistantCalls(message, index);
      turnRows.push({
        role: 'assistant',
        content: resultText(message.content, `messages[${index}].content`),
        ...(calls.length > 0 ? { toolCalls: calls } : {}),
      });
    } else if (message.role === 'tool' && index < resultsStart) {
      turnRows.push(toolResultRow(turnRows, toolMessage(message, index)));
    }
  }
  const results = messages.slice(resultsStart).map((message, offset) => toolMessage(message, resultsStart + offset));
  return { userIndex, turnRows, results, calls };
}

function toolMessage(message: Record<string, unknown>, index: number): IndexedResult {
  const callId = message.tool_call_id;
  if (typeof callId !== 'string' || callId === '')
    throw invalidField(`messages[${index}].tool_call_id`, "A 'tool' message needs its 'tool_call_id'.");
  return {
    callId,
    content: resultText(message.content, `messages[${index}].content`),
    param: `messages[${index}].tool_call_id`,
  };
}

function assistantCalls(message: Record<string, unknown>, index: number): StoredToolCall[] {
  const raw = message.tool_calls;
  if (!Array.isArray(raw)) return [];
  return raw.map((entry, position) => {
    const call = entry as { id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null;
    if (typeof call?.id !== 'string' || typeof call.function?.name !== 'string')
      throw invalidField(`messages[${index}].tool_calls[${position}]`, 'A tool call needs an id and a function name.');
    return {
      id: call.id,
      name: call.function.name,
      arguments: typeof call.function.arguments === 'string' ? call.function.arguments : '{}',
    };
  });
}

/** The `tool_calls` of a chat message for the calls a run stopped for. */
export function chatToolCalls(calls: StoredToolCall[]) {
  return calls.map((call) => ({
    id: call.id,
    type: 'function' as const,
    function: { name: call.name, arguments: call.arguments },
  }));
}

/** A Responses request that brings `function_call_output` items (ADR 0052). */
export interface ResponsesContinuation {
  /** Position, in the input list, of the last user message: the items up to it are read as any input is. */
  userPosition: number;
  /** The open turn's exchange before the results, for a request that carries the whole conversation. */
  turnRows: ChatMessage[];
  /** The trailing `function_call_output` items: the results the run brings. */
  outputs: IndexedResult[];
  /**
   * Outputs after the last message item but before the trailing ones (a client that puts each output right after its
   * call): results too when the stored turn still waits for their calls.
   */
  earlierOutputs: IndexedResult[];
  /** Ids (`fc_…`) of the `function_call` items in the input: how a request without a chain finds its response. */
  callItemIds: string[];
}

/**
 * Reads a Responses input that ends with `function_call_output` items: it continues the turn that stopped for the
 * client's tools. The outputs after the last message item are the results; the `function_call` items and earlier
 * outputs after the last user message are the open turn so far. Any other input is an ordinary turn (null).
 */
export function responsesContinuation(items: { index: number; item: Record<string, unknown> }[]) {
  if (items.at(-1)?.item.type !== 'function_call_output') return null;
  const isMessage = (item: Record<string, unknown>) =>
    item.type === undefined || item.type === 'message' || typeof item.role === 'string';
  let userPosition = -1;
  let lastMessage = -1;
  for (let position = items.length - 1; position >= 0; position -= 1) {
    const item = items[position]?.item as Record<string, unknown>;
    if (lastMessage < 0 && isMessage(item)) lastMessage = position;
    if (isMessage(item) && item.role === 'user') {
      userPosition = position;
      break;
    }
  }
  let trailingStart = items.length;
  while (trailingStart > 0 && items[trailingStart - 1]?.item.type === 'function_call_output') trailingStart -= 1;
  const callItemIds: string[] = [];
  const turnRows: ChatMessage[] = [];
  const outputs: IndexedResult[] = [];
  const earlierOutputs: IndexedResult[] = [];
  let step: ChatMessage | null = null;
  items.forEach(({ index, item }, position) => {
    if (item.type === 'function_call' && typeof item.id === 'string') callItemIds.push(item.id);
    if (position <= userPosition) return;
    if (isMessage(item)) {
      step = null;
      if (item.role === 'assistant')
        turnRows.push({ role: 'assistant', content: resultText(item.content, `input[${index}].content`) });
      return;
    }
    if (item.type === 'function_call') {
      if (typeof item.call_id !== 'string' || typeof item.name !== 'string')
        throw invalidField(`input[${index}]`, "A 'function_call' item needs its 'call_id' and 'name'.");
      const call = {
        id: item.call_id,
        name: item.name,
        arguments: typeof item.arguments === 'string' ? item.arguments : '{}',
      };
      // Calls of one step join the assistant message just before them, as the model sent them together.
      const last = turnRows.at(-1);
      if (!step && last?.role === 'assistant' && !last.toolCalls) step = last;
      if (!step) {
        step = { role: 'assistant', content: '' };
        turnRows.push(step);
      }
      step.toolCalls = [...(step.toolCalls ?? []), call];
      return;
    }
    if (item.type !== 'function_call_output') return;
    if (typeof item.call_id !== 'string' || item.call_id === '')
      throw invalidField(`input[${index}].call_id`, "A 'function_call_output' item needs its 'call_id'.");
    const result = {
      callId: item.call_id,
      content: resultText(item.output, `input[${index}].output`),
      param: `input[${index}].call_id`,
    };
    if (position >= trailingStart) outputs.push(result);
    else {
      if (position > lastMessage) earlierOutputs.push(result);
      step = null;
      turnRows.push(toolResultRow(turnRows, result));
    }
  });
  const continuation: ResponsesContinuation = { userPosition, turnRows, outputs, earlierOutputs, callItemIds };
  return continuation;
}

/** The open turn of a derived session, as the server stored it. */
export interface StoredOpenTurn {
  turnId: string;
  /** The turn's rows from its user row on: server-run calls and their results included. */
  rows: ChatMessage[];
}

/**
 * The open turn a header-less chat continuation belongs to, from its derived session (ADR 0052): found when the
 * session's tail waits for calls that the body's last assistant message made and the results answer. The server's
 * own calls of that turn are in it, which the client never saw and cannot send back. Null when the session is
 * missing or waits for something else: the body's copy of the turn is used then.
 */
export async function storedOpenTurn(
  host: AgentHost,
  sessionId: string,
  continuation: ChatContinuation,
): Promise<StoredOpenTurn | null> {
  if (!(await host.store.getSession(sessionId))) return null;
  const rows = await host.store.loadConversation(sessionId);
  const pending = pendingToolCalls(rows);
  const sent = new Set(continuation.calls.map((call) => call.id));
  if (pending.length === 0 || !pending.every((call) => sent.has(call.id))) return null;
  if (!continuation.results.every((result) => pending.some((call) => call.id === result.callId))) return null;
  const open = rows.findLast((row) => (row.toolCalls?.length ?? 0) > 0);
  const turnId = open?.turnId;
  if (!turnId) return null;
  const start = rows.findIndex((row) => row.turnId === turnId);
  return {
    turnId,
    rows: rows.slice(start).map((row) => ({
      role: row.role,
      content: row.contentParts ?? row.content,
      ...(row.toolCalls ? { toolCalls: row.toolCalls } : {}),
      ...(row.toolCallId ? { toolCallId: row.toolCallId } : {}),
      ...(row.toolName ? { toolName: row.toolName } : {}),
      ...(row.reasoning ? { reasoning: row.reasoning } : {}),
    })),
  };
}
