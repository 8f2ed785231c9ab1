import { request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { SECURITY_HEADERS, securityHeaders } from '../src/pipeline.js';
import { paceClientTurn, SSE_HEADERS, type SseSink, SseWriter, streamSse } from '../src/sse-writer.js';
import { TurnAdmission } from '../src/turn-admission.js';

let server: Server | null = null;
afterEach(async () => {
  const closing = server as Server | null;
  server = null;
  if (!closing) return;
  const closed = new Promise((resolve) => closing.close(resolve));
  closing.closeAllConnections();
  await closed;
});

/** Serves `body` on GET /sse through @hono/node-server, as apps/server does, and resolves with the port. */
async function serveSse(body: (sink: SseSink) => Promise<void>): Promise<number> {
  const app = new Hono();
  app.get('/sse', (context) => {
    context.header('X-Set-Before', 'yes');
    return streamSse(context, body);
  });
  return new Promise((resolve) => {
    server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) =>
      resolve(info.port),
    ) as Server;
  });
}

function get(port: number): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, path: '/sse' }, resolve);
    request.on('error', reject);
    request.end();
  });
}

/** Resolves once `check` holds, polling each event-loop turn (no timing assertions). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('SSE written directly on the node response', () => {
  it('sends the head with the context, SSE and security headers, then the frames in order', async () => {
    const port = await serveSse(async (sink) => {
      const writer = new SseWriter(sink, 60_000);
      for (let index = 0; index < 5; index += 1) await writer.frame({ index });
      await writer.frame('[DONE]');
      await writer.finish();
    });
    const response = await get(port);
    expect(response.statusCode).toBe(200);
    expect(response.headers['x-set-before']).toBe('yes');
    expect(response.headers['x-hono-already-sent']).toBeUndefined();
    for (const [name, value] of Object.entries({ ...SSE_HEADERS, ...SECURITY_HEADERS }))
      expect(response.headers[name.toLowerCase()]).toBe(value);
    let text = '';
    for await (const chunk of response) text += String(chunk);
    expect(text).toBe(`${[0, 1, 2, 3, 4].map((index) => `data: {"index":${index}}\n\n`).join('')}data: [DONE]\n\n`);
  });

  it('holds the writer back while the client does not read, and loses nothing once it does', async () => {
    const frame = 'x'.repeat(64 * 1024);
    const total = 400; // 26 MB, more than the socket buffers of both ends hold
    let written = 0;
    let waited = false;
    const port = await serveSse(async (sink) => {
      for (let index = 0; index < total; index += 1) {
        let settled = false;
        const write = sink.write(`data: ${index} ${frame}\n\n`).then(() => {
          settled = true;
        });
        await new Promise((resolve) => setImmediate(resolve));
        if (!settled) waited = true;
        await write;
        written += 1;
      }
    });
    const response = await get(port);
    response.pause();
    await until(() => waited);
    expect(written).toBeLessThan(total);
    let received = 0;
    let rest = '';
    for await (const chunk of response) {
      rest += String(chunk);
      let end = rest.indexOf('\n\n');
      while (end >= 0) {
        expect(rest.slice(0, end)).toBe(`data: ${received} ${frame}`);
        received += 1;
        rest = rest.slice(end + 2);
        end = rest.indexOf('\n\n');
      }
    }
    expect(received).toBe(total);
  });

  it('behind the security-headers stage, each stream head has those headers once and the JSON answers after still get them', async () => {
    const app = new Hono();
    app.use('*', securityHeaders());
    app.get('/sse', (context) =>
      streamSse(context, async (sink) => {
        const writer = new SseWriter(sink, 60_000);
        await writer.frame('[DONE]');
        await writer.finish();
      }),
    );
    app.get('/json', (context) => context.json({ ok: true }));
    const port = await new Promise<number>((resolve) => {
      server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) =>
        resolve(info.port),
      ) as Server;
    });
    const read = (path: string) =>
      new Promise<{ response: IncomingMessage; text: string }>((resolve, reject) => {
        const request = httpRequest({ host: '127.0.0.1', port, path }, async (response) => {
          let text = '';
          for await (const chunk of response) text += String(chunk);
          resolve({ response, text });
        });
        request.on('error', reject);
        request.end();
      });
    for (let round = 0; round < 2; round += 1) {
      const sse = await read('/sse');
      expect(sse.text).toBe('data: [DONE]\n\n');
      expect(sse.response.headers['content-type']).toBe('text/event-stream');
      expect(sse.response.headers['cache-control']).toBe('no-cache');
      expect(sse.response.headers['x-hono-already-sent']).toBeUndefined();
      for (const [name, value] of Object.entries(SECURITY_HEADERS))
        expect(sse.response.headers[name.toLowerCase()]).toBe(value);
      const json = await read('/json');
      expect(JSON.parse(json.text)).toEqual({ ok: true });
      expect(json.response.headers['cache-control']).toBe('no-store');
      for (const [name, value] of Object.entries(SECURITY_HEADERS))
        expect(json.response.headers[name.toLowerCase()]).toBe(value);
    }
  });

  it('reports a client that goes away as an abort, and later writes neither throw nor wait', async () => {
    let sink: SseSink | null = null;
    let aborted = false;
    let finished = false;
    let release: () => void = () => {};
    const port = await serveSse(async (given) => {
      sink = given;
      given.onAbort(() => {
        aborted = true;
        release();
      });
      const writer = new SseWriter(given, 60_000);
      await writer.frame({ first: true });
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      await writer.frame({ after: true });
      await writer.finish();
      finished = true;
    });
    const response = await get(port);
    const first = await new Promise<string>((resolve) => response.once('data', (chunk) => resolve(String(chunk))));
    expect(first).toBe('data: {"first":true}\n\n');
    response.destroy();
    await until(() => finished);
    expect(aborted).toBe(true);
    expect((sink as SseSink | null)?.aborted).toBe(true);
  });

  it('ends a paced turn whose client left while it waited with a 499, and its stream as aborted at once', async () => {
    let release: () => void = () => {};
    const waited = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen: { goneBefore?: boolean; goneAfter?: boolean; aborted?: boolean; abortCalls: number } = {
      abortCalls: 0,
    };
    let outgoing: { destroyed: boolean } | null = null;
    const admission = new TurnAdmission(() => 0);
    /** Whether `paceClientTurn` ended the turn with its 499 (true) or let it begin (false). */
    const gone = (context: Context) =>
      paceClientTurn(admission, context).then(
        () => false,
        (error: { status?: number; code?: string }) => error.status === 499 && error.code === 'client_closed_request',
      );
    const app = new Hono();
    app.get('/sse', async (context) => {
      outgoing = (context.env as { outgoing: { destroyed: boolean } }).outgoing;
      seen.goneBefore = await gone(context);
      // As a turn that waits for its start: the client leaves meanwhile.
      await waited;
      seen.goneAfter = await gone(context);
      return streamSse(context, async (sink) => {
        sink.onAbort(() => {
          seen.abortCalls += 1;
        });
        seen.aborted = sink.aborted;
      });
    });
    const port = await new Promise<number>((resolve) => {
      server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) =>
        resolve(info.port),
      ) as Server;
    });
    const request = httpRequest({ host: '127.0.0.1', port, path: '/sse' });
    request.on('error', () => {});
    request.end();
    await until(() => seen.goneBefore !== undefined);
    request.destroy();
    // The server has seen the connection close before the handler goes on.
    await until(() => outgoing?.destroyed === true);
    release();
    await until(() => seen.aborted !== undefined);
    expect(seen).toEqual({ goneBefore: false, goneAfter: true, aborted: true, abortCalls: 1 });
  });
});
