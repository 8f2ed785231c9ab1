import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import {
  delay,
  type ScriptedServer,
  type ScriptStep,
  startScriptedOpenAIServer,
  step,
  text,
} from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
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
 * Issue 37.2 against apps/server as a real child process: clients that open a stream and never read cannot make the
 * server hold more than a bound for them, while a client that reads gets its whole answer; and rounds of them leave
 * nothing behind (ADR 0038).
 */

const KEY = 'test-key-0123456789abcdef';
const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
afterEach(runCleanups);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

/** The server's own figures after it collected its garbage (see {@link collectGarbage}). */
async function collectedMemory(server: StartedServer): Promise<{ heapUsed: number; resident: number }> {
  const heapUsed = await collectGarbage(server);
  return { heapUsed, resident: residentBytes(server.child.pid as number) };
}

const megabytes = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

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

async function start(
  configYaml: string,
  env: Record<string, string> = {},
  nodeArguments: string[] = [],
): Promise<{ model: ScriptedServer; server: StartedServer }> {
  const model = await startScriptedOpenAIServer({ script: [step(text('warm'))] });
  cleanups.push(() => model.close());
  const home = temp('hermes-home-');
  writeFileSync(
    join(home, 'config.yaml'),
    `session:\n  auto_title: false\napi_server:\n  max_concurrent_runs: 0\n${configYaml}`,
  );
  const server = await startServer(
    {
      HERMES_HOME: home,
      HERMES_MODEL: 'custom:scripted',
      HERMES_BASE_URL: model.baseURL,
      API_SERVER_KEY: KEY,
      ...env,
    },
    nodeArguments,
  );
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

/** A server's state as /health/detailed reports it. */
async function health(server: StartedServer): Promise<{ activeTurns: number; activeAgents: number }> {
  const report = (await (await fetch(`${server.url}/health/detailed`, { headers: auth })).json()) as {
    api_server: { active_turns: number };
    active_agents: number;
  };
  return { activeTurns: report.api_server.active_turns, activeAgents: report.active_agents };
}

/** How many streams the server has cut so far. */
const cutsOf = (server: StartedServer) =>
  server
    .stdout()
    .split('\n')
    .filter((line) => line.includes('stream cut')).length;

/**
 * 20 clients that open a stream and never read it: 7 chat completions, 7 Responses and 6 session chats on new stored
 * sessions, each answered with an `answer()` step. Resolves once the model has been asked for all 20.
 */
async function twentyNonReaders(server: StartedServer, model: ScriptedServer, answer: () => ScriptStep): Promise<void> {
  const sessions: string[] = [];
  for (let index = 0; index < 6; index += 1) {
    const created = await fetch(`${server.url}/api/sessions`, { method: 'POST', headers: auth, body: '{}' });
    sessions.push(((await created.json()) as { id: string }).id);
  }
  const callsBefore = model.calls.length;
  model.push(...Array.from({ length: 20 }, answer));
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
  for (let attempt = 0; attempt < 2400 && model.calls.length < callsBefore + 20; attempt += 1) await sleep(25);
}

/**
 * One round: 20 clients open a chat completion, Responses or session chat stream (7, 7 and 6 of them, the session
 * chats on new stored sessions) for a 6 MB answer served at the model's full speed and never read, while another
 * client reads a 6 MB answer whole. Resolves once every never-read stream is cut and every turn has ended.
 */
async function round(server: StartedServer, model: ScriptedServer, answer: string): Promise<string> {
  const cutsBefore = cutsOf(server);
  await twentyNonReaders(server, model, () => step(text(answer, 1024)));
  // Another client streams meanwhile and gets every delta of its answer, in order. Its answer comes in slices a
  // moment apart, so that this test process, busy serving 20 answers at full speed, keeps up with it.
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
  // Every stream that is never read is cut once it holds its bound, and its turn gives its slot back.
  for (
    let attempt = 0;
    attempt < 2400 && (cutsOf(server) < cutsBefore + 20 || (await health(server)).activeTurns > 0);
    attempt += 1
  )
    await sleep(25);
  expect(cutsOf(server) - cutsBefore).toBe(20);
  return received;
}

describe('stream back-pressure (37.2)', () => {
  it('never-read chat, Responses and session chat streams are cut at api_server.stream_buffer_bytes, and rounds of them leave nothing behind', async () => {
    const answer = 'z'.repeat(6 * 1024 * 1024);
    const { model, server } = await start('  stream_buffer_bytes: 262144\n', { NODE_OPTIONS: '--inspect=127.0.0.1:0' });
    const pid = server.child.pid as number;
    await sleep(500);
    const idle = await collectedMemory(server);
    const memory = sampleMemory(pid);
    const after: { heapUsed: number; resident: number }[] = [];
    for (let index = 0; index < 3; index += 1) {
      const received = await round(server, model, answer);
      expect(received.length).toBe(answer.length);
      expect(received === answer).toBe(true);
      // The agents of the round's sessions were let go of with their turns (every non-reader stays connected).
      expect(await health(server)).toEqual({ activeTurns: 0, activeAgents: 0 });
      after.push(await collectedMemory(server));
    }
    const peak = await memory.stop();
    const [first, , third] = after as [(typeof after)[0], (typeof after)[0], (typeof after)[0]];
    console.log(
      `turn streams: idle heap ${megabytes(idle.heapUsed)} MB, RSS ${megabytes(idle.resident)} MB; after each round ` +
        `and a collection: ${after.map((entry) => `heap ${megabytes(entry.heapUsed)} MB, RSS ${megabytes(entry.resident)} MB`).join('; ')}; ` +
        `RSS peak ${megabytes(peak)} MB`,
    );
    // What a round keeps is what the runs API keeps an hour for each of its 6 session chats (spec §19.9): a backlog of
    // at most 1,000 events, here 1 KiB deltas, about 1 MB each. Before the agents were let go of, each round kept
    // about 83 MB of heap (every Responses and session chat agent's transcript and event ring).
    expect(third.heapUsed - first.heapUsed).toBeLessThan(32 * 2 ** 20);
    // The resident figure also holds what the allocator keeps of freed memory (ADR 0038), hence the wider bound.
    expect(third.resident - first.resident).toBeLessThan(80 * 2 ** 20);
  }, 300_000);
});

/**
 * An answer paced like a model's: 16-character deltas, eight to a network chunk, a chunk every 2 ms (about 64 KB/s per
 * turn; a real model is slower still).
 */
function pacedAnswer(answer: string): ScriptStep {
  const parts = [];
  for (let index = 0; index < answer.length; index += 128)
    parts.push(text(answer.slice(index, index + 128), 16), delay(2));
  return step(...parts);
}

/**
 * 20 clients open a chat completion, Responses or session chat stream (7, 7 and 6, the session chats on new stored
 * sessions) for a paced 200 KB answer and never read, while another client streams a paced 200 KB answer of its own
 * and reads it. Resolves with what the reader got once every turn has ended.
 */
async function pacedRound(server: StartedServer, model: ScriptedServer, answer: string): Promise<string> {
  await twentyNonReaders(server, model, () => pacedAnswer(answer));
  model.push(pacedAnswer(answer));
  const reader = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ model: 'hermes-agent', stream: true, messages: [{ role: 'user', content: 'read it all' }] }),
  });
  const received = await chatText(reader);
  for (let attempt = 0; attempt < 2400 && (await health(server)).activeTurns > 0; attempt += 1) await sleep(25);
  return received;
}

/** Runs {@link pacedRound} on a server and returns its RSS over idle at the peak and after a collection. */
async function pacedFigures(server: StartedServer, model: ScriptedServer, label: string) {
  const answer = 'abcdefghijklmnopqrstuvwxyz0123456789 '.repeat(5600).slice(0, 200 * 1024);
  await sleep(500);
  const idle = await collectedMemory(server);
  const memory = sampleMemory(server.child.pid as number);
  const received = await pacedRound(server, model, answer);
  const peak = await memory.stop();
  const after = await collectedMemory(server);
  expect(received === answer).toBe(true);
  expect(await health(server)).toEqual({ activeTurns: 0, activeAgents: 0 });
  const figures = { peakOverIdle: peak - idle.resident, afterOverIdle: after.resident - idle.resident };
  console.log(
    `paced round, ${label}: idle RSS ${megabytes(idle.resident)} MB (heap ${megabytes(idle.heapUsed)} MB); ` +
      `peak +${megabytes(figures.peakOverIdle)} MB; after a collection +${megabytes(figures.afterOverIdle)} MB ` +
      `(heap ${megabytes(after.heapUsed)} MB)`,
  );
  return figures;
}

/**
 * Issue 37.2's figure with answers paced like a model's and the default bound (ADR 0062). What the server holds for a
 * non-reading client is bounded (ADR 0038); what its RSS showed at the peak was mostly V8's heap sized for the garbage
 * of 21 turns streaming at once. The server keeps its young generation small by default (ADR 0078), adds
 * `--optimize-for-size` with HERMES_V8_HEAP=small (ADR 0069); the deploy settings of docs/deploy.md §7 do it from the
 * command line and add the allocator's.
 */
describe('RSS with 20 non-reading clients and paced answers (37.2, ADR 0062)', () => {
  it('default settings: the reader gets its whole answer, and RSS stays within 50 MB of idle, at the peak too', async () => {
    const { model, server } = await start('', { NODE_OPTIONS: '--inspect=127.0.0.1:0' });
    const { peakOverIdle, afterOverIdle } = await pacedFigures(server, model, 'default settings');
    expect(afterOverIdle).toBeLessThan(50 * 2 ** 20);
    // The issue's figure. The peak is the moment the 21 turns end together, each leaving copies of its answer that the
    // small young generation (ADR 0078) promotes. The server now makes fewer of them: the SSE writer writes a large frame
    // as chunks of its own and encodes an answer several frames carry once, and the streamed text is joined flat once
    // (ADR 0097). Measured +32.5 to +45.0 MB (median +39.7) in ten runs on a loaded 2-core machine, against +40.7 to
    // +45.6 MB (median +42.5) interleaved without it and +75 to +86 MB with V8's own sizing (HERMES_V8_HEAP=node). No
    // heap flag: the old generation's 10% growth costs 25-30% CPU per stream at 1,000 streams (ADR 0091).
    expect(peakOverIdle).toBeLessThan(50 * 2 ** 20);
  }, 180_000);

  it('with HERMES_V8_HEAP=small: RSS stays within 50 MB of idle, at the peak too', async () => {
    const { model, server } = await start('', { NODE_OPTIONS: '--inspect=127.0.0.1:0', HERMES_V8_HEAP: 'small' });
    const { peakOverIdle, afterOverIdle } = await pacedFigures(server, model, 'HERMES_V8_HEAP=small');
    expect(afterOverIdle).toBeLessThan(50 * 2 ** 20);
    // The issue's figure. Measured +30 to +41 MB on a loaded 2-core machine (ADR 0069): the margin is for the
    // collector's timing under load.
    expect(peakOverIdle).toBeLessThan(50 * 2 ** 20);
  }, 180_000);

  it("with docs/deploy.md's memory settings: RSS within 50 MB of idle after the round, and the peak near it", async () => {
    const { model, server } = await start(
      '',
      { NODE_OPTIONS: '--inspect=127.0.0.1:0', MALLOC_ARENA_MAX: '1', MALLOC_TRIM_THRESHOLD_: '131072' },
      ['--optimize-for-size'],
    );
    const { peakOverIdle, afterOverIdle } = await pacedFigures(server, model, 'deploy memory settings');
    expect(afterOverIdle).toBeLessThan(50 * 2 ** 20);
    // Measured 47-51 MB for this round (ADR 0062); the margin is for a loaded machine's collector timing.
    expect(peakOverIdle).toBeLessThan(80 * 2 ** 20);
  }, 180_000);
});
