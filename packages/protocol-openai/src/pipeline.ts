import { hash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ApiError, errorResponse } from './http-error.js';

/** The body limit of section 6.1. */
export const BODY_LIMIT_BYTES = 10_000_000;

/** The security headers of section 7, with exactly these values. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'Strict-Transport-Security': 'max-age=31536000; includeSubDomains',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=()',
  'X-XSS-Protection': '0',
};

/**
 * The response header by which `@hono/node-server` leaves a response alone because the handler already wrote it to the
 * node response (its `RESPONSE_ALREADY_SENT`).
 */
export const ALREADY_SENT_HEADER = 'x-hono-already-sent';

const ALLOW_HEADERS =
  'Authorization, Content-Type, Idempotency-Key, X-Hermes-Session-Id, X-Hermes-Session-Key, X-Hermes-Events, Last-Event-ID';
const EXPOSE_HEADERS =
  'X-Hermes-Session-Id, X-Hermes-Session-Key, Idempotency-Replayed, Retry-After, X-Hermes-Completed, X-Hermes-Partial, X-Hermes-Error, x-should-retry, Location';

/**
 * Security headers on every answer (stage 2). hono's `secureHeaders` sets extra cross-origin headers by default and
 * formats some values differently; the spec fixes exact values, so they are set here from one table.
 */
export function securityHeaders(): MiddlewareHandler {
  return async (context, next) => {
    await next();
    // A stream written straight to the node response sent these headers in its head; what hono holds is a marker.
    if (context.res.headers.has(ALREADY_SENT_HEADER)) return;
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) context.res.headers.set(name, value);
    // JSON answers are never cached; SSE answers set their own `no-cache` (spec §7, §10).
    if (!context.res.headers.has('Cache-Control')) context.res.headers.set('Cache-Control', 'no-store');
  };
}

/**
 * CORS (stage 1, spec §8). hono's `cors` middleware answers a disallowed origin without CORS headers instead of the
 * 403 the spec requires, and cannot echo only the `x-stainless-*`/`openai-*` request headers.
 */
export function corsStage(origins: readonly string[]): MiddlewareHandler {
  const any = origins.includes('*');
  return async (context, next) => {
    const origin = context.req.header('Origin');
    if (context.req.method === 'OPTIONS' && !origin) return context.body(null, 204);
    if (!origin) return next();
    if (!any && !origins.includes(origin)) {
      return errorResponse(
        context,
        new ApiError(403, 'cors_origin_denied', `Origin not allowed: ${origin}`, { param: 'Origin' }),
      );
    }
    const allowOrigin = any ? '*' : origin;
    if (context.req.method === 'OPTIONS' && context.req.header('Access-Control-Request-Method')) {
      const requested = (context.req.header('Access-Control-Request-Headers') ?? '')
        .split(',')
        .map((name) => name.trim())
        .filter((name) => /^(x-stainless-|openai-)/i.test(name));
      context.header('Access-Control-Allow-Origin', allowOrigin);
      context.header('Vary', 'Origin');
      context.header('Access-Control-Allow-Methods', 'GET, POST, PATCH, DELETE, OPTIONS');
      context.header('Access-Control-Allow-Headers', [ALLOW_HEADERS, ...requested].join(', '));
      context.header('Access-Control-Max-Age', '600');
      return context.body(null, 204);
    }
    // Set before the handler runs, so SSE answers carry them before their first byte.
    context.header('Access-Control-Allow-Origin', allowOrigin);
    context.header('Vary', 'Origin');
    context.header('Access-Control-Expose-Headers', EXPOSE_HEADERS);
    return next();
  };
}

/** Body size (stage 3): a declared or streamed body over the limit gets 413 `body_too_large`. */
export function bodySizeStage(): MiddlewareHandler {
  const tooLarge = (context: Context) =>
    errorResponse(
      context,
      new ApiError(413, 'body_too_large', `Request body too large (max ${BODY_LIMIT_BYTES} bytes)`),
    );
  const limit = bodyLimit({ maxSize: BODY_LIMIT_BYTES, onError: tooLarge });
  return async (context, next) => {
    if (!['POST', 'PUT', 'PATCH'].includes(context.req.method)) return next();
    const declared = context.req.header('Content-Length');
    if (declared !== undefined && !/^\d+$/.test(declared.trim())) {
      return errorResponse(
        context,
        new ApiError(400, 'invalid_content_length', 'Content-Length must be a non-negative integer.', {
          param: 'Content-Length',
        }),
      );
    }
    // A declared length without Transfer-Encoding is all hono's bodyLimit checks too, but it looks at the body stream
    // first, which makes @hono/node-server build the web Request and its stream; checked here, the handler reads the
    // body straight from the node request.
    if (declared !== undefined && context.req.header('Transfer-Encoding') === undefined)
      return Number(declared.trim()) > BODY_LIMIT_BYTES ? tooLarge(context) : next();
    return limit(context, next);
  };
}

/** One-shot `hash` costs a request about half of what a `createHash` object does. */
function digest(value: string): Buffer {
  return hash('sha256', value, 'buffer');
}

/** The 401 every auth failure gets (spec §4). */
export function authError(): ApiError {
  return new ApiError(401, 'gateway_auth_failed', 'Invalid gateway API key (API_SERVER_KEY)', {
    headers: { 'WWW-Authenticate': 'Bearer' },
  });
}

/**
 * Authentication (stage 4): bearer key compared through fixed-length digests in constant time. The open paths are
 * open to GET and to HEAD, which load balancers and proxies use for health checks.
 */
export function authStage(key: string, openPaths: readonly string[]): MiddlewareHandler {
  const expected = digest(key);
  return async (context, next) => {
    if ((context.req.method === 'GET' || context.req.method === 'HEAD') && openPaths.includes(context.req.path))
      return next();
    const header = context.req.header('Authorization') ?? '';
    const space = header.indexOf(' ');
    const scheme = space < 0 ? '' : header.slice(0, space);
    const token = space < 0 ? '' : header.slice(space + 1).trim();
    if (scheme.toLowerCase() !== 'bearer' || !timingSafeEqual(digest(token), expected)) {
      return errorResponse(context, authError());
    }
    return next();
  };
}
