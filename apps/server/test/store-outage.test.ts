import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { delay, startScriptedOpenAIServer, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startEmbeddedPostgres } from '../../../packages/core/test/support/embedded-postgres.js';
import { cleanups, runCleanups, type StartedServer, startServer, temp } from './support/server-process.js';

/**
 * Issue 33 item 1: apps/server instances on one PostgreSQL server that goes down for longer than their background
 * duties' interval (runs heartbeat, turn-lease refresh) and comes back. Nothing ends a process; readiness and new turns
 * say the store is unreachable; after the restart a new turn succeeds.
 */

const KEY = 'test-key-0123456789abcdef';
afterEach(runCleanups);
const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };

/** Polls until `check` returns a value (bounded, generous: this is not a timing assertion). */
async function until<T>(check: () => Promise<T | null>, timeoutMs = 60_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== null) return value;
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw gateway WebSocket client: `call` sends a request and resolves with its answer; `frames` keeps every frame. */
async function gatewayClient(server: StartedServer) {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws?token=${KEY}`);
  cleanups.push(() => socket.close());
  const frames: (Record<string, unknown> & { params?: { type?: string; payload?: Record<string, unknown> } })[] = [];
  socket.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString())));
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  let next = 0;
  const waitFor = (predicate: (frame: (typeof frames)[number]) => boolean) =>
    until(async () => frames.find(predicate) ?? null);
  const call = (method: string, params: Record<string, unknown>) => {
    next += 1;
    const id = next;
    socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return waitFor((frame) => frame.id === id) as Promise<{
      result?: Record<string, unknown>;
      error?: { code: number; message: string };
    }>;
  };
  return { frames, call, waitFor };
}

function alive(server: StartedServer): boolean {
  return server.child.exitCode === null && server.child.signalCode === null;
}

/** A chat completion on the session `sessionId` (stored: a turn that needs the session store). */
function chat(server: StartedServer, content: string, sessionId: string): Promise<Response> {
  return fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth, 'X-Hermes-Session-Id': sessionId },
    body: JSON.stringify({ model: 'hermes-agent', messages: [{ role: 'user', content }] }),
  });
}

describe('apps/server instances through a PostgreSQL outage', () => {
  it('33.1: PostgreSQL stopped past the heartbeat interval: both instances stay up, /health 200, /health/ready 503, new turns 503 store_unavailable with Retry-After; after the restart /health/ready 200 and a new turn succeeds', async () => {
    // A server of this test's own, so stopping it disturbs no other test.
    const database = await startEmbeddedPostgres();
    cleanups.push(() => database.dispose());
    const model = await startScriptedOpenAIServer({
      script: [step(text('streaming '), delay(8_000), text('through the outage')), step(text('after the outage'))],
    });
    cleanups.push(() => model.close());
    // A 3 s lease: the runs heartbeat and a turn's lease refresh run every second, so the outage spans many of them.
    const env = () => {
      const home = temp('hermes-home-');
      writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n  lease_ttl: 3\n');
      return {
        HERMES_HOME: home,
        HERMES_MODEL: 'custom:scripted',
        HERMES_BASE_URL: model.baseURL,
        API_SERVER_KEY: KEY,
        HERMES_DATABASE_URL: database.url,
      };
    };
    const a = await startServer(env());
    const b = await startServer(env());
    for (const instance of [a, b]) expect((await fetch(`${instance.url}/health/ready`)).status).toBe(200);
    // A turn running on A when the database goes: it keeps streaming to its client through the outage.
    const running = await fetch(`${a.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth, 'X-Hermes-Session-Id': `outage-${randomUUID()}` },
      body: JSON.stringify({ model: 'hermes-agent', stream: true, messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(running.status).toBe(200);
    const reader = (running.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let streamed = '';
    while (!streamed.includes('streaming ')) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`the stream ended early: ${streamed}`);
      streamed += decoder.decode(chunk.value, { stream: true });
    }
    const rest = (async () => {
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) return;
        streamed += decoder.decode(chunk.value, { stream: true });
      }
    })();

    // A gateway client on B with a session made before the outage.
    const gateway = await gatewayClient(b);
    const made = await gateway.call('session.create', {});
    expect(made.error).toBeUndefined();

    await database.stop();
    // Longer than several heartbeats and lease refreshes (1 s each) and than the lease itself (3 s).
    await sleep(6_000);

    for (const instance of [a, b]) {
      expect(alive(instance), instance.stderr()).toBe(true);
      expect((await fetch(`${instance.url}/health`)).status).toBe(200);
      const ready = await fetch(`${instance.url}/health/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ status: 'store_unavailable', ready: false });
      const refused = await chat(instance, 'during the outage', `outage-${randomUUID()}`);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
      const run = await fetch(`${instance.url}/v1/runs`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ input: 'during the outage' }),
      });
      expect(run.status).toBe(503);
      expect(run.headers.get('retry-after')).toBeTruthy();
      expect(((await run.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
      for (const [path, body] of [
        ['/v1/responses', { model: 'hermes-agent', input: 'during the outage' }],
        [`/api/sessions/outage-${randomUUID()}/chat`, { message: 'during the outage' }],
      ] as const) {
        const answer = await fetch(`${instance.url}${path}`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify(body),
        });
        expect(answer.status, path).toBe(503);
        expect(answer.headers.get('retry-after'), path).toBeTruthy();
        expect(((await answer.json()) as { error: { code: string } }).error.code, path).toBe('store_unavailable');
      }
    }

    // The gateway: a new session's row cannot be written (5007 naming the store), and a turn on the earlier session
    // ends with a retryable store_unavailable error instead of a hang or a dead process.
    const refusedSession = await gateway.call('session.create', {});
    expect(refusedSession.error?.code).toBe(5007);
    expect(refusedSession.error?.message).toContain('unavailable');
    const submitted = await gateway.call('prompt.submit', { session_id: made.result?.session_id, text: 'hello?' });
    expect(submitted.error).toBeUndefined();
    const ended = await gateway.waitFor((frame) => frame.params?.type === 'message.complete');
    expect(ended.params?.payload).toMatchObject({
      status: 'error',
      error_surface: { code: 'store_unavailable', retryable: true },
    });

    // The running turn's words after the outage began reached its client, and its stream ended.
    await rest;
    expect(streamed).toContain('through the outage');
    expect(streamed).toContain('data: [DONE]');

    await database.start();
    for (const instance of [a, b]) {
      await until(async () => ((await fetch(`${instance.url}/health/ready`)).status === 200 ? true : null));
    }
    const after = await chat(b, 'are you back?', `outage-${randomUUID()}`);
    expect(after.status).toBe(200);
    const body = (await after.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]?.message.content).toBe('after the outage');
    for (const instance of [a, b]) {
      expect(alive(instance)).toBe(true);
      // The runs heartbeat failed during the outage and was retried, and A's turn retried its lease refresh; every
      // background duty handled its own store errors, so the process-level guard never had to.
      expect(instance.stdout()).toContain('runs heartbeat failed');
      expect(instance.stdout()).not.toContain('unhandled rejection');
      expect(instance.stderr()).not.toContain('unhandled rejection');
    }
    expect(a.stdout()).toContain('turn lease refresh failed');
  }, 120_000);
});
