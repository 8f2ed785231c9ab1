import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { delay, type ScriptedServer, startScriptedOpenAIServer, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanups, runCleanups, type StartedServer, startServer, temp } from './support/server-process.js';

/**
 * Issue 37.2 against apps/server as a real child process: clients that open a stream and never read cannot make the
 * server hold more than a bound for them, while a client that reads gets its whole answer.
 */

const KEY = 'test-key-0123456789abcdef';
const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
afterEach(runCleanups);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resident memory of a process, in bytes; 0 once it is gone. */
function residentBytes(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return Number(match?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/** Samples a process's resident memory until stopped; `peak()` is the largest figure seen. */
function sampleMemory(pid: number) {
  let peak = residentBytes(pid);
  let sampling = true;
  const done = (async () => {
    while (sampling) {
      peak = Math.max(peak, residentBytes(pid));
      await sleep(20);
    }
  })();
  return {
    peak: () => peak,
    stop: async () => {
      sampling = false;
      await done;
      return peak;
    },
  };
}

/** Sends one HTTP request on a raw socket and never reads the answer: the socket is paused from the start. */
function nonReader(url: string, method: string, path: string, body?: unknown): Socket {
  const { hostname, port } = new URL(url);
  const json = body === undefined ? '' : JSON.stringify(body);
  const socket = connect({ host: hostname, port: Number(port) });
  socket.pause();
  socket.on('error', () => undefined);
  socket.write(
    `${method} ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${KEY}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
  );
  cleanups.push(() => {
    socket.destroy();
  });
  return socket;
}

async function start(configYaml: string): Promise<{ model: ScriptedServer; server: StartedServer }> {
  const model = await startScriptedOpenAIServer({ script: [step(text('warm'))] });
  cleanups.push(() => model.close());
  const home = temp('hermes-home-');
  writeFileSync(
    join(home, 'config.yaml'),
    `session:\n  auto_title: false\napi_server:\n  max_concurrent_runs: 0\n${configYaml}`,
  );
  const server = await startServer({
    HERMES_HOME: home,
    HERMES_MODEL: 'custom:scripted',
    HERMES_BASE_URL: model.baseURL,
    API_SERVER_KEY: KEY,
  });
  // Warm up (modules, the model's client) before any figure is taken.
  const warm = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ model: 'hermes-agent', messages: [{ role: 'user', content: 'warm up' }] }),
  });
  expect(warm.status).toBe(200);
  return { model, server };
}

/** Reads a chat completion stream whole and returns its text. */
async function chatText(response: Response): Promise<string> {
  const decoder = new TextDecoder();
  let pending = '';
  let received = '';
  for await (const chunk of response.body as ReadableStream<Uint8Array>) {
    pending += decoder.decode(chunk, { stream: true });
    const frames = pending.split('\n\n');
    pending = frames.pop() ?? '';
    for (const frame of frames) {
      if (!frame.startsWith('data: {')) continue;
      const data = JSON.parse(frame.slice(6)) as { choices: { delta: { content?: string } }[] };
      received += data.choices[0]?.delta.content ?? '';
    }
  }
  return received;
}

describe('stream back-pressure (37.2)', () => {
  it('a chat, Responses or session chat stream that is never read is cut at api_server.stream_buffer_bytes and its turn ends', async () => {
    const answer = 'z'.repeat(6 * 1024 * 1024);
    const { model, server } = await start('  stream_buffer_bytes: 262144\n');
    const pid = server.child.pid as number;
    const sessions: string[] = [];
    for (let index = 0; index < 6; index += 1) {
      const created = await fetch(`${server.url}/api/sessions`, { method: 'POST', headers: auth, body: '{}' });
      sessions.push(((await created.json()) as { id: string }).id);
    }
    await sleep(500);
    const idle = residentBytes(pid);
    const memory = sampleMemory(pid);
    model.push(...Array.from({ length: 20 }, () => step(text(answer, 1024))));
    for (let index = 0; index < 7; index += 1)
      nonReader(server.url, 'POST', '/v1/chat/completions', {
        model: 'hermes-agent',
        stream: true,
        messages: [{ role: 'user', content: `never read ${index}` }],
      });
    for (let index = 0; index < 7; index += 1)
      nonReader(server.url, 'POST', '/v1/responses', {
        model: 'hermes-agent',
        stream: true,
        input: `never read ${index}`,
      });
    for (const sessionId of sessions)
      nonReader(server.url, 'POST', `/api/sessions/${sessionId}/chat/stream`, { message: 'never read' });
    // Another client streams meanwhile and gets every delta of its answer, in order. Its answer comes in slices a
    // moment apart, so that this test process, busy serving 20 answers at full speed, keeps up with it.
    for (let attempt = 0; attempt < 2400 && model.calls.length < 21; attempt += 1) await sleep(25);
    model.push(
      step(
        ...Array.from({ length: 64 }, (_, index) => [
          text(answer.slice(index * 98_304, (index + 1) * 98_304), 1024),
          delay(20),
        ]).flat(),
      ),
    );
    const reader = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        model: 'hermes-agent',
        stream: true,
        messages: [{ role: 'user', content: 'read it all' }],
      }),
    });
    const received = await chatText(reader);
    expect(received.length).toBe(answer.length);
    expect(received === answer).toBe(true);
    // Every stream that is never read is cut once it holds its bound, and its turn gives its slot back.
    const cuts = () =>
      server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('stream cut')).length;
    const health = async () =>
      (
        (await (await fetch(`${server.url}/health/detailed`, { headers: auth })).json()) as {
          api_server: { active_turns: number };
        }
      ).api_server.active_turns;
    for (let attempt = 0; attempt < 2400 && (cuts() < 20 || (await health()) > 0); attempt += 1) await sleep(25);
    const peak = await memory.stop();
    expect(cuts()).toBe(20);
    expect(await health()).toBe(0);
    // Reported, not asserted: the figure is dominated by the core's own copies of 21 answers produced at the model's
    // full speed and by the garbage of encoding them, which vary from run to run with the collector (ADR 0038).
    console.log(`turn streams: idle ${(idle / 2 ** 20).toFixed(1)} MB, peak ${(peak / 2 ** 20).toFixed(1)} MB`);
  }, 180_000);
});
