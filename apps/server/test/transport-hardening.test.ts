import { randomBytes } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  cleanups,
  collectGarbage,
  residentBytes,
  runCleanups,
  type StartedServer,
  startServer,
  temp,
} from './support/server-process.js';

/**
 * Transport hardening of apps/server, attacked from outside without a key (issues 32 and 37): unanswered upgrades,
 * silent and slow connections, WebSockets that stop answering pings, oversized gateway input.
 */

const KEY = 'test-key-0123456789abcdef';
afterEach(runCleanups);

/** The demo model answers; only the transport is under test. */
function homeWith(configYaml = ''): Record<string, string> {
  const home = temp('hermes-home-');
  writeFileSync(join(home, 'config.yaml'), configYaml);
  return { HERMES_HOME: home, API_SERVER_KEY: KEY };
}

function portOf(server: StartedServer): number {
  return Number(new URL(server.url).port);
}

function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

async function eventually(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A raw TCP connection that records what the server sends and whether the server closed it. */
interface RawConnection {
  socket: Socket;
  received(): string;
  closed: Promise<void>;
}

function open(port: number): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    // The client never closes its side: only the server can end these connections.
    socket.setNoDelay(true);
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    const closed = new Promise<void>((done) => socket.on('close', () => done()));
    socket.on('error', () => {});
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
    socket.once('error', reject);
  });
}

function upgradeRequest(path: string): string {
  const lines = [
    `GET ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
    'Sec-WebSocket-Version: 13',
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function bodyOf(response: string): Record<string, unknown> {
  return JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
}

describe('apps/server transport hardening', () => {
  it('answers 2,000 upgrades to unserved paths with 404 and closes them: the fd count returns to its baseline', async () => {
    const server = await startServer(homeWith());
    const pid = server.child.pid as number;
    const port = portOf(server);
    // One ordinary request first, so the baseline includes what the first request opens.
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const baseline = fdCount(pid);
    // Browser control is off by default: its path is refused too.
    const paths = ['/', '/api/other', '/v1/chat/completions', '/api/ws/extra', '/v1/browser-control/ws'];
    let answered = 0;
    for (let batch = 0; batch < 10; batch += 1) {
      const connections = await Promise.all(Array.from({ length: 200 }, () => open(port)));
      for (const [index, connection] of connections.entries())
        connection.socket.write(upgradeRequest(paths[index % paths.length] as string));
      // Every connection is answered and closed by the server while the client keeps its side open.
      await Promise.all(connections.map((connection) => connection.closed));
      for (const connection of connections) {
        const response = connection.received();
        expect(response.startsWith('HTTP/1.1 404 Not Found\r\n'), response.slice(0, 200)).toBe(true);
        expect(bodyOf(response)).toMatchObject({ error: { code: 'not_found', type: 'invalid_request_error' } });
        answered += 1;
      }
    }
    expect(answered).toBe(2000);
    await eventually(() => fdCount(pid) <= baseline);
    expect(fdCount(pid)).toBeLessThanOrEqual(baseline);
    // And the server still answers.
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  }, 120_000);

  describe('with small timeouts', () => {
    const config = [
      'api_server:',
      '  headers_timeout_s: 1',
      '  request_timeout_s: 1.5',
      '  keep_alive_timeout_s: 0.5',
      '  idle_timeout_s: 1',
      '  upgrade_timeout_s: 1',
      '  ws_ping_interval_s: 0.5',
      '',
    ].join('\n');

    it('closes a connection that never sends a byte, and one kept alive after its response', async () => {
      const server = await startServer(homeWith(config));
      const silent = await open(portOf(server));
      const kept = await open(portOf(server));
      kept.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await Promise.all([silent.closed, kept.closed]);
      expect(silent.received()).toBe('');
      expect(kept.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    }, 60_000);

    it('answers headers or a body that trickle in too slowly with 408 in the JSON envelope, then closes', async () => {
      const server = await startServer(homeWith(config));
      const slowHeaders = await open(portOf(server));
      const slowUpgrade = await open(portOf(server));
      const slowBody = await open(portOf(server));
      slowHeaders.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      slowUpgrade.socket.write(`GET /api/ws?token=${KEY} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n`);
      slowBody.socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
      );
      // A byte at a time, each well inside the idle timeout: only the header and request timeouts can end these.
      let open_ = true;
      const trickle = setInterval(() => {
        if (!open_) return;
        slowHeaders.socket.write('X-Slow: 1\r\n');
        slowUpgrade.socket.write('X-Slow: 1\r\n');
        slowBody.socket.write(' ');
      }, 200);
      cleanups.push(() => clearInterval(trickle));
      await Promise.all([slowHeaders.closed, slowUpgrade.closed, slowBody.closed]);
      open_ = false;
      for (const connection of [slowHeaders, slowUpgrade, slowBody]) {
        const response = connection.received();
        expect(response, response).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
        expect(response).toMatch(/Content-Type: application\/json/i);
        expect(response).toMatch(/X-Content-Type-Options: nosniff/i);
        expect(bodyOf(response)).toMatchObject({ error: { code: 'request_timeout' } });
      }
    }, 60_000);

    it('terminates a gateway WebSocket that stops answering pings, and keeps one that answers', async () => {
      const server = await startServer(homeWith(config));
      // A raw WebSocket that completes the handshake and then never answers a ping (nor reads a frame).
      const silent = await open(portOf(server));
      silent.socket.write(upgradeRequest(`/api/ws?token=${KEY}`));
      await eventually(() => silent.received().startsWith('HTTP/1.1 101'));
      // An ordinary client: `ws` answers every ping.
      const answering = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${KEY}`);
      cleanups.push(() => answering.terminate());
      let pings = 0;
      answering.on('ping', () => {
        pings += 1;
      });
      await new Promise((resolve) => answering.once('open', resolve));
      await silent.closed;
      // The silent socket was pinged, then cut after missing its pong; meanwhile the answering one was pinged too.
      expect(silent.received()).toContain('\x89\x00');
      await eventually(() => pings >= 3);
      expect(answering.readyState).toBe(WebSocket.OPEN);
    }, 60_000);

    it('answers a malformed Content-Length with 400 invalid_content_length in the JSON envelope', async () => {
      const server = await startServer(homeWith(config));
      const connection = await open(portOf(server));
      connection.socket.write(
        'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 12abc\r\n\r\n{"a":1}',
      );
      await connection.closed;
      const response = connection.received();
      expect(response).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(response).toMatch(/X-Content-Type-Options: nosniff/i);
      expect(bodyOf(response)).toMatchObject({
        error: { code: 'invalid_content_length', param: 'Content-Length', type: 'invalid_request_error' },
      });
    }, 60_000);
  });

  describe('gateway input caps', () => {
    async function gatewaySession(server: StartedServer) {
      const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${KEY}`, {
        maxPayload: 64 * 1024 * 1024,
      });
      cleanups.push(() => socket.terminate());
      const frames: { id?: number; result?: Record<string, unknown>; error?: Record<string, unknown> }[] = [];
      socket.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString())));
      const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
      await new Promise((resolve) => socket.once('open', resolve));
      const reply = async (id: number) => {
        await eventually(() => frames.some((frame) => frame.id === id));
        return frames.find((frame) => frame.id === id) as (typeof frames)[number];
      };
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'session.create', params: {} }));
      const sessionId = (await reply(1)).result?.session_id as string;
      return { socket, reply, sessionId, closed };
    }

    it('refuses prompt text over tui_gateway.max_text_chars with 4002, and accepts text at the cap', async () => {
      const server = await startServer(homeWith('session:\n  auto_title: false\n'));
      const { socket, reply, sessionId } = await gatewaySession(server);
      socket.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          method: 'prompt.submit',
          params: { session_id: sessionId, text: 'a'.repeat(65_537) },
        }),
      );
      expect((await reply(2)).error).toMatchObject({
        code: 4002,
        message: 'invalid value for text: 65537 characters exceed tui_gateway.max_text_chars (65536)',
      });
      // The cap counts code points: 65,536 emoji are 131,072 UTF-16 units and still fit.
      socket.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 3,
          method: 'session.steer',
          params: { session_id: sessionId, text: '😀'.repeat(65_536) },
        }),
      );
      expect((await reply(3)).error).toBeUndefined();
    }, 60_000);

    it('closes a WebSocket that sends a 50 MB frame with 1009 before parsing it, and memory stays bounded', async () => {
      // With the allocator settings docs/deploy.md gives for bounded memory. Under glibc's defaults the frames' freed
      // buffers may stay with the allocator: once a 15 MB block it had mapped is freed, glibc raises its mmap and trim
      // thresholds, and later buffers come from arenas it does not hand back. A CI run read RSS 79 MB over the baseline
      // with V8's whole heap at 23.5 MB and external memory at 3.8 MB: freed by the server, kept by malloc. Setting a
      // threshold fixes them, so what is measured is what the server holds.
      const server = await startServer({
        ...homeWith(),
        NODE_OPTIONS: '--inspect=127.0.0.1:0',
        MALLOC_ARENA_MAX: '1',
        MALLOC_TRIM_THRESHOLD_: '131072',
      });
      const pid = server.child.pid as number;
      const { socket, reply, sessionId, closed } = await gatewaySession(server);
      await collectGarbage(server);
      const baseline = residentBytes(pid);
      // Frames under the 16 MiB frame cap but over the text cap: parsed, refused, and dropped.
      for (let index = 0; index < 8; index += 1) {
        socket.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 10 + index,
            method: 'prompt.submit',
            params: { session_id: sessionId, text: 'x'.repeat(15 * 1024 * 1024) },
          }),
        );
        expect((await reply(10 + index)).error).toMatchObject({ code: 4002 });
      }
      const big = JSON.stringify({
        jsonrpc: '2.0',
        id: 99,
        method: 'prompt.submit',
        params: { session_id: sessionId, text: 'y'.repeat(50 * 1024 * 1024) },
      });
      socket.send(big);
      expect(await closed).toBe(1009);
      // 8 × 15 MB and one 50 MB frame went in; none of it is kept (before the cap, a 50 MB prompt left ~1 GB):
      // once the collector has run, the server is back within 64 MB of where it started. What the refused frames
      // left is garbage that V8 frees at its next full collection, which a server with nothing to do may not run for
      // minutes (the CI saw +139 MB after 90 s idle). Another client's ordinary traffic brings that collection on;
      // memory still held after it would be kept, not garbage.
      const next = await gatewaySession(server);
      const within = () => residentBytes(pid) - baseline < 64 * 1024 * 1024;
      for (let index = 0; index < 120 && !within(); index += 1) {
        next.socket.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 200 + index,
            method: 'prompt.submit',
            params: { session_id: next.sessionId, text: 'z'.repeat(1024 * 1024) },
          }),
        );
        expect((await next.reply(200 + index)).error).toMatchObject({ code: 4002 });
      }
      // When the traffic did not bring a full collection on in time, one is asked for: memory still held after it is
      // kept, not garbage. Each try waits for the allocator to hand freed pages back.
      for (let attempt = 0; attempt < 20 && !within(); attempt += 1) {
        await collectGarbage(server);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      await eventually(within, 30_000);
    }, 180_000);
  });
});
