/**
 * The streaming hot path of OpenAI-compatible chat models (issue 18, ADR 0014). The AI SDK's
 * `@ai-sdk/openai-compatible` model stays the provider layer: it builds the request (messages,
 * tools, provider options, headers), sends it, and turns every failed response into its usual
 * `APICallError`. Only the body of a successful stream is parsed here instead of by the SDK's chain
 * of web streams and zod schemas, which cost about a third of a streamed turn's CPU: the SSE is
 * split by `eventsource-parser`, each chunk read with `JSON.parse` and checked by hand, and the
 * parts are the ones the SDK model emits for the same chunks.
 */
import {
  InvalidResponseDataError,
  JSONParseError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3FinishReason,
  type LanguageModelV3StreamPart,
  type LanguageModelV3Usage,
  type SharedV3ProviderMetadata,
  type SharedV3Warning,
  TypeValidationError,
} from '@ai-sdk/provider';
import { StreamingToolCallTracker } from '@ai-sdk/provider-utils';
import { createParser } from 'eventsource-parser';
import {
  type BodyText,
  bodyText,
  bufferedResponse,
  headerRecord,
  plainRequest,
  send,
  webBodyText,
} from './node-http-call.js';
import { PART_BATCHES, type PartBatches } from './part-batches.js';

type Json = Record<string, unknown>;

/** The marker header of a stream call's request; never sent. */
const CALL_HEADER = 'x-hermes-lean-call';
let nextCall = 0;

/** What the SDK's own `doStream` learnt before the body: its warnings and provider-options key. */
interface SdkPreamble {
  warnings: SharedV3Warning[];
  metadataKey: string;
}

/**
 * The SDK's `transformRequestBody` hook. Its public type names the request body only; the SDK passes
 * the call's warnings as a second argument, used when present.
 */
export type TransformRequestBody = (
  args: Record<string, unknown>,
  warnings?: SharedV3Warning[],
) => Record<string, unknown>;

/**
 * The JSON of each declared tool of a request, by its schema object, then by the rest of its entry. The core declares
 * a tool's schema once (`toFunctionTool`), and the SDK builds a new entry around it for every request; the tools were
 * most of a short turn's request body, and encoding them again on every call was the largest part of the SDK's request
 * build (ADR 0080).
 */
const toolJsonBySchema = new WeakMap<object, KeptToolJson[]>();

/** The JSON of one tool entry, with what it was made of besides its schema. */
interface KeptToolJson {
  keys: string;
  name: string;
  description: unknown;
  strict: unknown;
  json: string;
}

/**
 * `tools` of a request body (the SDK's OpenAI-compatible function entries) as JSON, the same text `JSON.stringify`
 * gives, from the kept JSON of each entry; null when an entry is not of that plain shape, and the body is then encoded
 * as the SDK encodes it.
 */
export function toolsJson(tools: unknown): string | null {
  return encodedTools(tools)?.json ?? null;
}

/** A request's tools, encoded: their JSON, and the body's end that carries them as UTF-8 bytes. */
export interface EncodedTools {
  /** The `tools` array as `JSON.stringify` writes it. */
  json: string;
  /** `,"tools":<json>}` as UTF-8: what follows the rest of the body's keys (without its first byte after `{`). */
  tail: Buffer;
}

/**
 * The last few tool lists encoded, by their kept entries: a turn's model calls declare the same tools each time, so
 * the list's text and its bytes are made once, where joining the entries and encoding the joined text copied the
 * tools twice per call (ADR 0093).
 */
const encodedLists: { entries: KeptToolJson[]; encoded: EncodedTools }[] = [];

/** The tools of a request body encoded from the kept JSON of each entry; null when an entry is not of the plain shape. */
export function encodedTools(tools: unknown): EncodedTools | null {
  if (!Array.isArray(tools) || tools.length === 0) return null;
  const entries: KeptToolJson[] = [];
  for (const tool of tools as unknown[]) {
    const found = keptToolJson(tool);
    if (found === null) return null;
    entries.push(found);
  }
  for (let index = encodedLists.length - 1; index >= 0; index -= 1) {
    const list = encodedLists[index] as (typeof encodedLists)[number];
    if (list.entries.length === entries.length && list.entries.every((entry, at) => entry === entries[at]))
      return list.encoded;
  }
  const json = `[${entries.map((entry) => entry.json).join(',')}]`;
  const encoded = { json, tail: Buffer.from(`,"tools":${json}}`) };
  // Different tool sets (agents, toolsets, a client's own tools) each keep theirs while they are among the latest.
  if (encodedLists.length >= 16) encodedLists.shift();
  encodedLists.push({ entries, encoded });
  return encoded;
}

/** The kept JSON of one tool entry (made on its first sight); null when the entry is not of the plain shape. */
function keptToolJson(tool: unknown): KeptToolJson | null {
  if (tool === null || typeof tool !== 'object') return null;
  const entry = tool as { type?: unknown; function?: unknown };
  const declared = entry.function as
    | { name?: unknown; description?: unknown; parameters?: unknown; strict?: unknown }
    | null
    | undefined;
  if (entry.type !== 'function' || declared === null || typeof declared !== 'object') return null;
  const { name, description, parameters, strict } = declared;
  if (typeof name !== 'string' || parameters === null || typeof parameters !== 'object') return null;
  if (description !== undefined && typeof description !== 'string') return null;
  if (strict !== undefined && typeof strict !== 'boolean') return null;
  // The keys and their order make the text: only the shape the SDK builds is kept.
  const keys = Object.keys(declared).join(',');
  if (Object.keys(entry).join(',') !== 'type,function' || !PLAIN_TOOL_KEYS.has(keys)) return null;
  let kept = toolJsonBySchema.get(parameters);
  if (kept === undefined) {
    kept = [];
    toolJsonBySchema.set(parameters, kept);
  }
  // The same strings each call (the declared tool's): compared by identity first, so a hit costs no hashing.
  let found = kept.find(
    (candidate) =>
      candidate.name === name &&
      candidate.description === description &&
      candidate.strict === strict &&
      candidate.keys === keys,
  );
  if (found === undefined) {
    found = { keys, name, description, strict, json: JSON.stringify(tool) };
    // A schema shared by many names or descriptions keeps its latest few.
    if (kept.length >= 8) kept.shift();
    kept.push(found);
  }
  return found;
}

/** The key orders of a function entry the SDK builds (`strict` only when set; `description` may be undefined). */
const PLAIN_TOOL_KEYS = new Set(['name,description,parameters', 'name,description,parameters,strict']);

/** Thrown by the wrapping fetch to end the SDK's `doStream` once the response of a stream call is kept. */
class KeptStream extends Error {}
/**
 * The one instance thrown: it carries nothing, and building an Error per call captured a stack trace each time (about
 * 1% of a busy server's CPU at 1,000 concurrent chats).
 */
const KEPT = new KeptStream('kept for the lean parse');

/** The SDK's provider-options key (`resolveProviderOptionsKey` of `@ai-sdk/openai-compatible`). */
function metadataKeyOf(provider: string, options: LanguageModelV3CallOptions): string {
  const raw = provider.split('.')[0]?.trim() ?? '';
  const camel = raw.replace(/[_-]([a-z])/g, (match) => (match[1] ?? '').toUpperCase());
  return camel !== raw && options.providerOptions?.[camel] != null ? camel : raw;
}

/**
 * Wraps `createSdkModel(fetch, transformRequestBody)` (an `@ai-sdk/openai-compatible` chat model
 * using that fetch and that request-body hook) into a model whose `doStream` parses successful
 * streams itself. The SDK builds the request and sends it through the fetch; the fetch keeps a stream
 * call's successful event-stream response for the lean parser and ends the SDK's call there with a
 * private error, so the SDK never sets up its own parse of the body (ADR 0021). The warnings and the
 * request body come from the hook, which the SDK calls synchronously just before it fetches; when it
 * did not (another SDK version), the fetch hands the SDK an empty stream instead and reads them from
 * its parts (ADR 0014). Errors, non-stream responses and `doGenerate`'s responses reach the SDK as they came.
 *
 * Without a `fetch` of the caller's, stream and generate calls are sent with `node:http` (ADR 0026,
 * ADR 0080); their other responses reach the SDK as a `Response` read in full. With one, every call goes
 * through it.
 */
export function createLeanCompatibleChatModel(
  createSdkModel: (fetch: typeof globalThis.fetch, transformRequestBody: TransformRequestBody) => LanguageModelV3,
  fetch?: typeof globalThis.fetch,
): LanguageModelV3 {
  // One SDK model for every call (creating one builds its zod schemas). A stream call's request
  // carries a marker header, taken off before it is sent, naming the call its response goes to (an
  // AsyncLocalStorage would do it too, but turns on promise hooks for the whole process).
  const calls = new Map<string, LeanCall>();
  /** Set by the hook and taken by the fetch the SDK calls next, in the same synchronous run. */
  let built: { body: Record<string, unknown>; warnings: SharedV3Warning[] } | null = null;
  /**
   * Set by the hook when it took the tools out of the body the SDK encodes, and taken by the fetch the SDK calls next,
   * which puts their kept JSON back into the text. Dropped at the next microtask, so a call that failed between the
   * two never lends its tools to another.
   */
  let toolsOut: { tools: EncodedTools; sent: Record<string, unknown>; given: unknown } | null = null;
  const transformRequestBody: TransformRequestBody = (args, warnings) => {
    built = Array.isArray(warnings) ? { body: args, warnings } : null;
    toolsOut = null;
    const tools = encodedTools(args.tools);
    if (tools === null) return args;
    // `undefined` keeps the key's place in the object the SDK keeps (its errors' `requestBodyValues`), and
    // `JSON.stringify` leaves it out of the text.
    const sent = { ...args, tools: undefined };
    const taken = { tools, sent, given: args.tools };
    toolsOut = taken;
    queueMicrotask(() => {
      if (toolsOut === taken) toolsOut = null;
    });
    return sent;
  };
  /**
   * The request with the tools the hook took out put back, last (the same JSON object). When the SDK encoded the body
   * as text, `init` keeps that text and `tools` says how the tools follow it: node:http sends the text without its
   * closing brace and then the tools' kept bytes (`tail`), fetch gets the two joined (`joined`).
   */
  const withTools = (
    given: RequestInit | undefined,
  ): { init: RequestInit | undefined; tools: { tail: Buffer; joined: () => string } | null } => {
    const taken = toolsOut;
    toolsOut = null;
    if (taken === null) return { init: given, tools: null };
    // The SDK encoded `sent` just now; the object it keeps gets its tools back.
    taken.sent.tools = taken.given;
    const body = given?.body;
    // Not the text of the object (another SDK version): the object, tools and all, encoded again.
    if (typeof body !== 'string' || !body.endsWith('}'))
      return { init: { ...given, body: JSON.stringify(taken.sent) }, tools: null };
    const bare = body === '{}';
    const { json, tail } = taken.tools;
    return {
      init: given,
      tools: {
        tail: bare ? tail.subarray(1) : tail,
        joined: () => `${body.slice(0, -1)}${bare ? '' : ','}"tools":${json}}`,
      },
    };
  };
  /** Keeps the event stream of a successful stream call: ends the SDK's call, or hands it an empty stream. */
  const keepStream = (call: LeanCall, kept: KeptBody, status: number, request: typeof built) => {
    call.kept = kept;
    if (request !== null && request.body.stream === true) {
      call.request = request;
      throw KEPT;
    }
    // The SDK reads these headers as a record too (its extractResponseHeaders), so the record loses nothing.
    return new Response('', { status, headers: kept.headers });
  };
  const keep: typeof globalThis.fetch = async (input, given) => {
    const request = built;
    built = null;
    const { init, tools } = withTools(given);
    const headers = init?.headers as Record<string, string> | undefined;
    const id = headers?.[CALL_HEADER];
    let sent = init;
    if (headers !== undefined && id !== undefined) {
      const { [CALL_HEADER]: _marker, ...rest } = headers;
      sent = { ...init, headers: rest };
    }
    const call = id === undefined ? undefined : calls.get(id);
    const plain = call && fetch === undefined ? plainRequest(input, sent) : null;
    if (call && plain !== null) {
      if (tools !== null && typeof plain.body === 'string') {
        // The SDK's text encoded once, its closing brace left off, then the tools' kept bytes: what the joined text
        // is in UTF-8, without the join, its flattening and the encoding of the tools again (ADR 0093).
        const head = Buffer.from(plain.body);
        plain.body = [head.subarray(0, head.length - 1), tools.tail];
      }
      const message = await send(plain);
      const status = message.statusCode ?? 0;
      const type = String(message.headers['content-type'] ?? '');
      if (call.generate === undefined && status >= 200 && status < 300 && type.includes('text/event-stream')) {
        return keepStream(
          call,
          { body: bodyText(message, plain.signal), headers: headerRecord(message) },
          status,
          request,
        );
      }
      if (status < 300 || status >= 400 || message.headers.location === undefined) return bufferedResponse(message);
      // A redirect is fetch's to follow; the stream it leads to is kept all the same.
      message.resume();
    }
    if (tools !== null) sent = { ...sent, body: tools.joined() };
    // The global fetch as it is at the call, as the SDK itself would look it up.
    const response = await (fetch ?? globalThis.fetch)(input, sent);
    const type = response.headers.get('content-type') ?? '';
    if (!call || call.generate || !response.ok || response.body === null || !type.includes('text/event-stream'))
      return response;
    const kept = { body: webBodyText(response.body), headers: Object.fromEntries(response.headers) };
    return keepStream(call, kept, response.status, request);
  };
  const sdk = createSdkModel(keep, transformRequestBody);
  keepRequestConfig(sdk);
  return {
    specificationVersion: 'v3',
    provider: sdk.provider,
    modelId: sdk.modelId,
    supportedUrls: sdk.supportedUrls,
    // A generate call (a title, a compression summary) goes out through node:http as a stream call does, its
    // response read in full into a `Response` for the SDK: fetch's request and body streams cost more than the call's
    // own work for a short answer (issue 34).
    doGenerate: async (options) => {
      nextCall += 1;
      const id = String(nextCall);
      calls.set(id, { generate: true });
      try {
        return await sdk.doGenerate({ ...options, headers: { ...options.headers, [CALL_HEADER]: id } });
      } finally {
        calls.delete(id);
      }
    },
    doStream: async (options) => {
      nextCall += 1;
      const id = String(nextCall);
      const call: LeanCall = {};
      calls.set(id, call);
      let result: Awaited<ReturnType<LanguageModelV3['doStream']>> | null = null;
      try {
        result = await sdk.doStream({ ...options, headers: { ...options.headers, [CALL_HEADER]: id } });
      } catch (error) {
        if (!(error instanceof KeptStream)) throw error;
      } finally {
        calls.delete(id);
      }
      const kept = call.kept;
      if (kept === undefined) {
        if (result === null) throw new Error('the lean stream call lost its response');
        return result;
      }
      if (result === null) {
        const request = call.request;
        const preamble = { warnings: request?.warnings ?? [], metadataKey: metadataKeyOf(sdk.provider, options) };
        const lean = leanStream(kept.body, options, preamble);
        // The turn loop takes the batch reader from the result (ADR 0108): the `ReadableStream` is made only for a
        // caller that reads `stream`, and a web stream (its controller, its transfer set-up) cost about 1% of a
        // short turn's CPU.
        const leanResult = {
          request: { body: request?.body },
          response: { headers: kept.headers },
          get stream(): ReadableStream<LanguageModelV3StreamPart> {
            return lean.readable();
          },
        };
        Object.defineProperty(leanResult, PART_BATCHES, { value: lean.take });
        return leanResult;
      }
      const preamble = await readPreamble(result.stream);
      return { ...result, stream: leanStream(kept.body, options, preamble).readable() };
    },
  };
}

/**
 * The SDK model's request settings that are the same on every call, kept after their first use (ADR 0098). The
 * OpenAI-compatible chat model asks its config for the provider's headers (an undici `Headers` built, the user-agent
 * suffix added, then copied back to a record) and for the URL (a `URL` parsed and printed) on each call; neither
 * depends on the call, and a model is made anew when its settings change. The kept headers record is only read by
 * the SDK, which combines it into a new object. A config without these functions (another SDK version) is left alone.
 */
function keepRequestConfig(sdk: LanguageModelV3): void {
  const config = (sdk as { config?: unknown }).config as { headers?: unknown; url?: unknown } | undefined;
  if (typeof config !== 'object' || config === null) return;
  const headers = config.headers;
  if (typeof headers === 'function') {
    let kept: unknown;
    config.headers = () => {
      kept ??= headers.call(config);
      return kept;
    };
  }
  const url = config.url;
  if (typeof url === 'function') {
    const urls = new Map<string, unknown>();
    config.url = (options: { modelId: string; path: string }) => {
      const key = `${options.modelId}\n${options.path}`;
      let found = urls.get(key);
      if (found === undefined) {
        found = url.call(config, options);
        // Only a few paths (chat completions) are ever asked; a bound keeps an odd caller from growing it.
        if (urls.size < 16) urls.set(key, found);
      }
      return found;
    };
  }
}

/** A kept event stream: its body and response headers. */
interface KeptBody {
  body: BodyText;
  headers: Record<string, string>;
}

/** A stream call in flight: its kept response and, when the hook ran, its request body and warnings. */
interface LeanCall {
  /** A `doGenerate` call: its response, whatever it is, is read in full for the SDK. */
  generate?: true;
  kept?: KeptBody;
  request?: { body: Record<string, unknown>; warnings: SharedV3Warning[] };
}

/** Reads the SDK's stream over the empty body to its end: the warnings and the metadata key. */
async function readPreamble(stream: ReadableStream<LanguageModelV3StreamPart>): Promise<SdkPreamble> {
  const preamble: SdkPreamble = { warnings: [], metadataKey: '' };
  const reader = stream.getReader();
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    const part = next.value;
    if (part.type === 'stream-start') preamble.warnings = part.warnings;
    else if (part.type === 'finish') preamble.metadataKey = Object.keys(part.providerMetadata ?? {})[0] ?? '';
  }
  return preamble;
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const optional = (value: unknown, type: 'string' | 'number'): boolean => value == null || typeof value === type;

/** Why a parsed chunk does not have the shape of a chat completion chunk, or null when it does. */
function chunkShapeError(value: unknown): string | null {
  if (!isObject(value)) return 'a chunk must be an object';
  if (!optional(value.id, 'string') || !optional(value.model, 'string') || !optional(value.created, 'number'))
    return 'id, model and created must be a string, a string and a number';
  if (!Array.isArray(value.choices)) return 'choices must be an array';
  for (const choice of value.choices) {
    if (!isObject(choice)) return 'a choice must be an object';
    if (!optional(choice.finish_reason, 'string')) return 'finish_reason must be a string';
    const delta = choice.delta;
    if (delta == null) continue;
    if (!isObject(delta)) return 'delta must be an object';
    if (delta.content != null && typeof delta.content !== 'string' && !Array.isArray(delta.content))
      return 'delta.content must be a string or an array';
    if (!optional(delta.reasoning_content, 'string') || !optional(delta.reasoning, 'string'))
      return 'delta.reasoning_content must be a string';
    if (delta.tool_calls != null) {
      if (!Array.isArray(delta.tool_calls)) return 'delta.tool_calls must be an array';
      for (const call of delta.tool_calls) {
        if (!isObject(call)) return 'a tool call delta must be an object';
        if (!optional(call.index, 'number') || !optional(call.id, 'string'))
          return 'a tool call index must be a number';
        if (call.function != null) {
          if (!isObject(call.function)) return 'a tool call function must be an object';
          if (!optional(call.function.name, 'string') || !optional(call.function.arguments, 'string'))
            return 'a tool call name and arguments must be strings';
        }
      }
    }
  }
  if (value.usage != null && !isObject(value.usage)) return 'usage must be an object';
  return null;
}

/** An error chunk (`{ "error": { "message": … } }`), as the SDK's error schema accepts it. */
function isErrorChunk(value: unknown): value is { error: Json } {
  return isObject(value) && isObject(value.error) && typeof value.error.message === 'string';
}

/** Text and reasoning pieces of `delta.content` (a string, or an array of content parts). */
function contentPieces(content: unknown): { reasoning: boolean; text: string }[] {
  if (typeof content === 'string') return content === '' ? [] : [{ reasoning: false, text: content }];
  if (!Array.isArray(content)) return [];
  const pieces: { reasoning: boolean; text: string }[] = [];
  for (const part of content as unknown[]) {
    if (!isObject(part)) continue;
    if (part.type === 'text' && typeof part.text === 'string' && part.text !== '') {
      pieces.push({ reasoning: false, text: part.text });
    } else if (part.type === 'thinking' && Array.isArray(part.thinking)) {
      const text = (part.thinking as unknown[])
        .filter((piece): piece is Json => isObject(piece) && piece.type === 'text' && typeof piece.text === 'string')
        .map((piece) => piece.text as string)
        .join('');
      if (text !== '') pieces.push({ reasoning: true, text });
    }
  }
  return pieces;
}

const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

/** The wire usage in the SDK's terms (cache reads and reasoning tokens split out). */
export function convertChatUsage(usage: Json | undefined): LanguageModelV3Usage {
  if (usage === undefined) {
    return {
      inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      raw: undefined,
    };
  }
  const prompt = num(usage.prompt_tokens) ?? 0;
  const completion = num(usage.completion_tokens) ?? 0;
  const cached = isObject(usage.prompt_tokens_details) ? (num(usage.prompt_tokens_details.cached_tokens) ?? 0) : 0;
  const reasoning = isObject(usage.completion_tokens_details)
    ? (num(usage.completion_tokens_details.reasoning_tokens) ?? 0)
    : 0;
  return {
    inputTokens: { total: prompt, noCache: prompt - cached, cacheRead: cached, cacheWrite: undefined },
    outputTokens: { total: completion, text: Math.max(0, completion - reasoning), reasoning },
    raw: usage as LanguageModelV3Usage['raw'],
  };
}

/** OpenAI's finish reasons in the SDK's unified terms. */
export function unifiedFinishReason(raw: string, refused: boolean): LanguageModelV3FinishReason['unified'] {
  switch (raw) {
    case 'stop':
      return refused ? 'content-filter' : 'stop';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content-filter';
    case 'function_call':
    case 'tool_calls':
      return 'tool-calls';
    default:
      return 'other';
  }
}

/** Line feed. */
const LF = 10;

/**
 * A chunk's text split around its `delta.content` string: what a later chunk that differs only in that string starts
 * and ends with (ADR 0089). A model streams every content delta in the same JSON around a different text, and most of
 * a delta's parse was `JSON.parse` building that same object again for one new string.
 */
interface ContentSkeleton {
  /** The text up to and including the content string's opening quote. */
  head: string;
  /** The text from the content string's closing quote on. */
  tail: string;
}

/** The `"content"` string token, as the one key {@link contentSkeleton} accepts. */
const CONTENT_KEY = '"content"';

/**
 * The skeleton of `data`, a chunk whose `delta.content` parsed as `content`, or null when the content string cannot be
 * told apart from the rest of the text. Accepted: no backslash anywhere (no escapes, so every key and string is
 * written as it reads, and a quote is always a token's edge), and exactly one `"content"` token, followed at once by
 * `:` and the string. Without escapes a `"content"` in the text can only be the string token "content", so the one
 * there is the delta's key and the string after it is `content`.
 */
function contentSkeleton(data: string, content: string): ContentSkeleton | null {
  if (data.indexOf('\\') !== -1) return null;
  const key = data.indexOf(CONTENT_KEY);
  if (key === -1 || data.indexOf(CONTENT_KEY, key + 1) !== -1) return null;
  const open = key + CONTENT_KEY.length + 1;
  if (data.charCodeAt(open - 1) !== 58 /* : */ || data.charCodeAt(open) !== 34 /* " */) return null;
  const close = open + 1 + content.length;
  if (data.charCodeAt(close) !== 34 || !data.startsWith(content, open + 1)) return null;
  return { head: ownCopy(data.slice(0, open + 1)), tail: ownCopy(data.slice(close)) };
}

/**
 * `text` as a string of its own. V8 keeps a slice of 13 characters or more as a view into the string it was cut from,
 * here the body chunk (up to 64 KB) the event came in: a skeleton kept for the whole stream would keep that alive.
 * Split into UTF-16 code units and joined, it is copied exactly, lone surrogates included.
 */
function ownCopy(text: string): string {
  return text.split('').join('');
}

/**
 * The content string of `data` when it is `skeleton`'s text around a new string that needs no escape (no quote,
 * backslash or control character, so it is the same string in JSON and as it reads), else null. Such a chunk parses
 * as the skeleton's own chunk with that string as its `delta.content`.
 */
function contentInSkeleton(data: string, skeleton: ContentSkeleton): string | null {
  const { head, tail } = skeleton;
  const end = data.length - tail.length;
  if (end < head.length || !data.startsWith(head) || !data.endsWith(tail)) return null;
  for (let index = head.length; index < end; index += 1) {
    const code = data.charCodeAt(index);
    if (code < 32 || code === 34 || code === 92) return null;
  }
  return data.slice(head.length, end);
}

/**
 * The stream parts of one successful chat completion stream: its batch reader (`take`, at most once, and not once the
 * stream is being read part by part) and its `ReadableStream` (`readable`, made on first use, locked for good when the
 * batch reader was taken).
 */
function leanStream(
  body: BodyText,
  options: LanguageModelV3CallOptions,
  preamble: SdkPreamble,
): { take: () => PartBatches | null; readable: () => ReadableStream<LanguageModelV3StreamPart> } {
  let out: LanguageModelV3StreamPart[] = [];
  const emit = (part: LanguageModelV3StreamPart): void => {
    out.push(part);
  };
  /**
   * Set once the batch reader has the stream. Its reader, the turn loop, joins a batch's consecutive deltas into one
   * event anyway (ADR 0078), so here they are one part from the start: no part object per delta (ADR 0089).
   */
  let joinDeltas = false;
  /** The texts of the delta part last in `out`, while the batch reader reads; joined into it when handed out. */
  let run: { part: { type: string; delta: string }; texts: string[] } | null = null;
  /** Gives the run's part its joined text; the run is over. */
  const endRun = (): void => {
    if (run !== null && run.texts.length > 1) run.part.delta = run.texts.join('');
    run = null;
  };
  /** Emits a text or reasoning delta, or adds it to the run of the same kind that ends `out`. */
  const emitDelta = (type: 'text-delta' | 'reasoning-delta', id: string, delta: string): void => {
    if (run !== null && run.part.type === type && out[out.length - 1] === run.part) {
      run.texts.push(delta);
      return;
    }
    endRun();
    const part = { type, id, delta };
    emit(part as LanguageModelV3StreamPart);
    if (joinDeltas) run = { part, texts: [delta] };
  };
  // The tracker only enqueues; its parts join the ones of the current body chunk.
  const sink = { enqueue: emit } as unknown as ReadableStreamDefaultController<LanguageModelV3StreamPart>;
  const tracker = new StreamingToolCallTracker(sink, {
    extractMetadata: (delta: { extra_content?: { google?: { thought_signature?: string } } }) => {
      const signature = delta.extra_content?.google?.thought_signature;
      return signature ? { [preamble.metadataKey]: { thoughtSignature: signature } } : undefined;
    },
    buildToolCallProviderMetadata: (metadata: SharedV3ProviderMetadata | undefined) => metadata,
  } as ConstructorParameters<typeof StreamingToolCallTracker>[1]);
  /** Tool call deltas held until their name is known, by index. */
  const pending = new Map<number, { id: string | null; args: string; extra: unknown }>();
  const forwarded = new Set<number>();
  let finish: LanguageModelV3FinishReason | undefined;
  let rawFinish: string | undefined;
  let usage: Json | undefined;
  let first = true;
  let inReasoning = false;
  let inText = false;
  let refused = false;
  /** The last plain content chunk's text around its content (ADR 0089); null before there is one. */
  let skeleton: ContentSkeleton | null = null;

  const reasoningDelta = (delta: string) => {
    if (inText) {
      emit({ type: 'text-end', id: 'txt-0' });
      inText = false;
    }
    if (!inReasoning) {
      emit({ type: 'reasoning-start', id: 'reasoning-0' });
      inReasoning = true;
    }
    emitDelta('reasoning-delta', 'reasoning-0', delta);
  };
  const textDelta = (delta: string) => {
    if (inReasoning) {
      emit({ type: 'reasoning-end', id: 'reasoning-0' });
      inReasoning = false;
    }
    if (!inText) {
      emit({ type: 'text-start', id: 'txt-0' });
      inText = true;
    }
    emitDelta('text-delta', 'txt-0', delta);
  };
  const toolCallDelta = (call: Json) => {
    const fn = isObject(call.function) ? call.function : undefined;
    const index = num(call.index);
    if (index === undefined || forwarded.has(index)) {
      tracker.processDelta(call as Parameters<StreamingToolCallTracker['processDelta']>[0]);
      return;
    }
    let held = pending.get(index);
    if (!held) {
      held = { id: (call.id as string | undefined) ?? null, args: '', extra: call.extra_content ?? null };
      pending.set(index, held);
    } else {
      if (held.id === null && call.id != null) held.id = call.id as string;
      if (held.extra === null && call.extra_content != null) held.extra = call.extra_content;
    }
    if (typeof fn?.arguments === 'string') held.args += fn.arguments;
    if (typeof fn?.name === 'string') {
      tracker.processDelta({
        index,
        id: held.id,
        function: { name: fn.name, arguments: held.args },
        extra_content: held.extra ?? undefined,
      } as Parameters<StreamingToolCallTracker['processDelta']>[0]);
      pending.delete(index);
      forwarded.add(index);
    }
  };

  const onChunk = (data: string) => {
    if (data === '[DONE]') return;
    if (skeleton !== null) {
      // The same chunk as the last plain one but for its content: what parsing it would do, without the parse.
      const content = contentInSkeleton(data, skeleton);
      if (content !== null) {
        if (content !== '') textDelta(content);
        return;
      }
    }
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch (cause) {
      finish = { unified: 'error', raw: undefined };
      emit({ type: 'error', error: new JSONParseError({ text: data, cause }) });
      return;
    }
    if (options.includeRawChunks) emit({ type: 'raw', rawValue: value });
    if (isErrorChunk(value)) {
      finish = { unified: 'error', raw: undefined };
      emit({ type: 'error', error: value.error });
      return;
    }
    const shapeError = chunkShapeError(value);
    if (shapeError !== null) {
      finish = { unified: 'error', raw: undefined };
      emit({ type: 'error', error: new TypeValidationError({ value, cause: new Error(shapeError) }) });
      return;
    }
    const chunk = value as Json & { choices: Json[] };
    if (first) {
      first = false;
      emit({
        type: 'response-metadata',
        id: (chunk.id as string | null | undefined) ?? undefined,
        modelId: (chunk.model as string | null | undefined) ?? undefined,
        timestamp: chunk.created != null ? new Date((chunk.created as number) * 1000) : undefined,
      });
    }
    if (isObject(chunk.usage)) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (typeof choice?.finish_reason === 'string') rawFinish = choice.finish_reason;
    const delta = choice?.delta;
    if (!isObject(delta)) return;
    const reasoningContent = (delta.reasoning_content ?? delta.reasoning) as string | null | undefined;
    if (reasoningContent) reasoningDelta(reasoningContent);
    const content = delta.content;
    // The usual content is a string: no pieces array for it (one per delta).
    if (typeof content === 'string') {
      if (content !== '') textDelta(content);
      // A chunk that only carries text is one a later chunk may repeat around another text: no usage, finish,
      // reasoning, refusal or tool call, the metadata already sent, and nobody asking for the raw chunks.
      if (
        !options.includeRawChunks &&
        chunk.usage == null &&
        choice?.finish_reason == null &&
        !reasoningContent &&
        (delta.refusal == null || delta.refusal === '') &&
        (delta.tool_calls == null || (Array.isArray(delta.tool_calls) && delta.tool_calls.length === 0))
      )
        // A text the skeleton cannot hold (an escape in it) keeps the last one: a later plain delta still matches it.
        skeleton = contentSkeleton(data, content) ?? skeleton;
    } else {
      for (const piece of contentPieces(content)) {
        if (piece.reasoning) reasoningDelta(piece.text);
        else textDelta(piece.text);
      }
    }
    if (typeof delta.refusal === 'string' && delta.refusal !== '') {
      refused = true;
      textDelta(delta.refusal);
    }
    if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) {
      if (inReasoning) {
        emit({ type: 'reasoning-end', id: 'reasoning-0' });
        inReasoning = false;
      }
      for (const call of delta.tool_calls as Json[]) toolCallDelta(call);
    }
  };

  const onEnd = () => {
    if (inReasoning) emit({ type: 'reasoning-end', id: 'reasoning-0' });
    if (inText) emit({ type: 'text-end', id: 'txt-0' });
    for (const [index, held] of pending) {
      tracker.processDelta({ index, id: held.id, function: { arguments: held.args } } as Parameters<
        StreamingToolCallTracker['processDelta']
      >[0]);
    }
    pending.clear();
    tracker.flush();
    if (rawFinish !== undefined) finish = { unified: unifiedFinishReason(rawFinish, refused), raw: rawFinish };
    if (finish === undefined) {
      finish = { unified: 'error', raw: undefined };
      emit({
        type: 'error',
        error: new InvalidResponseDataError({
          data: undefined,
          message: 'Response stream ended without a finish reason.',
        }),
      });
    }
    const metadata: Json = {};
    const details = usage?.completion_tokens_details;
    if (isObject(details)) {
      if (details.accepted_prediction_tokens != null)
        metadata.acceptedPredictionTokens = details.accepted_prediction_tokens;
      if (details.rejected_prediction_tokens != null)
        metadata.rejectedPredictionTokens = details.rejected_prediction_tokens;
    }
    emit({
      type: 'finish',
      finishReason: finish,
      usage: convertChatUsage(usage),
      providerMetadata: { [preamble.metadataKey]: metadata } as SharedV3ProviderMetadata,
    });
  };

  const parser = createParser({ onEvent: (event) => onChunk(event.data) });
  /** The text after the last complete event fed to the parser: the start of an event whose end has not come yet. */
  let carry = '';
  /** Set once the stream shows a CR: its events may end in CR LF or CR, which only the parser finds. */
  let crLineEnds = false;
  /**
   * Feeds a body chunk to the parser in pieces that end where events end (ADR 0078). Given a chunk while it holds the
   * start of an event, eventsource-parser joins the two and parses the copy: every body chunk of a long answer was
   * copied once more (a tenth of what a 10,000-delta answer allocated). Here the unfinished event goes in with the
   * next chunk's first event, the complete events after it as a slice of the chunk, and the rest waits for its end.
   * An event is dispatched exactly when it was before: at its blank line.
   */
  const feed = (text: string): void => {
    if (crLineEnds || text.indexOf('\r') !== -1) {
      crLineEnds = true;
      if (carry !== '') parser.feed(carry);
      carry = '';
      parser.feed(text);
      return;
    }
    // The blank line may be split between the chunks: the held text ends with LF and this chunk starts with one.
    const straddles = carry.charCodeAt(carry.length - 1) === LF && text.charCodeAt(0) === LF;
    const lastBreak = text.lastIndexOf('\n\n');
    const lastEnd = lastBreak !== -1 ? lastBreak + 2 : straddles ? 1 : 0;
    if (lastEnd === 0) {
      carry += text;
      return;
    }
    if (carry !== '') {
      const firstEnd = straddles ? 1 : text.indexOf('\n\n') + 2;
      parser.feed(carry + text.slice(0, firstEnd));
      if (lastEnd > firstEnd) parser.feed(text.slice(firstEnd, lastEnd));
    } else parser.feed(lastEnd === text.length ? text : text.slice(0, lastEnd));
    carry = lastEnd === text.length ? '' : text.slice(lastEnd);
  };
  emit({ type: 'stream-start', warnings: preamble.warnings });
  let ended = false;
  /** The parts of the next body chunk that yields any (one chunk, or more when a chunk ends mid-event); null once all were handed out. */
  const nextParts = async (): Promise<LanguageModelV3StreamPart[] | null> => {
    while (out.length === 0 && !ended) {
      const text = await body.read();
      if (text === null) {
        ended = true;
        // What the parser held of an unfinished event before; it dispatches nothing without a blank line.
        if (carry !== '') parser.feed(carry);
        carry = '';
        onEnd();
      } else {
        feed(text);
      }
    }
    if (out.length === 0) return null;
    endRun();
    const parts = out;
    out = [];
    return parts;
  };
  let cancelled = false;
  const batches: PartBatches = {
    async read() {
      if (cancelled) return null;
      const parts = await nextParts();
      return cancelled ? null : parts;
    },
    cancel(reason) {
      cancelled = true;
      return body.cancel(reason);
    },
  };
  let taken = false;
  let stream: ReadableStream<LanguageModelV3StreamPart> | undefined;
  const take = (): PartBatches | null => {
    if (taken || stream?.locked) return null;
    taken = true;
    joinDeltas = true;
    // Locked for good: the parts go to the batch reader only.
    stream?.getReader();
    return batches;
  };
  const readable = (): ReadableStream<LanguageModelV3StreamPart> => {
    if (stream !== undefined) return stream;
    // High-water mark 0: nothing is read before a reader asks, so a batch reader can take the stream first.
    stream = new ReadableStream<LanguageModelV3StreamPart>(
      {
        async pull(controller) {
          const parts = await nextParts();
          if (parts !== null) for (const part of parts) controller.enqueue(part);
          if (ended && out.length === 0) controller.close();
        },
        cancel(reason) {
          return body.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
    Object.defineProperty(stream, PART_BATCHES, { value: take });
    if (taken) stream.getReader();
    return stream;
  };
  return { take, readable };
}
