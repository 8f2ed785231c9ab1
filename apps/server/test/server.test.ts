import { spawn } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAgentHost, silentLogger } from '@hermes/core';
import { delay, hang, type ScriptedServer, startScriptedOpenAIServer, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { cleanups, runCleanups, startServer, temp } from './support/server-process.js';

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const KEY = 'test-key-0123456789abcdef';
afterEach(runCleanups);
async function scripted(script: Parameters<typeof startScriptedOpenAIServer>[0]['script']): Promise<ScriptedServer> {
  const server = await startScriptedOpenAIServer({ script });
  cleanups.push(() => server.close());
  return server;
}

function modelEnv(model: ScriptedServer, homeDir: string): Record<string, string> {
  // Titles would take steps of the script; these tests count model calls exactly.
  writeFileSync(join(homeDir, 'config.yaml'), 'session:\n  auto_title: false\n');
  return { HERMES_HOME: homeDir, HERMES_MODEL: 'custom:scripted', HERMES_BASE_URL: model.baseURL, API_SERVER_KEY: KEY };
}

const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };

describe('apps/server', () => {
  it('serves a chat completion, a runs-API turn and a gateway WebSocket turn on one port', async () => {
    const model = await scripted([step(text('chat answer')), step(text('run answer')), step(text('gateway answer'))]);
    const server = await startServer(modelEnv(model, temp('hermes-home-')));

    const chat = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model: 'hermes-agent', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe(
      'chat answer',
    );
    expect(chat.headers.get('x-request-id')).toBeTruthy();

    const created = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ input: 'run it' }),
    });
    expect(created.status).toBe(202);
    const { run_id: runId } = (await created.json()) as { run_id: string };
    let status = '';
    for (let attempt = 0; attempt < 2_400 && status !== 'completed'; attempt += 1) {
      const polled = (await (await fetch(`${server.url}/v1/runs/${runId}`, { headers: auth })).json()) as {
        status: string;
        output: string | null;
      };
      status = polled.status;
      if (status === 'completed') expect(polled.output).toBe('run answer');
      else await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(status).toBe('completed');

    const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${KEY}`);
    cleanups.push(() => socket.close());
    const frames: {
      method?: string;
      id?: number;
      result?: Record<string, unknown>;
      params?: { type: string; payload: Record<string, unknown> };
    }[] = [];
    socket.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString())));
    const waitFor = async (predicate: (frame: (typeof frames)[number]) => boolean) => {
      for (let attempt = 0; attempt < 6_000; attempt += 1) {
        const found = frames.find(predicate);
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error(`frame not received; got ${JSON.stringify(frames).slice(0, 500)}`);
    };
    await waitFor((frame) => frame.params?.type === 'gateway.ready');
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'session.create', params: {} }));
    const session = await waitFor((frame) => frame.id === 1);
    const sessionId = session.result?.session_id as string;
    socket.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'prompt.submit',
        params: { session_id: sessionId, text: 'over the socket' },
      }),
    );
    const complete = await waitFor((frame) => frame.params?.type === 'message.complete');
    expect(complete.params?.payload.text, JSON.stringify(frames)).toBe('gateway answer');

    const readLogs = () =>
      server
        .stdout()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    // Info lines are written in batches at most 250 ms apart (ADR 0025): wait for the run's lines to be flushed.
    for (
      let attempt = 0;
      attempt < 2_400 && readLogs().filter((entry) => entry.runId === runId).length < 2;
      attempt += 1
    )
      await new Promise((resolve) => setTimeout(resolve, 25));
    const logs = readLogs();
    expect(logs.filter((entry) => entry.msg === 'request').every((entry) => typeof entry.requestId === 'string')).toBe(
      true,
    );
    // Every request about the run (its creation and the polls) carries the run id.
    expect(logs.filter((entry) => entry.runId === runId).length).toBeGreaterThanOrEqual(2);
    expect(server.stdout()).not.toContain(KEY);
  });

  it('on SIGTERM answers 503 to new turns, lets the running turn finish, and exits 0', async () => {
    const model = await scripted([step(text('slow'), delay(600), text(' but finished'))]);
    const server = await startServer(modelEnv(model, temp('hermes-home-')));
    const running = fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model: 'hermes-agent', messages: [{ role: 'user', content: 'take a moment' }] }),
    });
    for (let attempt = 0; attempt < 6_000 && model.requests.length === 0; attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    server.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const refused = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model: 'hermes-agent', messages: [{ role: 'user', content: 'too late' }] }),
    }).catch(() => null);
    // Either the drain answered 503 or the listener was already closed: no new turn starts.
    if (refused) expect(refused.status).toBe(503);
    const finished = (await (await running).json()) as { choices: { message: { content: string } }[] };
    expect(finished.choices[0]?.message.content).toBe('slow but finished');
    expect(await server.exited).toBe(0);
    expect(model.requests).toHaveLength(1);
  });

  it('19.3 while draining, the listener stays open: new turns get 503 with Retry-After, other routes keep working', async () => {
    const model = await scripted([step(text('holding on'), hang())]);
    const server = await startServer({ ...modelEnv(model, temp('hermes-home-')), HERMES_DRAIN_TIMEOUT: '600' });
    expect((await fetch(`${server.url}/health/ready`)).status).toBe(200);
    const created = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ input: 'hang' }),
    });
    const { run_id: runId } = (await created.json()) as { run_id: string };
    for (let attempt = 0; attempt < 6_000 && model.requests.length === 0; attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    server.child.kill('SIGTERM');
    for (let attempt = 0; attempt < 6_000 && !server.stdout().includes('"msg":"draining"'); attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    // The run hangs until it is stopped, so the drain is certainly still under way here.
    const refused = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model: 'hermes-agent', messages: [{ role: 'user', content: 'too late' }] }),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('gateway_draining');
    const head = await fetch(`${server.url}/health`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    // Liveness stays 200; readiness (no key needed, for balancers) says to send new turns elsewhere (issue 33 item 1).
    const ready = await fetch(`${server.url}/health/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'draining', ready: false });
    expect((await fetch(`${server.url}/v1/runs/${runId}`, { headers: auth })).status).toBe(200);
    // A new gateway WebSocket is refused the same retryable way.
    const upgrade = await new Promise<{ status: number | undefined; retryAfter: unknown }>((resolve, reject) => {
      const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${KEY}`);
      socket.on('unexpected-response', (_request, response) =>
        resolve({ status: response.statusCode, retryAfter: response.headers['retry-after'] }),
      );
      socket.on('open', () => reject(new Error('the upgrade was accepted while draining')));
      socket.on('error', () => undefined);
    });
    expect(upgrade).toEqual({ status: 503, retryAfter: '1' });
    const stopped = await fetch(`${server.url}/v1/runs/${runId}/stop`, { method: 'POST', headers: auth });
    expect(stopped.status).toBeLessThan(300);
    // With the last turn settled the drain ends and the process exits cleanly.
    expect(await server.exited).toBe(0);
    expect(model.requests).toHaveLength(1);
  });

  it('19.3 behind a proxy: HEAD /health is open, unknown paths get the JSON envelope, forwarded headers only from trusted proxies', async () => {
    const homeDir = temp('hermes-home-');
    writeFileSync(join(homeDir, 'config.yaml'), 'session:\n  auto_title: false\n');
    const server = await startServer({
      HERMES_HOME: homeDir,
      API_SERVER_KEY: KEY,
      HERMES_TRUSTED_PROXIES: '127.0.0.1',
    });

    const head = await fetch(`${server.url}/health`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    expect((await fetch(`${server.url}/v1/health`, { method: 'HEAD' })).status).toBe(200);
    // Only the open health routes are open to HEAD.
    expect((await fetch(`${server.url}/health/detailed`, { method: 'HEAD' })).status).toBe(401);

    for (const [method, path] of [
      ['GET', '/v1/nope'],
      ['POST', '/health'],
      ['GET', '/no/such/thing'],
    ] as const) {
      const missing = await fetch(`${server.url}${path}`, { method, headers: auth });
      expect(missing.status, `${method} ${path}`).toBe(404);
      expect(missing.headers.get('content-type')).toContain('application/json');
      expect(missing.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await missing.json()).toEqual({
        error: { message: `Not found: ${path}`, type: 'invalid_request_error', param: null, code: 'not_found' },
      });
    }

    await fetch(`${server.url}/health`, {
      headers: { 'X-Forwarded-For': '203.0.113.7', 'X-Forwarded-Proto': 'https', 'X-Request-Id': 'proxied' },
    });
    await fetch(`${server.url}/health`, { headers: { 'X-Request-Id': 'direct' } });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    const logs = server
      .stdout()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logs.find((entry) => entry.requestId === 'proxied')).toMatchObject({
      client: '203.0.113.7',
      proto: 'https',
    });
    expect(logs.find((entry) => entry.requestId === 'direct')).toMatchObject({ client: '127.0.0.1', proto: 'http' });
  });

  it('19.3 the gateway WebSocket works behind a trusted proxy that forwards the public Host, and only then', async () => {
    const connect = async (url: string) =>
      new Promise<string>((resolve) => {
        const socket = new WebSocket(`${url.replace('http', 'ws')}/api/ws?token=${KEY}`, {
          headers: { Host: 'hermes.example.com' },
        });
        cleanups.push(() => socket.terminate());
        socket.on('message', (data: Buffer) => {
          const frame = JSON.parse(data.toString()) as { params?: { type?: string } };
          if (frame.params?.type === 'gateway.ready') resolve('ready');
        });
        socket.on('close', (code) => resolve(`closed ${code}`));
        socket.on('error', () => undefined);
      });
    for (const [trusted, expected] of [
      ['127.0.0.1', 'ready'],
      ['10.0.0.1', 'closed 4403'],
    ] as const) {
      const homeDir = temp('hermes-home-');
      writeFileSync(join(homeDir, 'config.yaml'), 'session:\n  auto_title: false\n');
      const server = await startServer({ HERMES_HOME: homeDir, API_SERVER_KEY: KEY, HERMES_TRUSTED_PROXIES: trusted });
      expect(await connect(server.url), `trusted ${trusted}`).toBe(expected);
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    }
  });

  it('19.3 forwarded headers from a peer that is not a trusted proxy are ignored', async () => {
    const homeDir = temp('hermes-home-');
    writeFileSync(join(homeDir, 'config.yaml'), 'session:\n  auto_title: false\n');
    const server = await startServer({ HERMES_HOME: homeDir, API_SERVER_KEY: KEY, HERMES_TRUSTED_PROXIES: '10.0.0.1' });
    await fetch(`${server.url}/health`, {
      headers: { 'X-Forwarded-For': '203.0.113.7', 'X-Forwarded-Proto': 'https', 'X-Request-Id': 'spoofed' },
    });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    const entry = server
      .stdout()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.requestId === 'spoofed');
    expect(entry).toMatchObject({ client: '127.0.0.1', proto: 'http' });
  });

  it('interrupts turns still running at the drain timeout with issuer shutdown and marks their runs ended', async () => {
    const homeDir = temp('hermes-home-');
    const model = await scripted([step(text('never ends'), hang())]);
    const server = await startServer({ ...modelEnv(model, homeDir), HERMES_DRAIN_TIMEOUT: '1' });
    const created = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ input: 'hang' }),
    });
    const { run_id: runId } = (await created.json()) as { run_id: string };
    for (let attempt = 0; attempt < 6_000 && model.requests.length === 0; attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    const host = await createAgentHost({ homeDir, env: {}, connectMcp: false, logger: silentLogger });
    cleanups.push(() => host.close());
    const run = await host.store.runs.get(runId);
    expect(run?.status).not.toBe('running');
    expect(run?.exitReason ?? '').toContain('shutdown');
  });

  it('generates and saves a key on loopback, and refuses a public address without one', async () => {
    const homeDir = temp('hermes-home-');
    const server = await startServer({ HERMES_HOME: homeDir });
    for (let attempt = 0; attempt < 6_000 && !server.stderr().includes('Bearer'); attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    const dotenv = join(homeDir, '.env');
    const saved = /API_SERVER_KEY=(\S+)/.exec(readFileSync(dotenv, 'utf8'))?.[1];
    expect(saved).toBeTruthy();
    expect(statSync(dotenv).mode & 0o777).toBe(0o600);
    expect(server.stderr()).toContain(`Bearer ${saved}`);
    expect(server.stderr()).toContain('demo model');
    const health = await fetch(`${server.url}/health/detailed`, { headers: { Authorization: `Bearer ${saved}` } });
    expect(((await health.json()) as { model: { demo: boolean } }).model.demo).toBe(true);
    server.child.kill('SIGTERM');
    await server.exited;

    const refused = spawn(process.execPath, [main], {
      env: {
        PATH: process.env.PATH ?? '',
        HERMES_HOME: temp('hermes-home-'),
        API_SERVER_HOST: '0.0.0.0',
        API_SERVER_PORT: '0',
      },
    });
    let stderr = '';
    refused.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => refused.on('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toContain('refusing to listen on 0.0.0.0 without API_SERVER_KEY');
  });

  it('3. weak keys refuse to start: a short key and a placeholder key each exit 1 naming API_SERVER_KEY', async () => {
    for (const key of ['short', 'changeme-changeme-changeme']) {
      const child = spawn(process.execPath, [main], {
        env: {
          PATH: process.env.PATH ?? '',
          HERMES_HOME: temp('hermes-home-'),
          API_SERVER_PORT: '0',
          API_SERVER_KEY: key,
        },
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(1);
      expect(stderr).toContain('API_SERVER_KEY');
    }
  });
});
