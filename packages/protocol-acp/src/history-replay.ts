import type { ContentBlock, SessionUpdate, ToolKind } from '@agentclientprotocol/sdk/unstable';
import type { AgentHost, FileDiff, JsonValue, StoredMessage, TodoItem, ToolLocation } from '@hermes/core';
import {
  type CoreToolStatus,
  completionContent,
  completionStatus,
  parseArguments,
  planEntries,
  rawOutputOf,
} from './tool-rendering.js';

const SKIPPED_DISPLAY_KINDS = new Set(['model_switch', 'compaction_summary', 'hidden']);

/**
 * Assigns ACP tool-call ids: the core's call id, with `-2`, `-3`, … appended when the id was
 * already used in the session (spec/acp.md §9.1). Live handling and replay share one instance
 * per session so that both produce the same ids for the same history.
 */
export class ToolCallIds {
  readonly #used = new Set<string>();

  /** The id to announce for a call the core calls `coreId`, reserved from now on. */
  assign(coreId: string): string {
    let candidate = coreId;
    for (let suffix = 2; this.#used.has(candidate); suffix++) candidate = `${coreId}-${suffix}`;
    this.#used.add(candidate);
    return candidate;
  }
}

/** Rows that replay: active or compacted, never superseded, never undone (spec/acp.md §5.5). */
export function replayableRows(rows: readonly StoredMessage[]): StoredMessage[] {
  return rows
    .filter((row) => (row.active || row.compacted) && row.supersededBy === null)
    .filter((row) => row.displayKind === null || !SKIPPED_DISPLAY_KINDS.has(row.displayKind))
    .sort((left, right) => left.rowId - right.rowId);
}

function record(value: JsonValue | undefined): Record<string, JsonValue> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined;
}

function userBlocks(row: StoredMessage): ContentBlock[] {
  const prompt = record(row.displayMetadata ?? undefined)?.acp;
  const blocks = record(prompt)?.prompt;
  if (Array.isArray(blocks)) return blocks as unknown as ContentBlock[];
  if (row.contentParts && row.contentParts.length > 0) {
    return row.contentParts.map((part): ContentBlock => {
      if (part.type === 'text') return { type: 'text', text: part.text };
      if (part.type === 'image' && part.data) return { type: 'image', mimeType: part.mediaType, data: part.data };
      return { type: 'text', text: `[${part.type}${part.url ? ` ${part.url}` : ''}]` };
    });
  }
  return [{ type: 'text', text: row.content }];
}

/** How a tool's definition presents one call; shared by live announcements and replay. */
export function describeCall(
  host: AgentHost,
  name: string,
  args: JsonValue,
  cwd: string,
): { title: string; kind: ToolKind; locations: ToolLocation[] } {
  const definition = host.tools.get(name);
  if (!definition) return { title: name, kind: 'other', locations: [] };
  const kind = typeof definition.kind === 'function' ? definition.kind(args) : definition.kind;
  try {
    const display = definition.display?.(args, { cwd });
    return { title: display?.title ?? name, kind, locations: display?.locations ?? [] };
  } catch {
    return { title: name, kind, locations: [] };
  }
}

/**
 * The `session/update` payloads that replay a stored conversation (spec/acp.md §5.5), in order.
 * `ids` is the session's id assigner, so live calls made after the load never reuse an id.
 */
export function replayUpdates(input: {
  host: AgentHost;
  rows: readonly StoredMessage[];
  cwd: string;
  ids: ToolCallIds;
}): SessionUpdate[] {
  const rows = replayableRows(input.rows);
  const toolRows = new Map<string, StoredMessage[]>();
  for (const row of rows) {
    if (row.role !== 'tool' || row.toolCallId === null) continue;
    const list = toolRows.get(row.toolCallId) ?? [];
    list.push(row);
    toolRows.set(row.toolCallId, list);
  }
  const updates: SessionUpdate[] = [];
  for (const row of rows) {
    if (row.role === 'user') {
      for (const block of userBlocks(row)) {
        updates.push({ sessionUpdate: 'user_message_chunk', content: block, messageId: `msg-${row.rowId}` });
      }
    } else if (row.role === 'assistant') {
      if (row.reasoning) {
        updates.push({
          sessionUpdate: 'agent_thought_chunk',
          content: { type: 'text', text: row.reasoning },
          messageId: `msg-${row.rowId}-reasoning`,
        });
      }
      if (row.content) {
        updates.push({
          sessionUpdate: 'agent_message_chunk',
          content: { type: 'text', text: row.content },
          messageId: `msg-${row.rowId}`,
        });
      }
      for (const call of row.toolCalls ?? []) {
        const candidates = toolRows.get(call.id) ?? [];
        const index = candidates.findIndex((candidate) => candidate.rowId > row.rowId);
        const result = index >= 0 ? candidates.splice(index, 1)[0] : undefined;
        updates.push(...replayCall(input, call, result));
      }
    }
  }
  return updates;
}

function replayCall(
  input: { host: AgentHost; cwd: string; ids: ToolCallIds },
  call: { id: string; name: string; arguments: string },
  result: StoredMessage | undefined,
): SessionUpdate[] {
  const args = parseArguments(call.arguments);
  const described = describeCall(input.host, call.name, args, input.cwd);
  const toolCallId = input.ids.assign(call.id);
  const base = {
    sessionUpdate: 'tool_call' as const,
    toolCallId,
    name: call.name,
    title: described.title,
    kind: described.kind,
    rawInput: args,
  };
  if (!result) {
    return [
      {
        ...base,
        locations: described.locations,
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'Cancelled' } }],
      },
    ];
  }
  const metadata = result.displayMetadata ?? {};
  const storedStatus = metadata.status;
  const status: CoreToolStatus =
    storedStatus === 'failed' || storedStatus === 'denied' || storedStatus === 'cancelled' ? storedStatus : 'completed';
  const diffs = Array.isArray(metadata.diffs) ? (metadata.diffs as unknown as FileDiff[]) : undefined;
  const storedLocations = Array.isArray(metadata.locations)
    ? (metadata.locations as unknown as ToolLocation[])
    : undefined;
  const content =
    status === 'cancelled'
      ? [{ type: 'content' as const, content: { type: 'text' as const, text: 'Cancelled' } }]
      : completionContent({ name: call.name, args, status, result: result.content, diffs });
  const rawOutput = rawOutputOf(metadata.structured);
  const update: SessionUpdate = {
    ...base,
    locations: storedLocations ?? described.locations,
    status: completionStatus(status),
    ...(content ? { content } : {}),
    ...(rawOutput !== undefined ? { rawOutput } : {}),
  };
  const updates: SessionUpdate[] = [update];
  if (call.name === 'todo' && Array.isArray(metadata.todos)) {
    updates.push({ sessionUpdate: 'plan', entries: planEntries(metadata.todos as unknown as TodoItem[]) });
  }
  return updates;
}
