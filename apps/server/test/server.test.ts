import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAgentHost, silentLogger } from '@hermes/core';
import { delay, hang, type ScriptedServer, startScriptedOpenAIServer, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const KEY = 'test-key-0123456789abcdef';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function temp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Started {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  stdout: () => string;
  exited: Promise<number | null>;
}

async function startServer(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [main], {
    env: { PATH: process.env.PATH ?? '', HOME: env.HERMES_HOME ?? tmpdir(), API_SERVER_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  cleanups.push(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      for (const line of stdout.split('\n')) {
        if (line.includes('"msg":"listening"')) resolve((JSON.parse(line) as { url: string }).url);
      }
    });
    void exited.then((code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr, stdout: () => stdout, exited };
}

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
    for (let attempt = 0; attempt < 200 && status !== 'completed'; attempt += 1) {
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
      for (let attempt = 0; attempt < 400; attempt += 1) {
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

    const logs = server
      .stdout()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
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
    for (let attempt = 0; attempt < 300 && model.requests.length === 0; attempt += 1)
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
    for (let attempt = 0; attempt < 300 && model.requests.length === 0; attempt += 1)
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
    for (let attempt = 0; attempt < 200 && !server.stderr().includes('Bearer'); attempt += 1)
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
