/**
 * The HTTP client of the lean model stream (ADR 0026): a stream call's request goes out through `node:http` (or
 * `node:https`) instead of `fetch`, and a successful event stream is read from the response as text. Node's `fetch`
 * wraps every request and response in WHATWG objects and web streams (a cloned request body, a byte stream with its
 * own reader, an AbortSignal made transferable), which cost a short streamed turn about as much CPU as a bare
 * pass-through proxy spends on the whole turn. Anything this client does not take (a non-string body, a redirect) goes
 * to `fetch` as before.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { urlToHttpOptions } from 'node:url';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/** The decoded text of a response body, a piece at a time. */
export interface BodyText {
  /** The next text of the body (never empty), or null at its end; rejects when the body fails. */
  read(): Promise<string | null>;
  /** Stops reading and releases the connection. */
  cancel(reason?: unknown): Promise<void>;
}

/** A request this client can send: a URL, plain string headers and a string body (or none). */
export interface PlainRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  /** The body: a text, or its UTF-8 bytes in pieces sent one after the other (ADR 0093). */
  body: string | readonly Uint8Array[] | undefined;
  signal: AbortSignal | undefined;
}

// Keep-alive is the default of Node 20's global agents too; named here so the lean client never depends on it.
// Node keeps 256 idle sockets per host by default: a server that had a thousand model calls in flight closed the
// rest and connected again for the next burst (issue 34). The model server's own idle timeout still closes them.
const AGENT_OPTIONS = { keepAlive: true, maxFreeSockets: 1024 };
const httpAgent = new HttpAgent(AGENT_OPTIONS);
const httpsAgent = new HttpsAgent(AGENT_OPTIONS);

/**
 * The request `fetch(input, init)` would send, when this client can send it the same way: an http(s) URL, headers as
 * a plain object of strings (as the AI SDK passes them) and a string body. Null otherwise.
 */
export function plainRequest(input: string | URL | Request, init: RequestInit | undefined): PlainRequest | null {
  if (typeof input !== 'string' && !(input instanceof URL)) return null;
  const body = init?.body;
  if (body != null && typeof body !== 'string') return null;
  const raw = init?.headers;
  if (raw != null && (typeof raw !== 'object' || raw instanceof Headers || Array.isArray(raw))) return null;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw ?? {})) {
    if (value === undefined) continue;
    if (typeof value !== 'string') return null;
    headers[name] = value;
  }
  let url: URL;
  try {
    url = input instanceof URL ? input : parsedUrl(input);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  return { url, method: init?.method ?? 'GET', headers, body: body ?? undefined, signal: init?.signal ?? undefined };
}

/**
 * The last URL text parsed, its URL, and the request options node:http would make of that URL on every request, made
 * once (ADR 0093, ADR 0108): every call of a model goes to the same URL. The options are never handed out to be changed.
 */
let lastUrl: { text: string; url: URL; options: ReturnType<typeof urlToHttpOptions> } | null = null;

/** `new URL(text)`, the last one kept (node:http only reads the URL it is given). */
function parsedUrl(text: string): URL {
  if (lastUrl?.text !== text) {
    const url = new URL(text);
    lastUrl = { text, url, options: urlToHttpOptions(url) };
  }
  return lastUrl.url;
}

/**
 * How long the connection may sit silent, waiting for the response head or for more of its body, before the call
 * fails: `fetch`'s own limit (undici's `headersTimeout` and `bodyTimeout`), which `node:http` does not have.
 */
export const IDLE_TIMEOUT_MS = 300_000;

/** Sends `request` and resolves with the response head; its body is then read with `bodyText` or `bufferedResponse`. */
export function send(request: PlainRequest, idleTimeoutMs = IDLE_TIMEOUT_MS): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const https = request.url.protocol === 'https:';
    // fetch's default `accept`; its `accept-encoding` is left out, so the body comes back as sent.
    const headers: Record<string, string> = { accept: '*/*', ...request.headers };
    const body = request.body;
    if (typeof body === 'string') headers['content-length'] = String(Buffer.byteLength(body));
    else if (body !== undefined)
      headers['content-length'] = String(body.reduce((total, piece) => total + piece.byteLength, 0));
    // The options node:http makes of a URL, then the request's own, as it merges them itself.
    const outgoing = (https ? httpsRequest : httpRequest)({
      ...(request.url === lastUrl?.url ? lastUrl.options : urlToHttpOptions(request.url)),
      method: request.method,
      headers,
      agent: https ? httpsAgent : httpAgent,
    });
    const signal = request.signal;
    if (signal) {
      // What node:http's `signal` option does (the request destroyed on abort, the listener gone once the request
      // closes), without its end-of-stream watcher, the dearer part of it (ADR 0108).
      const onAbort = () =>
        outgoing.destroy(
          Object.assign(new Error('The operation was aborted'), { name: 'AbortError', cause: signal.reason }),
        );
      if (signal.aborted) process.nextTick(onAbort);
      else {
        signal.addEventListener('abort', onAbort, { once: true });
        outgoing.once('close', () => signal.removeEventListener('abort', onAbort));
      }
    }
    outgoing.setTimeout(idleTimeoutMs, () => {
      outgoing.destroy(new Error(`the model sent nothing for ${idleTimeoutMs} ms`));
    });
    outgoing.once('response', resolve);
    outgoing.once('error', (error) => reject(asFetchError(error, request.signal)));
    if (typeof body === 'string' || body === undefined) outgoing.end(body);
    else {
      // Held until the socket is assigned, then written together (one writev with the head).
      for (let index = 0; index < body.length - 1; index += 1) outgoing.write(body[index]);
      outgoing.end(body[body.length - 1]);
    }
  });
}

/**
 * A failure as `fetch` reports it, so the AI SDK and the turn loop see what they always saw: the signal's reason for
 * an abort, and a `TypeError('fetch failed')` around anything else (the SDK makes that a retryable `APICallError`).
 */
function asFetchError(error: unknown, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason;
  return new TypeError('fetch failed', { cause: error });
}

/** The body of `message` with its `content-encoding` undone (we send no `accept-encoding`, but a server may). */
function decodedBody(message: IncomingMessage): Readable {
  const encoding = String(message.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const decompress =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : null;
  if (decompress === null) return message;
  // A failure on either side destroys both, and reaches the reader as the decompressor's error.
  return pipeline(message, decompress, () => {});
}

/**
 * The body of a response as text, read on demand (the socket is paused while nobody reads). A failure reads as
 * `fetch`'s body would fail: the signal's reason after an abort, else a `TypeError('terminated')` around the cause.
 */
export function bodyText(message: IncomingMessage, signal?: AbortSignal): BodyText {
  const source = decodedBody(message);
  // Decoded here, not with `setEncoding`: a read of several buffered chunks then joined their strings into a rope,
  // which the SSE parser's first search flattened, a copy of each body chunk (ADR 0078). The buffers are joined instead.
  const decoder = new StringDecoder('utf8');
  let ended = false;
  let failure: unknown = null;
  let wake: (() => void) | null = null;
  const rouse = () => wake?.();
  source.on('readable', rouse);
  source.on('end', () => {
    ended = true;
    rouse();
  });
  const fail = (cause: unknown) => {
    failure ??= signal?.aborted ? signal.reason : new TypeError('terminated', { cause });
    rouse();
  };
  source.on('error', fail);
  source.on('close', () => {
    if (!ended) fail(new Error('the response ended before its body was complete'));
  });
  return {
    async read() {
      for (;;) {
        const chunk = source.read() as Buffer | null;
        const text = chunk === null ? '' : decoder.write(chunk);
        if (text !== '') return text;
        if (failure !== null) throw failure;
        if (ended) {
          const tail = decoder.end();
          return tail === '' ? null : tail;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = null;
      }
    },
    async cancel() {
      ended = true;
      source.destroy();
      message.destroy();
      rouse();
    },
  };
}

/** The response head's headers, as `fetch`'s `Headers` would join them. */
export function headerRecord(message: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** A whole response read into a `Response`, for the SDK to handle as it handles any other (errors, JSON bodies). */
export async function bufferedResponse(message: IncomingMessage): Promise<Response> {
  const chunks: Buffer[] = [];
  for await (const chunk of decodedBody(message)) chunks.push(chunk as Buffer);
  const status = message.statusCode ?? 500;
  const empty = status === 204 || status === 205 || status === 304;
  const headers = new Headers();
  for (const [name, value] of Object.entries(message.headers)) {
    // The body handed on is already decoded.
    if (value === undefined || name === 'content-encoding' || name === 'content-length') continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return new Response(empty ? null : Buffer.concat(chunks), {
    status,
    statusText: message.statusMessage ?? '',
    headers,
  });
}

/** The body text of a `fetch` response, for streams that went through `fetch`. */
export function webBodyText(body: ReadableStream<Uint8Array>): BodyText {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let done = false;
  return {
    async read() {
      while (!done) {
        const next = await reader.read();
        if (next.done) {
          done = true;
          const tail = decoder.decode();
          return tail === '' ? null : tail;
        }
        const text = decoder.decode(next.value, { stream: true });
        if (text !== '') return text;
      }
      return null;
    },
    cancel(reason) {
      done = true;
      return reader.cancel(reason);
    },
  };
}
