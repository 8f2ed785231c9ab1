import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRunBus, openPostgresStore } from '@hermes/core';
import { delay, type ModelScript, startScriptedOpenAIServer, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type EmbeddedServer, startEmbeddedPostgres } from '../../../packages/core/test/support/embedded-postgres.js';
import { cleanups, runCleanups, type StartedServer, startServer, temp } from './support/server-process.js';

/**
 * Issue 33 item 2 (ADR 0050): a run's owner keeps the events it cannot write while PostgreSQL is down and writes them,
 * in order, once it is back; a reader on another instance gets every event and the terminal one. An outbox too small
 * for the outage ends the run `interrupted`, saying so.
 */

const KEY = 'test-key-0123456789abcdef';
afterEach(runCleanups);
const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `check` returns a value (bounded, generous: this is not a timing assertion). */
async function until<T>(check: () => Promise<T | null>, timeoutMs = 60_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check().catch(() => null);
    if (value !== null) return value;
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await sleep(200);
  }
}

type RunEvent = Record<string, unknown> & { event: string; seq?: number };

function eventsOf(received: string): RunEvent[] {
  return received
    .split('\n\n')
    .map((frame) => frame.split('\n').find((line) => line.startsWith('data: ')))
    .filter((line): line is string => line !== undefined)
    .map((line) => JSON.parse(line.slice(6)) as RunEvent);
}

/** Two instances on a PostgreSQL server of this test's own (stopping it disturbs no other test). */
async function instancesOnOwnDatabase(
  script: ModelScript,
  configYaml: string,
): Promise<{ a: StartedServer; b: StartedServer; database: EmbeddedServer }> {
  const database = await startEmbeddedPostgres();
  cleanups.push(() => database.dispose());
  const model = await startScriptedOpenAIServer({ script });
  cleanups.push(() => model.close());
  const env = () => {
    const home = temp('hermes-home-');
    writeFileSync(join(home, 'config.yaml'), configYaml);
    return {
      HERMES_HOME: home,
      HERMES_MODEL: 'custom:scripted',
      HERMES_BASE_URL: model.baseURL,
      API_SERVER_KEY: KEY,
      HERMES_DATABASE_URL: database.url,
    };
  };
  return { a: await startServer(env()), b: await startServer(env()), database };
}

/** Starts a run on `owner` and a reader of its events on `reader`, which reads until `spoken` was said. */
async function runWithRemoteReader(owner: StartedServer, reader: StartedServer, spoken: string) {
  const created = await fetch(`${owner.url}/v1/runs`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ input: 'tell me a story' }),
  });
  expect(created.status).toBe(202);
  const { run_id: runId } = (await created.json()) as { run_id: string };
  const stream = await fetch(`${reader.url}/v1/runs/${runId}/events`, { headers: auth });
  expect(stream.status).toBe(200);
  const body = (stream.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let received = '';
  const said = () =>
    eventsOf(received)
      .filter((event) => event.event === 'message.delta')
      .map((event) => event.delta)
      .join('');
  while (!said().includes(spoken)) {
    const chunk = await body.read();
    if (chunk.done) throw new Error(`the stream ended early: ${received}`);
    received += decoder.decode(chunk.value, { stream: true });
  }
  const rest = (async () => {
    for (;;) {
      const chunk = await body.read();
      if (chunk.done) return;
      received += decoder.decode(chunk.value, { stream: true });
    }
  })();
  return { runId, rest, events: () => eventsOf(received), said };
}

async function storedSeqs(url: string, runId: string): Promise<{ seq: number; event: string }[]> {
  const store = await openPostgresStore({ url, poolSize: 1 });
  const bus = createRunBus(store, 'test-reader');
  try {
    const rows = await bus.read(runId, -1, 10_000);
    return rows.map((row) => ({ seq: row.seq, event: String(row.payload.event) }));
  } finally {
    await bus.close();
    await store.close();
  }
}

describe('run events through a PostgreSQL outage', () => {
  it('33.2: PostgreSQL stopped for a few seconds mid-run and started again: run_events holds seqs 0..N without a gap, and a reader on the other instance gets every event and the terminal one', async () => {
    const { a, b, database } = await instancesOnOwnDatabase(
      [
        step(
          text('before '),
          delay(1_500),
          text('during '),
          text('the '),
          text('outage '),
          delay(9_000),
          text('after'),
        ),
      ],
      // A lease longer than the outage, so nobody takes the run for lost.
      'session:\n  auto_title: false\n  lease_ttl: 60\n',
    );
    const run = await runWithRemoteReader(a, b, 'before ');
    await database.stop();
    // The run's words during the outage: A keeps them in its outbox.
    await until(async () => (a.stdout().includes('run events waiting for the store') ? true : null));
    await sleep(2_000);
    await database.start();
    await run.rest;

    const events = run.events();
    const seqs = events.map((event) => event.seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, index) => index));
    expect(run.said()).toBe('before during the outage after');
    expect(events.at(-1)).toMatchObject({ event: 'run.completed', output: 'before during the outage after' });
    const stored = await storedSeqs(database.url, run.runId);
    expect(stored.map((row) => row.seq)).toEqual(seqs);
    expect(stored.at(-1)?.event).toBe('run.completed');
    expect(a.stdout()).toContain('run events written after the store returned');
    const status = (await (await fetch(`${b.url}/v1/runs/${run.runId}`, { headers: auth })).json()) as {
      status: string;
    };
    expect(status.status).toBe('completed');
  }, 180_000);

  it('33.2: an outbox smaller than what the outage holds back: the run ends interrupted(run_event_outbox_overflow), and the reader gets the events kept and that terminal event', async () => {
    const { a, b, database } = await instancesOnOwnDatabase(
      [
        step(
          text('one '),
          delay(1_500),
          // Apart in time: deltas that reach the agent in one body chunk go out as one event (ADR 0078), and the
          // outbox must fill with more events than it holds.
          text('two '),
          delay(100),
          text('three '),
          delay(100),
          text('four '),
          delay(100),
          text('five '),
          delay(100),
          text('six '),
          delay(60_000),
          text('never said'),
        ),
      ],
      'session:\n  auto_title: false\n  lease_ttl: 60\napi_server:\n  run_event_outbox: 3\n',
    );
    const run = await runWithRemoteReader(a, b, 'one ');
    await database.stop();
    await until(async () => (a.stdout().includes('run event outbox overflowed') ? true : null));
    await sleep(1_000);
    await database.start();
    await run.rest;

    const events = run.events();
    const terminal = events.at(-1);
    expect(terminal).toMatchObject({
      event: 'run.interrupted',
      interrupted: true,
      turn_exit_reason: 'interrupted_by_system(run_event_outbox_overflow)',
    });
    expect(String(terminal?.error)).toContain('run_event_outbox');
    // The events before the overflow arrive in order without a gap; only the terminal event follows the gap.
    const before = events.slice(0, -1).map((event) => event.seq);
    expect(before).toEqual(Array.from({ length: before.length }, (_, index) => index));
    expect(before.length).toBeGreaterThanOrEqual(1 + 3);
    const stored = await storedSeqs(database.url, run.runId);
    expect(stored.map((row) => row.seq)).toEqual(events.map((event) => event.seq));
    const status = await until(async () => {
      const answer = (await (await fetch(`${b.url}/v1/runs/${run.runId}`, { headers: auth })).json()) as {
        status: string;
        turn_exit_reason?: string;
      };
      return answer.status === 'interrupted' ? answer : null;
    });
    expect(status.turn_exit_reason).toBe('interrupted_by_system(run_event_outbox_overflow)');
  }, 180_000);
});
