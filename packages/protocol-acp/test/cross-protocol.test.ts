import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SCRIPTED_KEY } from './agent-harness.js';
import { openRun, prompt, requestText, teardown } from './conformance-helpers.js';

const SERVER_ENTRY = fileURLToPath(new URL('../../../apps/server/dist/main.js', import.meta.url));
const KEY = 'cross-protocol-key-0123456789';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async (context) => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await teardown(context.task.result?.state === 'fail');
});

/** The deployable server (HTTP API + gateway WebSocket) on the same HERMES_HOME as the ACP agent. */
async function startServer(home: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      HERMES_HOME: home,
      API_SERVER_PORT: '0',
      API_SERVER_KEY: KEY,
      SCRIPTED_API_KEY: SCRIPTED_KEY,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n').find((entry) => entry.includes('"msg":"listening"'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { url, child };
}

const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };

/** One JSON-RPC call over the gateway WebSocket. */
async function gatewayCall(
  url: string,
  method: string,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const socket = new WebSocket(`${url.replace('http', 'ws')}/api/ws?token=${KEY}`);
  cleanups.push(() => socket.close());
  return new Promise((resolve, reject) => {
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString()) as {
        id?: number;
        result?: Record<string, unknown>;
        error?: unknown;
        params?: { type?: string };
      };
      if (frame.params?.type === 'gateway.ready')
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
      if (frame.id === 1) frame.error ? reject(new Error(JSON.stringify(frame.error))) : resolve(frame.result ?? {});
    });
    socket.on('error', reject);
  });
}

describe('one store shared by ACP, the gateway and the HTTP API', () => {
  it('a session created over ACP is listed and resumable by the HTTP API and the gateway, and the other way round', async () => {
    const run = await openRun({ script: [step(text('answer over ACP'))] });
    await prompt(run, 'CREATED-OVER-ACP');
    const { url } = await startServer(run.fixture.home);

    const listed = (await (await fetch(`${url}/api/sessions`, { headers: auth })).json()) as { data: { id: string }[] };
    expect(listed.data.map((session) => session.id)).toContain(run.sessionId);

    run.fixture.server.push(step(text('answer over HTTP')));
    const chat = await fetch(`${url}/api/sessions/${run.sessionId}/chat`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ message: 'follow up over HTTP' }),
    });
    expect(chat.status).toBe(200);
    expect(requestText(run.fixture.server.calls.at(-1)!)).toContain('CREATED-OVER-ACP');

    const resumed = await gatewayCall(url, 'session.resume', { session_id: run.sessionId });
    expect(JSON.stringify(resumed.messages)).toContain('follow up over HTTP');

    // The other way round: a session made by the HTTP API is listed and loaded over ACP.
    const created = (await (
      await fetch(`${url}/api/sessions`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ title: 'made over HTTP' }),
      })
    ).json()) as { id: string };
    run.fixture.server.push(step(text('stored by HTTP')));
    await fetch(`${url}/api/sessions/${created.id}/chat`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ message: 'CREATED-OVER-HTTP' }),
    });
    const acpList = (await run.agent.agent.request('session/list', {})) as { sessions: { sessionId: string }[] };
    expect(acpList.sessions.map((session) => session.sessionId)).toContain(created.id);
    await run.agent.agent.request('session/load', { sessionId: created.id, cwd: run.fixture.project, mcpServers: [] });
    run.fixture.server.push(step(text('continued over ACP')));
    await prompt(run, 'follow up over ACP', created.id);
    expect(requestText(run.fixture.server.calls.at(-1)!)).toContain('CREATED-OVER-HTTP');
  });
});
