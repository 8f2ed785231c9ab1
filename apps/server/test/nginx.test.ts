import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hang, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../../packages/core/test/support/postgres-global-setup.js';
import { cleanups, runCleanups, startInstancePair, temp } from './support/server-process.js';

/**
 * Issue 33.7: the nginx block of docs/deploy.md, as written (only the addresses, the port and the log path are
 * replaced), run by real nginx in front of two apps/server instances on one PostgreSQL database.
 */

const KEY = 'test-key-0123456789abcdef';
const PUBLIC_HOST = 'hermes.example.com';
afterEach(runCleanups);

const deployGuide = fileURLToPath(new URL('../../../docs/deploy.md', import.meta.url));

/** The first ```nginx block of docs/deploy.md's section 3. */
function documentedBlock(): string {
  const guide = readFileSync(deployGuide, 'utf8');
  const section = guide.slice(guide.indexOf('## 3. nginx'), guide.indexOf('## 4.'));
  const match = /```nginx\n([\s\S]*?)```/.exec(section);
  if (!match) throw new Error('docs/deploy.md section 3 has no nginx block');
  return match[1] as string;
}

/** Replaces `from` with `to` and fails when the documented block no longer contains `from`. */
function replaceOnce(block: string, from: string | RegExp, to: string): string {
  const replaced = block.replace(from, to);
  if (replaced === block) throw new Error(`docs/deploy.md's nginx block no longer contains ${String(from)}`);
  return replaced;
}

function nginxBinary(): string {
  for (const candidate of ['/usr/sbin/nginx', 'nginx']) {
    const probe = spawnSync(candidate, ['-v'], { encoding: 'utf8' });
    if (probe.status === 0) return candidate;
  }
  throw new Error('nginx is not installed: `.ci/run` installs it (apt-get install nginx-light)');
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

async function accepting(port: number, timeoutMs = 30_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() - started > timeoutMs) throw new Error(`nothing listens on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Starts nginx on a free loopback port with the documented block pointed at `upstreams`. */
async function startNginx(upstreams: [string, string]): Promise<{ port: number; accessLog: string }> {
  const binary = nginxBinary();
  const dir = temp('hermes-nginx-');
  for (const folder of ['logs', 'temp']) mkdirSync(join(dir, folder));
  const port = await freePort();
  const accessLog = join(dir, 'logs', 'hermes.access.log');
  let block = documentedBlock();
  block = replaceOnce(block, /server 10\.0\.0\.11:8642/, `server ${upstreams[0]}`);
  block = replaceOnce(block, /server 10\.0\.0\.12:8642/, `server ${upstreams[1]}`);
  block = replaceOnce(block, /listen 443 ssl;/, `listen 127.0.0.1:${port};`);
  block = replaceOnce(
    block,
    /access_log \/var\/log\/nginx\/hermes\.access\.log hermes;/,
    `access_log ${accessLog} hermes;`,
  );
  const temps = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((name) => `  ${name}_temp_path ${join(dir, 'temp', name)};`)
    .join('\n');
  const config = [
    // As root, nginx's workers would switch to `nobody`, who cannot write this test's folders.
    process.getuid?.() === 0 ? 'user root;' : '',
    'daemon off;',
    'worker_processes 1;',
    `pid ${join(dir, 'nginx.pid')};`,
    'error_log stderr warn;',
    'events { worker_connections 512; }',
    'http {',
    temps,
    '  access_log off;',
    block,
    '}',
  ].join('\n');
  writeFileSync(join(dir, 'nginx.conf'), config);
  const child: ChildProcess = spawn(binary, ['-p', dir, '-e', 'stderr', '-c', join(dir, 'nginx.conf')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  });
  await Promise.race([
    accepting(port),
    exited.then(() => {
      throw new Error(`nginx exited: ${stderr}`);
    }),
  ]);
  return { port, accessLog };
}

interface Answer {
  status: number;
  body: string;
}

/** One HTTP request to nginx with the public Host, read to its end. */
function viaNginx(port: number, method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const outgoing = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: {
          Host: PUBLIC_HOST,
          Authorization: `Bearer ${KEY}`,
          ...(payload === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
      },
      (response) => {
        let received = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          received += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: received }));
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

interface Frame {
  id?: number;
  method?: string;
  params?: { type?: string; session_id?: string; payload?: Record<string, unknown> };
  result?: Record<string, unknown>;
  error?: unknown;
}

/** A gateway WebSocket through nginx, with the public Host; resolves after gateway.ready. */
async function gatewayViaNginx(port: number, options: { query?: string; headers?: Record<string, string> }) {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/api/ws${options.query ?? ''}`, {
    headers: { Host: PUBLIC_HOST, ...options.headers },
  });
  cleanups.push(() => socket.terminate());
  const frames: Frame[] = [];
  socket.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString()) as Frame));
  const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
  socket.on('error', () => {});
  const waitFor = async (predicate: (frame: Frame) => boolean, what: string): Promise<Frame> => {
    const started = Date.now();
    for (;;) {
      const found = frames.find(predicate);
      if (found) return found;
      if (Date.now() - started > 30_000) throw new Error(`${what} not received; got ${JSON.stringify(frames)}`);
      if (socket.readyState === WebSocket.CLOSED) throw new Error(`${what}: closed with ${await closed}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  let next = 0;
  const call = async (method: string, params: Record<string, unknown>) => {
    next += 1;
    const id = next;
    socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return waitFor((frame) => frame.id === id && frame.method === undefined, `the answer to ${method}`);
  };
  await waitFor((frame) => frame.params?.type === 'gateway.ready', 'gateway.ready');
  const close = async () => {
    socket.close();
    await closed;
  };
  return { call, waitFor, close };
}

/** The HTTP status of a gateway upgrade straight to an instance: 101 when it is served. */
function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${url.replace('http', 'ws')}/api/ws?token=${KEY}`);
    socket.on('upgrade', (response) => {
      socket.terminate();
      resolve(response.statusCode ?? 101);
    });
    socket.on('unexpected-response', (_request, response) => {
      response.resume();
      socket.terminate();
      resolve(response.statusCode ?? 0);
    });
    socket.on('error', () => resolve(0));
  });
}

describe('the documented nginx block in front of two instances (33.7)', () => {
  it('carries a gateway WebSocket and an SSE stream, keeps the token out of its log, and retries a drain 503 on the other instance', async () => {
    const workspace = temp('hermes-workspace-');
    const { a, b, model } = await startInstancePair(
      [
        step(text('streamed through nginx')),
        step(text('answered over the gateway')),
        step(hang()),
        step(text('after the drain 1')),
        step(text('after the drain 2')),
        step(text('after the drain 3')),
        step(text('after the drain 4')),
      ],
      {
        key: KEY,
        configYaml: 'session:\n  auto_title: false\n',
        env: { API_SERVER_ALLOWED_HOSTS: PUBLIC_HOST, HERMES_DRAIN_TIMEOUT: '120' },
      },
    );
    const hostPort = (url: string) => new URL(url).host;
    const nginx = await startNginx([hostPort(a.url), hostPort(b.url)]);

    // A chat completions stream through nginx: every event arrives, and the stream ends with [DONE].
    const streamed = await viaNginx(nginx.port, 'POST', '/v1/chat/completions', {
      model: 'hermes-agent',
      stream: true,
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(streamed.status).toBe(200);
    const deltas = streamed.body
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => (JSON.parse(line.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta)
      .map((delta) => delta?.content ?? '')
      .join('');
    expect(deltas).toBe('streamed through nginx');
    expect(streamed.body.trimEnd().endsWith('data: [DONE]')).toBe(true);

    // A gateway client with the token in a header, reached by its public name: a whole turn.
    const desktop = await gatewayViaNginx(nginx.port, { headers: { Authorization: `Bearer ${KEY}` } });
    const created = await desktop.call('session.create', { cwd: workspace });
    const sessionId = created.result?.session_id as string;
    await desktop.call('prompt.submit', { session_id: sessionId, text: 'hi' });
    const complete = await desktop.waitFor(
      (frame) => frame.params?.type === 'message.complete' && frame.params.session_id === sessionId,
      'message.complete',
    );
    expect(complete.params?.payload?.text).toBe('answered over the gateway');

    // A browser's way in: the token in the URL and an Origin of the public name.
    const browser = await gatewayViaNginx(nginx.port, {
      query: `?token=${KEY}`,
      headers: { Origin: `https://${PUBLIC_HOST}` },
    });

    // A drains: a run it is serving (straight to A, not through nginx) keeps it draining, not gone.
    const held = await fetch(`${a.url}/v1/runs`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: 'wait here' }),
    });
    expect(held.status).toBe(202);
    // The run is in flight once its model call (the third of the script) has arrived.
    for (let waited = 0; model.calls.length < 3; waited += 1) {
      if (waited > 600) throw new Error('the held run never reached the model');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    a.child.kill('SIGTERM');
    // A drains once a new WebSocket straight to it is refused with 503 (a probe that starts no turn).
    for (let attempt = 0; (await upgradeStatus(a.url)) !== 503; attempt += 1) {
      if (attempt > 300) throw new Error('A never started draining');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    // Through nginx every new turn is answered, by B: the ones nginx first sent to A were retried.
    for (let index = 1; index <= 4; index += 1) {
      const answer = await viaNginx(nginx.port, 'POST', '/v1/chat/completions', {
        model: 'hermes-agent',
        messages: [{ role: 'user', content: `turn ${index}` }],
      });
      expect(answer.status).toBe(200);
      expect(
        (JSON.parse(answer.body) as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
      ).toMatch(/^after the drain \d$/);
    }
    // A new WebSocket while A drains is served too.
    const late = await gatewayViaNginx(nginx.port, { headers: { Authorization: `Bearer ${KEY}` } });

    // nginx logs a WebSocket when it closes.
    for (const socket of [desktop, browser, late]) await socket.close();
    const upgrades = () => readFileSync(nginx.accessLog, 'utf8').split('GET /api/ws').length - 1;
    for (let waited = 0; upgrades() < 3; waited += 1) {
      if (waited > 600) throw new Error(`nginx logged ${upgrades()} of 3 WebSockets`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const log = readFileSync(nginx.accessLog, 'utf8');
    const retried = log
      .split('\n')
      .filter(
        (line) =>
          line.includes('POST /v1/chat/completions') &&
          line.includes(`upstream=${hostPort(a.url)}, ${hostPort(b.url)}`),
      );
    expect(retried.length).toBeGreaterThanOrEqual(1);
    expect(log).not.toContain(KEY);
  }, 180_000);
});
