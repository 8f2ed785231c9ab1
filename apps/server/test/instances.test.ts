import { hang, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../../packages/core/test/support/postgres-global-setup.js';
import { runCleanups, startInstancePair } from './support/server-process.js';

/** Issue 17.4: `apps/server` processes on one PostgreSQL database, one of them killed with SIGKILL mid-run. */

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

type RunEvent = Record<string, unknown> & { event: string; seq?: number };

function eventsOf(text: string): RunEvent[] {
  return text
    .split('\n\n')
    .map((frame) => frame.split('\n').find((line) => line.startsWith('data: ')))
    .filter((line): line is string => line !== undefined)
    .map((line) => JSON.parse(line.slice(6)) as RunEvent);
}

describe('apps/server instances on one PostgreSQL database', () => {
  it('17.4: an instance killed with SIGKILL mid-run: another settles the run interrupted(session_turn_lease_lost) after the lease expires, and nothing committed is lost', async () => {
    // A 2 s lease so the test does not wait the default 300 s for the takeover.
    const { a, b } = await startInstancePair([step(text('working on it'), hang()), step(text('picked up again'))], {
      key: KEY,
      configYaml: 'session:\n  auto_title: false\n  lease_ttl: 2\n',
    });

    const created = await fetch(`${a.url}/v1/runs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ input: 'remember the word kestrel' }),
    });
    expect(created.status).toBe(202);
    const { run_id: runId, session_id: sessionId } = (await created.json()) as { run_id: string; session_id: string };

    // B streams the run live until the model's words (all it says before it hangs) arrive from A; then A is killed.
    // The text may come in several deltas, so waiting for the first one only raced the rest under load.
    const stream = await fetch(`${b.url}/v1/runs/${runId}/events`, { headers: auth });
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let received = '';
    const spoken = () =>
      eventsOf(received)
        .filter((event) => event.event === 'message.delta')
        .map((event) => event.delta)
        .join('');
    while (spoken() !== 'working on it') {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`the stream ended early: ${received}`);
      received += decoder.decode(chunk.value, { stream: true });
    }
    const exited = new Promise((resolve) => a.child.once('exit', resolve));
    a.child.kill('SIGKILL');
    await exited;

    // The same stream on B ends with the run's terminal event once A's lease has expired.
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      received += decoder.decode(chunk.value, { stream: true });
    }
    const live = eventsOf(received);
    expect(live.at(-1)).toMatchObject({
      event: 'run.interrupted',
      completed: false,
      interrupted: true,
      turn_exit_reason: 'interrupted_by_system(session_turn_lease_lost)',
    });
    expect(live.map((event) => event.seq)).toEqual(live.map((_, index) => index));
    const streamed = live.filter((event) => event.event === 'message.delta').map((event) => event.delta);
    expect(streamed.join('')).toBe('working on it');

    const status = await until(async () => {
      const body = (await (await fetch(`${b.url}/v1/runs/${runId}`, { headers: auth })).json()) as Record<
        string,
        unknown
      >;
      return body.status === 'interrupted' ? body : null;
    });
    expect(status).toMatchObject({
      completed: false,
      interrupted: true,
      last_event: 'run.interrupted',
      turn_exit_reason: 'interrupted_by_system(session_turn_lease_lost)',
    });
    // A replay on B gives the same events, and the user's message A committed is there.
    const replay = eventsOf(await (await fetch(`${b.url}/v1/runs/${runId}/events`, { headers: auth })).text());
    expect(replay).toEqual(live);
    const messages = (await (await fetch(`${b.url}/api/sessions/${sessionId}/messages`, { headers: auth })).json()) as {
      data: { role: string; content: unknown }[];
    };
    expect(JSON.stringify(messages.data)).toContain('remember the word kestrel');

    // The session is free again: B runs the next turn on it.
    const next = await fetch(`${b.url}/v1/runs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ input: 'go on', session_id: sessionId }),
    });
    expect(next.status).toBe(202);
    const nextId = ((await next.json()) as { run_id: string }).run_id;
    const done = eventsOf(await (await fetch(`${b.url}/v1/runs/${nextId}/events`, { headers: auth })).text());
    expect(done.at(-1)).toMatchObject({ event: 'run.completed', output: 'picked up again' });
  }, 120_000);
});
