import { delay, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../../packages/core/test/support/postgres-global-setup.js';
import { runCleanups, type StartedServer, startInstancePair } from './support/server-process.js';

/**
 * Issue 33 item 3 (ADR 0049): two apps/server processes on one PostgreSQL database; the owner of a run is frozen
 * (SIGSTOP) past its turn lease, another instance takes the session over, and the owner wakes (SIGCONT).
 */

const KEY = 'test-key-0123456789abcdef';
afterEach(runCleanups);
const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `check` returns a value (bounded, generous: this is not a timing assertion). */
async function until<T>(check: () => Promise<T | null>, timeoutMs = 60_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== null) return value;
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await sleep(200);
  }
}

type RunStatus = Record<string, unknown> & { status: string; turn_exit_reason?: string };

async function runStatus(server: StartedServer, runId: string): Promise<RunStatus> {
  const response = await fetch(`${server.url}/v1/runs/${runId}`, { headers: auth });
  expect(response.status).toBe(200);
  return (await response.json()) as RunStatus;
}

const TERMINAL = ['completed', 'failed', 'cancelled', 'interrupted'];

type RunEvent = Record<string, unknown> & { event: string; seq?: number };

function eventsOf(text: string): RunEvent[] {
  return text
    .split('\n\n')
    .map((frame) => frame.split('\n').find((line) => line.startsWith('data: ')))
    .filter((line): line is string => line !== undefined)
    .map((line) => JSON.parse(line.slice(6)) as RunEvent);
}

describe('a run owner frozen past its turn lease', () => {
  it('33.3: SIGSTOP the owner past its lease, start a turn on the session through another instance, stop the first run during the freeze, SIGCONT: one turn’s output in the transcript, the first run stays interrupted, the stop is applied or answered 503', async () => {
    const { a, b } = await startInstancePair(
      [step(text('A is working'), delay(4_000), text(' and finished')), step(text('B answers'))],
      { key: KEY, configYaml: 'session:\n  auto_title: false\n  lease_ttl: 2\n' },
    );
    const created = await fetch(`${a.url}/v1/runs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ input: 'first question' }),
    });
    expect(created.status).toBe(202);
    const { run_id: firstRun, session_id: sessionId } = (await created.json()) as {
      run_id: string;
      session_id: string;
    };
    // A's own stream until the model's first words: A is then inside its model step, holding the lease.
    const stream = await fetch(`${a.url}/v1/runs/${firstRun}/events`, { headers: auth });
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let received = '';
    // The words may come in several deltas: wait for all of them, not for the first.
    const spoken = () =>
      eventsOf(received)
        .filter((event) => event.event === 'message.delta')
        .map((event) => event.delta)
        .join('');
    while (spoken() !== 'A is working') {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`the stream ended early: ${received}`);
      received += decoder.decode(chunk.value, { stream: true });
    }
    a.child.kill('SIGSTOP');
    let resumed = false;
    const resume = () => {
      if (!resumed) a.child.kill('SIGCONT');
      resumed = true;
    };
    try {
      // A new turn on the same session through B, admitted once A's 2 s lease has expired (409 session_busy before).
      const secondRun = await until(async () => {
        const response = await fetch(`${b.url}/v1/runs`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ input: 'second question', session_id: sessionId }),
        });
        if (response.status === 409) return null;
        expect(response.status).toBe(202);
        return ((await response.json()) as { run_id: string }).run_id;
      });
      const second = await until(async () => {
        const status = await runStatus(b, secondRun);
        return TERMINAL.includes(status.status) ? status : null;
      });
      expect(second).toMatchObject({ status: 'completed', output: 'B answers' });

      // A stop for the frozen owner's run: A cannot answer, so B answers 503 (retry) until the run is settled, then
      // the run's final status; never the 409 of a run executing nowhere.
      const stopAnswers: { status: number; body: Record<string, unknown> }[] = [];
      await until(async () => {
        const response = await fetch(`${b.url}/v1/runs/${firstRun}/stop`, { method: 'POST', headers: auth });
        const body = (await response.json()) as Record<string, unknown>;
        stopAnswers.push({ status: response.status, body });
        if (response.status === 503) {
          expect(response.headers.get('retry-after')).toBeTruthy();
          return null;
        }
        return true;
      }, 90_000);
      for (const answer of stopAnswers.slice(0, -1)) {
        expect(answer.status).toBe(503);
        expect(answer.body).toMatchObject({ error: { code: 'run_owner_unreachable' } });
      }
      expect(stopAnswers.at(-1)).toMatchObject({
        status: 200,
        body: { status: 'interrupted', turn_exit_reason: 'interrupted_by_system(session_turn_lease_lost)' },
      });
    } finally {
      resume();
    }

    // A wakes: its turn's writes are refused, it stops, and its own clients are told the run was interrupted.
    const readToEnd = (async () => {
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) return;
        received += decoder.decode(chunk.value, { stream: true });
      }
    })();
    const ended = await Promise.race([readToEnd.then(() => true), sleep(60_000).then(() => false)]);
    expect(ended, `A's stream did not end: ${received}\n${a.stdout().slice(-4_000)}`).toBe(true);
    const ownEvents = eventsOf(received);
    // (Words the model sent during the freeze may reach A's own stream before the refusal; the terminal event and the
    // transcript are what count.)
    expect(ownEvents.at(-1)).toMatchObject({
      event: 'run.interrupted',
      turn_exit_reason: 'interrupted_by_system(session_turn_lease_lost)',
    });
    const onA = await until(async () => {
      const status = await runStatus(a, firstRun);
      return TERMINAL.includes(status.status) ? status : null;
    });
    for (const status of [onA, await runStatus(b, firstRun)])
      expect(status).toMatchObject({
        status: 'interrupted',
        turn_exit_reason: 'interrupted_by_system(session_turn_lease_lost)',
      });
    // Still interrupted a while later: the woken owner rewrote nothing.
    await sleep(2_000);
    expect((await runStatus(b, firstRun)).status).toBe('interrupted');

    const messages = await fetch(`${b.url}/api/sessions/${sessionId}/messages`, { headers: auth });
    const rows = ((await messages.json()) as { data: { role: string; content: string }[] }).data;
    const answers = rows.filter((row) => row.role === 'assistant').map((row) => row.content);
    expect(answers).toEqual(['B answers']);
    expect(rows.map((row) => row.content).join('\n')).not.toContain('finished');
    expect(a.child.exitCode).toBeNull();
    expect(a.stdout()).toContain('another process took its session over');
  }, 180_000);
});
