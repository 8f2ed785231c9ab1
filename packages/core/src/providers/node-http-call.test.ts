import { getEventListeners } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { bodyText, plainRequest, send } from './node-http-call.js';

/*
 * ADR 0026: the lean stream's node:http client fails the way fetch fails, so the AI SDK's error
 * handling and the turn loop's abort and retry rules see what they saw with fetch.
 */

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** Starts `server` on a free local port, closed after the test, and returns its URL for `path`. */
async function listening(server: Server, path: string): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
}

/** A server that answers each request with an event stream's head and one event, then leaves it to `then`. */
async function streaming(then: (response: ServerResponse) => void): Promise<string> {
  const server = createServer((request, response) => {
    request.resume();
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write('data: one\n\n');
    then(response);
  });
  return listening(server, '/v1/chat/completions');
}

const post = (url: string, signal?: AbortSignal) => {
  const request = plainRequest(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
    ...(signal ? { signal } : {}),
  });
  if (request === null) throw new Error('not a plain request');
  return request;
};

describe('node:http model calls (ADR 0026)', () => {
  it('takes only what it can send as fetch would: string bodies, plain headers, http(s) URLs', () => {
    expect(plainRequest('http://127.0.0.1/x', { method: 'POST', body: '{}' })?.method).toBe('POST');
    expect(plainRequest('http://127.0.0.1/x', { body: new Uint8Array(1) })).toBeNull();
    expect(plainRequest('http://127.0.0.1/x', { headers: new Headers({ a: 'b' }) })).toBeNull();
    expect(plainRequest('file:///etc/passwd', {})).toBeNull();
    expect(plainRequest(new Request('http://127.0.0.1/x'), {})).toBeNull();
  });

  it('a refused connection is fetch’s TypeError with the socket error as its cause', async () => {
    const server = createServer();
    const url = await listening(server, '/v1');
    await new Promise((resolve) => server.close(resolve));
    const error = await send(post(url)).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toMatchObject({ message: 'fetch failed', cause: { code: 'ECONNREFUSED' } });
  });

  it('a body cut mid-stream fails its read; an abort fails it with the signal’s reason', async () => {
    const cut = await streaming((response) => setTimeout(() => response.socket?.destroy(), 20));
    const body = bodyText(await send(post(cut)));
    expect(await body.read()).toBe('data: one\n\n');
    await expect(body.read()).rejects.toMatchObject({ name: 'TypeError', message: 'terminated' });

    const open = await streaming(() => {});
    const controller = new AbortController();
    const reason = new Error('interrupted by the user');
    const aborted = bodyText(await send(post(open, controller.signal)), controller.signal);
    expect(await aborted.read()).toBe('data: one\n\n');
    const pending = aborted.read();
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('an abort before the head, or a signal aborted already, fails the call with the reason; the listener goes with the request (ADR 0108)', async () => {
    const muteUrl = await listening(
      createServer((request) => request.resume()),
      '/v1',
    );
    const controller = new AbortController();
    const reason = new Error('interrupted before the head');
    const pending = send(post(muteUrl, controller.signal));
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);

    const early = new AbortController();
    const earlyReason = new Error('interrupted before the call');
    early.abort(earlyReason);
    await expect(send(post(muteUrl, early.signal))).rejects.toBe(earlyReason);

    // A call that ends leaves no abort listener on the turn's signal.
    const whole = await streaming((response) => response.end('data: two\n\n'));
    const kept = new AbortController();
    const body = bodyText(await send(post(whole, kept.signal)), kept.signal);
    expect(getEventListeners(kept.signal, 'abort')).toHaveLength(1);
    let text = '';
    for (let piece = await body.read(); piece !== null; piece = await body.read()) text += piece;
    expect(text).toBe('data: one\n\ndata: two\n\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(getEventListeners(kept.signal, 'abort')).toHaveLength(0);
  });

  it('reads the body as text whole when a character’s bytes come in two writes (ADR 0078)', async () => {
    const bytes = Buffer.from('data: {"text":"中ß"}\n\n');
    const cut = bytes.indexOf(Buffer.from('中')) + 1;
    const url = await streaming((response) => {
      response.write(bytes.subarray(0, cut));
      setTimeout(() => response.end(bytes.subarray(cut)), 30);
    });
    const body = bodyText(await send(post(url)));
    let text = '';
    for (let piece = await body.read(); piece !== null; piece = await body.read()) text += piece;
    expect(text).toBe(`data: one\n\n${bytes.toString('utf8')}`);
  });

  it('a model silent past the idle limit fails the call: before its head as fetch failed, mid-body as terminated', async () => {
    const muteUrl = await listening(
      createServer((request) => request.resume()),
      '/v1',
    );
    const headless = await send(post(muteUrl), 50).catch((thrown: unknown) => thrown);
    expect(headless).toMatchObject({
      name: 'TypeError',
      message: 'fetch failed',
      cause: { message: /nothing for 50 ms/ },
    });

    const stalled = bodyText(await send(post(await streaming(() => {})), 50));
    expect(await stalled.read()).toBe('data: one\n\n');
    await expect(stalled.read()).rejects.toMatchObject({ name: 'TypeError', message: 'terminated' });
  });
});
