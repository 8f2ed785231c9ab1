import type { LanguageModelV3Message, LanguageModelV3Prompt, SharedV3ProviderOptions } from '@ai-sdk/provider';
import type { ContentPart } from '../types.js';
import { FAILED_PROMPT_KEY, type TranscriptRow } from './transcript.js';

/** Text of the synthetic result for a tool call that has none (request repair, spec/core.md §7.4). */
export const MISSING_RESULT_TEXT = 'No result was recorded for this call.';

type UserMessage = Extract<LanguageModelV3Message, { role: 'user' }>;
type AssistantMessage = Extract<LanguageModelV3Message, { role: 'assistant' }>;
type ToolMessage = Extract<LanguageModelV3Message, { role: 'tool' }>;
type UserContent = UserMessage['content'][number];

/** How the request is shaped for the provider. */
export interface RequestShape {
  /** The provider needs strict user/assistant alternation. */
  strictAlternation: boolean;
  /** The provider is Anthropic: tool results and following user text share one user turn, cache breakpoints. */
  anthropic: boolean;
}

function userParts(row: TranscriptRow): UserContent[] {
  const parts: ContentPart[] = row.contentParts ?? [{ type: 'text', text: row.content }];
  const out: UserContent[] = [];
  for (const part of parts) {
    if (part.type === 'text') out.push({ type: 'text', text: part.text });
    else {
      const data = part.data !== undefined ? part.data : new URL(part.url ?? '');
      const file: UserContent = { type: 'file', mediaType: part.mediaType, data };
      if (part.type === 'file' && part.filename !== undefined) file.filename = part.filename;
      out.push(file);
    }
  }
  return out;
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // A call whose arguments never parsed was answered with an error; replay them as a string.
    return { _raw: text };
  }
}

/**
 * Builds the model prompt from the transcript (spec/core.md §7.4). Repairs happen here, in the
 * request only, never in storage: results without their call are dropped, calls without a result
 * get a synthetic one, the prompt of a turn that failed with no answer is left out, consecutive user messages and
 * consecutive assistant texts are merged, and the
 * first message is a user message. For strict-alternation providers user text that follows tool
 * results joins the tool-result turn.
 */
export function buildPrompt(
  systemPrompt: string,
  ephemeralSystemPrompt: string | undefined,
  rows: readonly TranscriptRow[],
  shape: RequestShape,
): LanguageModelV3Prompt {
  const knownCalls = new Set<string>();
  const answered = new Set<string>();
  for (const row of rows) {
    for (const call of row.toolCalls ?? []) knownCalls.add(call.id);
    if (row.role === 'tool' && row.toolCallId) answered.add(row.toolCallId);
  }

  const messages: LanguageModelV3Message[] = [];
  const last = () => messages[messages.length - 1];
  let pendingCalls: { id: string; name: string }[] = [];

  const closePendingCalls = () => {
    const missing = pendingCalls.filter((call) => !answered.has(call.id));
    pendingCalls = [];
    if (missing.length === 0) return;
    appendToolResults(
      missing.map((call) => ({ id: call.id, name: call.name, text: MISSING_RESULT_TEXT })),
      messages,
    );
  };

  for (const row of rows) {
    if (row.role === 'tool') {
      if (!row.toolCallId || !knownCalls.has(row.toolCallId)) continue;
      appendToolResults([{ id: row.toolCallId, name: row.toolName ?? 'unknown', text: row.content }], messages);
      continue;
    }
    if (row.role === 'user') {
      // The prompt of a turn that failed with no answer: kept for display, never merged into a later prompt.
      if (row.displayMetadata?.[FAILED_PROMPT_KEY] === true) continue;
      closePendingCalls();
      const previous = last();
      const parts = userParts(row);
      if (previous?.role === 'user') {
        previous.content.push({ type: 'text', text: '\n\n' }, ...parts);
        mergeAdjacentText(previous.content);
      } else if (previous?.role === 'tool' && shape.strictAlternation && !shape.anthropic) {
        // Strict OpenAI-compatible endpoint: the user text rides on the last tool result.
        appendToLastToolResult(previous, parts);
      } else {
        messages.push({ role: 'user', content: parts });
      }
      continue;
    }
    // assistant
    closePendingCalls();
    const content: AssistantMessage['content'] = [];
    if (shape.anthropic && row.reasoning && row.providerMetadata) {
      content.push({
        type: 'reasoning',
        text: row.reasoning,
        providerOptions: row.providerMetadata as SharedV3ProviderOptions,
      });
    }
    if (row.content !== '') content.push({ type: 'text', text: row.content });
    for (const call of row.toolCalls ?? []) {
      content.push({
        type: 'tool-call',
        toolCallId: call.id,
        toolName: call.name,
        input: parseArguments(call.arguments),
      });
      pendingCalls.push({ id: call.id, name: call.name });
    }
    if (content.length === 0) continue;
    const previous = last();
    const textOnly = content.every((part) => part.type === 'text');
    if (previous?.role === 'assistant' && textOnly && previous.content.every((part) => part.type === 'text')) {
      previous.content.push({ type: 'text', text: '\n\n' }, ...content);
      mergeAdjacentText(previous.content);
    } else {
      messages.push({ role: 'assistant', content });
    }
  }
  closePendingCalls();

  if (messages[0]?.role !== 'user')
    messages.unshift({ role: 'user', content: [{ type: 'text', text: '(continuing the conversation)' }] });

  const system: LanguageModelV3Message[] = [{ role: 'system', content: systemPrompt }];
  if (ephemeralSystemPrompt) system.push({ role: 'system', content: ephemeralSystemPrompt });
  const prompt = [...system, ...messages];
  if (shape.anthropic) addCacheBreakpoints(prompt);
  return prompt;
}

function appendToolResults(
  results: { id: string; name: string; text: string }[],
  messages: LanguageModelV3Message[],
): void {
  const parts: ToolMessage['content'] = results.map((result) => ({
    type: 'tool-result',
    toolCallId: result.id,
    toolName: result.name,
    output: { type: 'text', value: result.text },
  }));
  const previous = messages[messages.length - 1];
  if (previous?.role === 'tool') previous.content.push(...parts);
  else messages.push({ role: 'tool', content: parts });
}

function appendToLastToolResult(message: ToolMessage, parts: UserContent[]): void {
  const text = parts
    .filter((part): part is Extract<UserContent, { type: 'text' }> => part.type === 'text')
    .map((part) => part.text)
    .join('');
  for (let index = message.content.length - 1; index >= 0; index -= 1) {
    const part = message.content[index];
    if (part?.type === 'tool-result' && part.output.type === 'text') {
      part.output = { type: 'text', value: `${part.output.value}\n\n${text}` };
      return;
    }
  }
}

function mergeAdjacentText(content: Array<{ type: string; text?: string }>): void {
  for (let index = content.length - 1; index > 0; index -= 1) {
    const current = content[index];
    const before = content[index - 1];
    if (current?.type === 'text' && before?.type === 'text') {
      before.text = `${before.text ?? ''}${current.text ?? ''}`;
      content.splice(index, 1);
    }
  }
}

const CACHE: SharedV3ProviderOptions = { anthropic: { cacheControl: { type: 'ephemeral' } } };

/** Anthropic prompt caching: breakpoints on the system prompt and the last three messages. */
function addCacheBreakpoints(prompt: LanguageModelV3Message[]): void {
  const first = prompt[0];
  if (first) first.providerOptions = { ...first.providerOptions, ...CACHE };
  const conversation = prompt.filter((message) => message.role !== 'system');
  for (const message of conversation.slice(-3)) message.providerOptions = { ...message.providerOptions, ...CACHE };
}
