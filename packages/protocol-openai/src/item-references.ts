import type { ChatMessage, ResponseStore, StoredToolCall } from '@hermes/core';
import { ApiError } from './http-error.js';
import type { NormalizedMessage } from './normalize-input.js';

/** An input item with its position in the request's `input` array, for `param` and for ordering. */
export interface IndexedItem {
  index: number;
  item: Record<string, unknown>;
}

/** A server-run tool call of a stored response, named by an `item_reference`: its call and its result. */
export interface ReferencedToolCall {
  index: number;
  call: StoredToolCall;
  output: string;
}

/** The input after its references are resolved: message items to normalise, and the tool calls they name. */
export interface ResolvedInput {
  items: IndexedItem[];
  toolCalls: ReferencedToolCall[];
}

/**
 * Replaces each `{type: "item_reference", id}` input item by the output item it names in a stored response
 * (spec/openai-api.md §14.1 amendment). Clients such as the AI SDK's `.responses()` send the previous turn's
 * assistant items this way when `store` is on; dropping them loses the assistant turn. A stored message item becomes
 * an assistant message; a stored `mcp_call` (a tool the server ran) becomes its call and its result, so the model
 * sees that the tool already ran. An id that no stored response holds is a 400 naming it. A reference repeated in one
 * request resolves once.
 */
export async function resolveItemReferences(
  store: ResponseStore,
  items: Record<string, unknown>[],
): Promise<ResolvedInput> {
  const referenced = new Map<string, number>();
  items.forEach((item, index) => {
    if (item.type !== 'item_reference') return;
    if (typeof item.id !== 'string' || item.id === '')
      throw new ApiError(400, 'invalid_field', "An 'item_reference' needs a string 'id'.", {
        param: `input[${index}].id`,
      });
    if (!referenced.has(item.id)) referenced.set(item.id, index);
  });
  const found = new Map<string, Record<string, unknown>>();
  if (referenced.size > 0) {
    for (const record of await store.withOutputItems([...referenced.keys()])) {
      if (!Array.isArray(record.output)) continue;
      for (const output of record.output) {
        const candidate = output as Record<string, unknown> | null;
        if (typeof candidate?.id === 'string' && referenced.has(candidate.id)) found.set(candidate.id, candidate);
      }
    }
    for (const [id, index] of referenced) {
      if (!found.has(id))
        throw new ApiError(400, 'item_not_found', `Item with id '${id}' not found.`, { param: `input[${index}]` });
    }
  }
  const resolved: ResolvedInput = { items: [], toolCalls: [] };
  items.forEach((item, index) => {
    if (item.type !== 'item_reference') {
      resolved.items.push({ index, item });
      return;
    }
    const id = item.id as string;
    if (referenced.get(id) !== index) return;
    const target = found.get(id) as Record<string, unknown>;
    if (target.type === 'message') resolved.items.push({ index, item: { role: 'assistant', content: target.content } });
    // A call of the client's own tool (ADR 0052): the item itself, as a client that sends it in full does.
    else if (target.type === 'function_call') resolved.items.push({ index, item: { ...target } });
    else if (target.type === 'mcp_call' && typeof target.name === 'string')
      resolved.toolCalls.push({
        index,
        call: { id, name: target.name, arguments: typeof target.arguments === 'string' ? target.arguments : '{}' },
        output:
          typeof target.output === 'string' ? target.output : typeof target.error === 'string' ? target.error : '',
      });
    // Other item types (reasoning) are skipped, as they are when a client sends them in full.
  });
  return resolved;
}

/**
 * The history rows of a request, in input order: normalised messages and the referenced tool calls. A tool call
 * joins the assistant message just before it (the commentary of that model step), its result follows as a tool row.
 */
export function historyRows(
  messages: NormalizedMessage[],
  toolCalls: ReferencedToolCall[],
): (ChatMessage & { content: string })[] {
  const entries = [
    ...messages.map((message) => ({ index: message.index, message })),
    ...toolCalls.map((toolCall) => ({ index: toolCall.index, toolCall })),
  ].sort((left, right) => left.index - right.index);
  const rows: (ChatMessage & { content: string })[] = [];
  // The assistant row that holds the calls of the current step; results go after the step's earlier results.
  let step: (ChatMessage & { content: string }) | null = null;
  for (const entry of entries) {
    if ('message' in entry) {
      step = null;
      // History rows are text, as they were before references resolved (images ride on the turn input only).
      rows.push({ role: entry.message.role, content: entry.message.text });
      continue;
    }
    const { call, output } = entry.toolCall;
    const last = rows.at(-1);
    if (!step && last?.role === 'assistant' && !last.toolCalls) step = last;
    if (!step) {
      step = { role: 'assistant', content: '' };
      rows.push(step);
    }
    step.toolCalls = [...(step.toolCalls ?? []), call];
    rows.push({ role: 'tool', content: output, toolCallId: call.id, toolName: call.name });
  }
  return rows;
}
