import type TurndownService from 'turndown';
import * as z from 'zod';
import { untilAborted } from '../util/abort.js';
import { importOnFirstUse } from '../util/import-on-first-use.js';
import { VERSION } from '../version.js';
import { errorMessage } from './file-access.js';
import { cutText } from './text.js';
import type { ToolDefinition, ToolResult } from './types.js';
import { type CheckedTarget, createAddressGuard, type HostLookup, PrivateAddressRefused } from './web-address-guard.js';

const DEFAULT_MAX_CHARS = 50_000;
const MAX_MAX_CHARS = 100_000;
const MAX_REDIRECTS = 5;
/** Characters of the body shown for an HTTP error status (spec/core.md §11.11). */
const ERROR_BODY_CHARS = 2000;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const WebFetchArgsSchema = z.object({
  url: z.string().min(1).describe('The http:// or https:// URL to fetch.'),
  format: z
    .enum(['markdown', 'text', 'html'])
    .optional()
    .describe(
      'How to return an HTML page: "markdown" (default), "text" (plain text) or "html" (the raw page). Text and JSON bodies are returned as they are.',
    ),
  max_chars: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`Maximum characters of content to return. Default ${DEFAULT_MAX_CHARS}, at most ${MAX_MAX_CHARS}.`),
});

/** Arguments of `web_fetch` (spec/core.md §11.11). */
export type WebFetchArgs = z.infer<typeof WebFetchArgsSchema>;

/** Marks a host's default fetch: web_fetch then makes the connection itself, pinned to the address it checked. */
const BUILTIN_FETCH = Symbol.for('hermes.builtinFetch');

/** Marks `fetch` as the process's own (the global fetch, bound): see {@link createWebFetchTool}. */
export function markBuiltinFetch<F extends typeof globalThis.fetch>(fetch: F): F {
  return Object.assign(fetch, { [BUILTIN_FETCH]: true });
}

function connectsItself(fetch: typeof globalThis.fetch): boolean {
  return fetch === globalThis.fetch || (fetch as { [BUILTIN_FETCH]?: boolean })[BUILTIN_FETCH] === true;
}

/** Options of {@link createWebFetchTool}. */
export interface WebFetchToolOptions {
  /** Resolves host names before the address check; default the system resolver. A seam for tests. */
  lookup?: HostLookup;
}

/**
 * The `web_fetch` tool (spec/core.md §11.11). Each URL it requests, the first and every redirect, is resolved and
 * refused unless every address of its host is public or allowed by `web.allow_private_hosts`; the connection then
 * goes to the checked address (a custom `lookup` on the connection), so a second DNS answer cannot move it
 * elsewhere. With a fetch injected by the host (`AgentHostOptions.fetch`), the check still runs before each request
 * but that fetch makes its own connection.
 */
export function createWebFetchTool(options: WebFetchToolOptions = {}): ToolDefinition<WebFetchArgs> {
  return {
    name: 'web_fetch',
    description: [
      'Fetch a web page or an HTTP resource with GET and return its content: HTML converted to Markdown (or plain text),',
      'text and JSON as they are. Binary content is refused. Follows up to 5 redirects; sends no cookies.',
      'The first line gives the final URL, the status and the content type.',
      'Loopback, private and link-local addresses are refused unless configured.',
    ].join(' '),
    inputSchema: WebFetchArgsSchema,
    toolset: 'web',
    kind: 'fetch',
    readOnly: true,
    display(args) {
      return { title: `Fetch ${args.url.length > 110 ? `${args.url.slice(0, 109)}…` : args.url}` };
    },
    async execute(args, ctx): Promise<ToolResult> {
      let url: URL;
      try {
        url = new URL(args.url);
      } catch {
        return { content: `Invalid URL: ${args.url}`, isError: true };
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        return {
          content: `Only http and https URLs can be fetched, not ${url.protocol.replace(/:$/, '')}.`,
          isError: true,
        };
      }
      const timeoutSeconds = ctx.settings.webFetchTimeout;
      const maxChars = Math.min(args.max_chars ?? DEFAULT_MAX_CHARS, MAX_MAX_CHARS);
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(new Error('timeout')), timeoutSeconds * 1000);
      const signal = AbortSignal.any([ctx.signal, timeout.signal]);
      const guard = createAddressGuard({
        allow: ctx.settings.webAllowPrivateHosts,
        ...(options.lookup === undefined ? {} : { lookup: options.lookup }),
      });
      const agents: { destroy(): Promise<void> }[] = [];
      try {
        let response: Response | null = null;
        let redirectedFrom: string | null = null;
        for (let redirects = 0; ; redirects += 1) {
          let target: CheckedTarget;
          try {
            target = await untilAborted(guard.check(url), signal);
          } catch (error) {
            if (!PrivateAddressRefused.isRefusal(error)) throw error;
            const hop = redirectedFrom === null ? '' : ` (a redirect from ${redirectedFrom})`;
            return { content: `${error.message}${hop}`, isError: true };
          }
          const init: RequestInit = {
            method: 'GET',
            redirect: 'manual',
            signal,
            headers: {
              'user-agent': `hermes-agent/${VERSION} (web_fetch)`,
              accept: 'text/html,application/xhtml+xml,text/markdown,text/plain,application/json;q=0.9,*/*;q=0.8',
            },
          };
          if (connectsItself(ctx.services.fetch)) {
            const undici = await importOnFirstUse(() => import('undici'));
            const agent = new undici.Agent({ connect: { lookup: pinnedLookup(target) } });
            agents.push(agent);
            response = (await undici.fetch(url, {
              ...(init as Parameters<typeof undici.fetch>[1]),
              dispatcher: agent,
            })) as unknown as Response;
          } else {
            response = await ctx.services.fetch(url, init);
          }
          const location = response.headers.get('location');
          if (!REDIRECT_STATUSES.has(response.status) || location === null) break;
          await response.body?.cancel().catch(() => {});
          if (redirects === MAX_REDIRECTS) {
            return {
              content: `Too many redirects: stopped after ${MAX_REDIRECTS} (last at ${url.href}).`,
              isError: true,
            };
          }
          const next = new URL(location, url);
          if (next.protocol !== 'http:' && next.protocol !== 'https:') {
            return { content: `Redirect to an unsupported URL refused: ${next.href}`, isError: true };
          }
          redirectedFrom = url.href;
          url = next;
        }
        const body = await readCapped(response, ctx.settings.webMaxBytes);
        const rawType = response.headers.get('content-type');
        const mediaType = (rawType ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
        const kind = classify(mediaType, body.bytes);
        const shownType =
          rawType === null
            ? kind === 'binary'
              ? 'unknown'
              : `${kind === 'html' ? 'text/html' : 'text/plain'} (guessed)`
            : mediaType;
        const header = `URL: ${url.href} (${response.status}, ${shownType})`;
        const structured = {
          url: args.url,
          finalUrl: url.href,
          status: response.status,
          contentType: rawType,
          bytes: body.bytes.length,
          truncated: body.truncated,
        };
        if (kind === 'binary') {
          return {
            content: `${header}\nThe response is binary content (${shownType}, ${body.bytes.length}${body.truncated ? '+' : ''} bytes), which web_fetch does not return.`,
            isError: true,
            structured,
          };
        }
        const text = decode(body.bytes, rawType);
        if (response.status >= 400) {
          const shown = kind === 'html' ? await htmlToMarkdown(text) : text;
          return {
            content: `${header}\nHTTP ${response.status}${response.statusText === '' ? '' : ` ${response.statusText}`}\n\n${shown.slice(0, ERROR_BODY_CHARS)}`,
            isError: true,
            structured,
          };
        }
        const format = args.format ?? 'markdown';
        const converted =
          kind === 'html' && format === 'markdown'
            ? await htmlToMarkdown(text)
            : kind === 'html' && format === 'text'
              ? await htmlToText(text)
              : text;
        const cut = cutText(converted, maxChars, 'content');
        let content = `${header}\n\n${cut.text}`;
        if (body.truncated) content += `\n[the body was cut at ${ctx.settings.webMaxBytes} bytes (web.max_bytes)]`;
        return { content, structured: { ...structured, truncated: body.truncated || cut.truncated } };
      } catch (error) {
        if (ctx.signal.aborted) return { content: 'Fetch cancelled.', status: 'cancelled' };
        if (timeout.signal.aborted)
          return { content: `Timed out after ${timeoutSeconds} s fetching ${url.href}.`, isError: true };
        return { content: `Fetch failed for ${url.href}: ${describeFetchError(error)}`, isError: true };
      } finally {
        clearTimeout(timer);
        for (const agent of agents) void agent.destroy().catch(() => {});
      }
    },
  };
}

/**
 * A `lookup` for the connection that answers with the checked address whatever the name, so the connection goes
 * where the check looked (no second resolution that DNS rebinding could answer differently). Node asks for every
 * address (`all`) when it races IPv4 and IPv6.
 */
function pinnedLookup(target: CheckedTarget) {
  return (
    _hostname: string,
    lookupOptions: { all?: boolean } | undefined,
    callback: (error: Error | null, address: string | { address: string; family: number }[], family?: number) => void,
  ) => {
    if (lookupOptions?.all === true) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}

function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  return cause === undefined ? errorMessage(error) : `${errorMessage(error)} (${errorMessage(cause)})`;
}

/** Reads at most `maxBytes` of the body; stops reading (and cancels the stream) past the cap. */
async function readCapped(response: Response, maxBytes: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  if (response.body === null) return { bytes: Buffer.alloc(0), truncated: false };
  const reader = response.body.getReader();
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const chunk = Buffer.from(value);
    if (size + chunk.length > maxBytes) {
      chunks.push(chunk.subarray(0, maxBytes - size));
      size = maxBytes;
      truncated = true;
      await reader.cancel().catch(() => {});
      break;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { bytes: Buffer.concat(chunks, size), truncated };
}

const TEXT_TYPES = new Set([
  'application/json',
  'application/ld+json',
  'application/xml',
  'application/javascript',
  'application/ecmascript',
  'application/x-javascript',
  'application/x-yaml',
  'application/yaml',
  'application/toml',
  'application/x-sh',
  'application/sql',
  'application/graphql',
  'application/x-ndjson',
  'image/svg+xml',
]);

function classify(mediaType: string, bytes: Buffer): 'html' | 'text' | 'binary' {
  if (mediaType === 'text/html' || mediaType === 'application/xhtml+xml') return 'html';
  if (
    mediaType.startsWith('text/') ||
    TEXT_TYPES.has(mediaType) ||
    mediaType.endsWith('+json') ||
    mediaType.endsWith('+xml')
  )
    return 'text';
  if (mediaType !== '' && mediaType !== 'application/octet-stream') return 'binary';
  // No usable type: decide by the bytes.
  const head = bytes.subarray(0, 8192);
  if (head.includes(0)) return 'binary';
  return /^\s*(<!doctype html|<html)/i.test(head.toString('utf8')) ? 'html' : 'text';
}

function decode(bytes: Buffer, contentType: string | null): string {
  const charset = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

/** Elements whose content is never part of the converted page. */
const REMOVED_ELEMENTS = ['head', 'title', 'script', 'style', 'noscript', 'template', 'iframe'] as const;

/** Turndown and its DOM are imported on the first HTML page, not at startup. */
async function createTurndown(): Promise<TurndownService> {
  const { default: Turndown } = await importOnFirstUse(() => import('turndown'));
  const service = new Turndown({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' });
  service.remove([...REMOVED_ELEMENTS]);
  return service;
}

/** The page title, removed with the head and shown on a line of its own. */
function titleOf(html: string): string | null {
  const match = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html);
  if (match === null) return null;
  const title = decodeBasicEntities((match[1] as string).replace(/\s+/g, ' ').trim());
  return title === '' ? null : title;
}

function decodeBasicEntities(text: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, body: string) => {
    if (body.startsWith('#x') || body.startsWith('#X')) return String.fromCodePoint(Number.parseInt(body.slice(2), 16));
    if (body.startsWith('#')) return String.fromCodePoint(Number.parseInt(body.slice(1), 10));
    return named[body.toLowerCase()] ?? entity;
  });
}

function withTitle(html: string, body: string): string {
  const title = titleOf(html);
  return title === null ? body : `Title: ${title}\n\n${body}`;
}

/** HTML → Markdown with the head, scripts and styles removed; the title comes first. */
export async function htmlToMarkdown(html: string): Promise<string> {
  return withTitle(html, (await createTurndown()).turndown(html).trim());
}

/** HTML → plain text: block elements on their own lines, no Markdown markup or escaping. */
export async function htmlToText(html: string): Promise<string> {
  const service = await createTurndown();
  service.escape = (text: string) => text;
  const removed = new Set<string>(REMOVED_ELEMENTS.map((name) => name.toUpperCase()));
  service.addRule('plain', {
    // Added rules take precedence over `remove`, so the removed elements are left out here.
    filter: (node) => !removed.has(node.nodeName),
    replacement: (content, node) => {
      const element = node as unknown as { nodeName: string; isBlock?: boolean };
      if (element.nodeName === 'BR') return '\n';
      if (element.nodeName === 'LI') return `\n- ${content.trim()}\n`;
      return element.isBlock === true ? `\n\n${content}\n\n` : content;
    },
  });
  const text = service
    .turndown(html)
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return withTitle(html, text);
}
