import type { PlanEntry, ToolCallContent } from '@agentclientprotocol/sdk/unstable';
import type { FileDiff, JsonValue, TodoItem } from '@hermes/core';

/** Result text longer than this is cut in tool-call content (spec/acp.md §9.3). */
export const RESULT_TEXT_LIMIT = 8192;
/** `rawOutput` is omitted when its JSON form is larger than this (spec/acp.md §9.3). */
export const RAW_OUTPUT_LIMIT = 64 * 1024;

/** A status of a tool call as the core stores and reports it. */
export type CoreToolStatus = 'completed' | 'failed' | 'denied' | 'cancelled';

/**
 * Wraps text in a fenced code block whose fence is longer than any backtick run inside, so the
 * client's Markdown renderer never closes the block early.
 */
export function fencedBlock(text: string, language = ''): string {
  let longestRun = 0;
  for (const match of text.matchAll(/`+/g)) longestRun = Math.max(longestRun, match[0].length);
  const fence = '`'.repeat(Math.max(3, longestRun + 1));
  return `${fence}${language}\n${text}${text.endsWith('\n') ? '' : '\n'}${fence}`;
}

function truncateResult(text: string): string {
  if (text.length <= RESULT_TEXT_LIMIT) return text;
  return `${text.slice(0, RESULT_TEXT_LIMIT)}\n… (truncated)`;
}

function textContent(text: string): ToolCallContent {
  return { type: 'content', content: { type: 'text', text } };
}

/** The result text of §9.3: the core's result, truncated, in a fenced block. */
export function resultTextContent(result: string): ToolCallContent {
  const truncated = result.length > RESULT_TEXT_LIMIT;
  const body = truncated ? result.slice(0, RESULT_TEXT_LIMIT) : result;
  return textContent(`${fencedBlock(body)}${truncated ? '\n… (truncated)' : ''}`);
}

function commandOf(args: JsonValue): string {
  if (typeof args === 'object' && args !== null && !Array.isArray(args) && typeof args.command === 'string') {
    return args.command;
  }
  return '';
}

/** Content of a `tool_call` at `tool.start` (spec/acp.md §9.3): only terminal commands show something. */
export function runningContent(name: string, args: JsonValue): ToolCallContent[] | undefined {
  if (name !== 'terminal') return undefined;
  return [textContent(fencedBlock(`$ ${commandOf(args)}`, 'sh'))];
}

/** A core file diff as an ACP `diff` block, or its unified text when the core truncated it. */
export function diffContent(diff: FileDiff): ToolCallContent {
  if (diff.truncated) return textContent(fencedBlock(diff.unified, 'diff'));
  return { type: 'diff', path: diff.path, oldText: diff.oldText, newText: diff.newText };
}

/** What a tool call's completion is rendered from; the same for live updates and replay (§9.4). */
export interface CompletionInput {
  name: string;
  args: JsonValue;
  status: CoreToolStatus;
  result: string;
  diffs?: FileDiff[] | undefined;
  /** The client terminal the command ran in, live only. */
  terminalId?: string | undefined;
}

/**
 * Completion content of a tool call (spec/acp.md §9.3, §9.5, §9.6). `undefined` means the update
 * carries no `content` (read_file, todo).
 */
export function completionContent(input: CompletionInput): ToolCallContent[] | undefined {
  if (input.status !== 'completed') return [textContent(input.result)];
  switch (input.name) {
    case 'read_file':
    case 'todo':
      return undefined;
    case 'write_file':
    case 'patch':
      if (input.diffs && input.diffs.length > 0) return input.diffs.map(diffContent);
      return [resultTextContent(input.result)];
    case 'terminal': {
      if (input.terminalId !== undefined) return [{ type: 'terminal', terminalId: input.terminalId }];
      const text = truncateResult(`$ ${commandOf(input.args)}\n${input.result}`);
      return [textContent(fencedBlock(text, 'sh'))];
    }
    default:
      return [resultTextContent(input.result)];
  }
}

/** The ACP status of a finished call; `cancelled` is decided by the caller (§7.1). */
export function completionStatus(status: CoreToolStatus): 'completed' | 'failed' {
  return status === 'completed' ? 'completed' : 'failed';
}

/** `rawOutput`: the structured result when it is small enough (§9.3). */
export function rawOutputOf(structured: JsonValue | undefined): JsonValue | undefined {
  if (structured === undefined) return undefined;
  const json = JSON.stringify(structured);
  if (json === undefined || Buffer.byteLength(json) > RAW_OUTPUT_LIMIT) return undefined;
  return structured;
}

/** The todo list as `plan` entries (spec/acp.md §9.7). */
export function planEntries(todos: readonly TodoItem[]): PlanEntry[] {
  return todos.map((item) =>
    item.status === 'cancelled'
      ? { content: `[cancelled] ${item.content}`, priority: 'medium', status: 'completed' }
      : { content: item.content, priority: 'medium', status: item.status },
  );
}

/** Parses stored tool-call arguments; malformed JSON is kept as the raw string. */
export function parseArguments(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return text;
  }
}
