// biome-ignore-all lint/suspicious/noExplicitAny: assertions dig into untyped JSON payloads of the wire.
import { delay, type ModelScript, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../core/test/support/postgres.js';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../core/test/support/postgres-global-setup.js';
import { type Rig, readFrames, startRig, until } from './harness.js';

/**
 * Issue 17.2: two instances of the API (two hosts, two HTTP servers on 127.0.0.1) on one PostgreSQL database. A run
 * created on A is read, streamed, approved, steered and stopped through B (ADR 0018).
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function twoInstances(
  scripts: { a?: ModelScript; b?: ModelScript } = {},
  config: Record<string, unknown> = {},
): Promise<[Rig, Rig]> {
  const database = await createTestDatabase();
  cleanups.push(database.drop);
  const a = await startRig({ database: database.url, script: scripts.a ?? [], config: config as never });
  cleanups.push(() => a.close());
  const b = await startRig({ database: database.url, script: scripts.b ?? [], config: config as never });
  cleanups.push(() => b.close());
  return [a, b];
}

type RunEvent = Record<string, any> & { event: string; seq?: number };

function eventsOf(frames: string[]): RunEvent[] {
  return frames
    .filter((frame) => frame.split('\n').some((line) => line.startsWith('data: ')))
    .map((frame) => {
      const line = frame.split('\n').find((entry) => entry.startsWith('data: ')) as string;
      return JSON.parse(line.slice(6)) as RunEvent;
    });
}

async function post(rig: Rig, path: string, body: unknown = {}, headers: Record<string, string> = {}) {
  const response = await rig.raw(path, { method: 'POST', body: JSON.stringify(body), headers });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
}

async function status(rig: Rig, runId: string): Promise<Record<string, any>> {
  return (await (await rig.raw(`/v1/runs/${runId}`)).json()) as Record<string, any>;
}

/** Reads an events stream until `stop` holds for the events so far (or the stream ends); returns them. */
async function readUntil(response: Response, stop: (events: RunEvent[]) => boolean): Promise<RunEvent[]> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const events = eventsOf(buffer.split('\n\n').slice(0, -1));
    if (stop(events)) {
      await reader.cancel();
      return events;
    }
    const chunk = await reader.read();
    if (chunk.done) return eventsOf(`${buffer}\n\n`.split('\n\n'));
    buffer += decoder.decode(chunk.value, { stream: true });
  }
}

const danger = () => step(toolCall('terminal', { command: 'rm -rf ./multi-instance-scratch' }));

describe('runs API across instances on one PostgreSQL database (17.2)', () => {
  it('a run created on A: status, live events, Last-Event-ID replay and approval on B, with the 409 rules', async () => {
    const [a, b] = await twoInstances({ a: [danger(), step(text('after the approval'))] });
    const created = await post(a, '/v1/runs', { input: 'clean up' });
    expect(created.status).toBe(202);
    const runId = created.body.run_id as string;

    // B streams the run live while it waits for an approval on A.
    const live = await b.raw(`/v1/runs/${runId}/events`);
    expect(live.headers.get('content-type')).toContain('text/event-stream');
    const beforeApproval = await readUntil(live, (events) =>
      events.some((event) => event.event === 'approval.request'),
    );
    const request = beforeApproval.find((event) => event.event === 'approval.request') as RunEvent;
    expect(request.command).toContain('rm -rf');

    const waiting = await until(async () => {
      const current = await status(b, runId);
      return current.status === 'waiting_for_approval' ? current : null;
    });
    expect(waiting.approval).toMatchObject({ request_id: request.request_id, pending: 1 });
    expect(waiting.session_id).toBe(created.body.session_id);

    // Steer is refused while waiting for approval, as on A itself.
    const steer = await post(b, `/v1/runs/${runId}/steer`, { input: 'also' });
    expect(steer.status).toBe(409);
    expect(steer.body.error.code).toBe('run_not_accepting_steer');
    expect(steer.headers.get('x-should-retry')).toBe('false');
    const badChoice = await post(b, `/v1/runs/${runId}/approval`, { choice: 'maybe' });
    expect(badChoice.status).toBe(400);
    expect(badChoice.body.error.code).toBe('invalid_approval_choice');

    const answer = await post(b, `/v1/runs/${runId}/approval`, { choice: 'deny' });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ object: 'hermes.run.approval_response', choice: 'deny', resolved: 1 });

    // The stream on B goes on to the terminal event; a replay on B from the approval request gets the rest.
    const all = eventsOf(await readFrames(await b.raw(`/v1/runs/${runId}/events`)));
    expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index));
    expect(all.at(-1)).toMatchObject({ event: 'run.completed', output: 'after the approval' });
    expect(all.find((event) => event.event === 'approval.responded')).toMatchObject({
      choice: 'deny',
      source: 'client',
    });
    const onA = eventsOf(await readFrames(await a.raw(`/v1/runs/${runId}/events`)));
    expect(onA).toEqual(all);
    const replay = eventsOf(
      await readFrames(await b.raw(`/v1/runs/${runId}/events`, { headers: { 'Last-Event-ID': String(request.seq) } })),
    );
    expect(replay).toEqual(all.slice((request.seq as number) + 1));
    const atEnd = await readFrames(
      await b.raw(`/v1/runs/${runId}/events`, { headers: { 'Last-Event-ID': String(all.at(-1)?.seq) } }),
    );
    expect(eventsOf(atEnd)).toEqual([]);

    const done = await status(b, runId);
    expect(done).toMatchObject({ status: 'completed', output: 'after the approval', last_event: 'run.completed' });
    const late = await post(b, `/v1/runs/${runId}/approval`, { choice: 'deny' });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('approval_not_active');
    const stopDone = await post(b, `/v1/runs/${runId}/stop`);
    expect(stopDone).toMatchObject({ status: 200, body: { status: 'completed' } });
  }, 30_000);

  it('steer and stop sent to B reach the run on A', async () => {
    const [a, b] = await twoInstances({
      a: [
        step(toolCall('test_sleep', { seconds: 2 })),
        step(text('steered')),
        step(toolCall('test_sleep', { seconds: 60 })),
      ],
    });
    const one = (await post(a, '/v1/runs', { input: 'work' })).body.run_id as string;
    await until(async () => (await status(b, one)).status === 'running' && a.host.model.calls.length === 1);
    const steer = await post(b, `/v1/runs/${one}/steer`, { input: 'also check tests' });
    expect(steer).toMatchObject({ status: 200, body: { object: 'hermes.run.steer', run_id: one, accepted: true } });
    const first = eventsOf(await readFrames(await b.raw(`/v1/runs/${one}/events`)));
    expect(first.some((event) => event.event === 'run.steered')).toBe(true);
    expect(first.at(-1)).toMatchObject({ event: 'run.completed' });
    expect(JSON.stringify(a.host.model.calls[1]?.messages)).toContain('also check tests');

    const two = (await post(a, '/v1/runs', { input: 'sleep' })).body.run_id as string;
    await until(() => a.host.model.calls.length === 3);
    const stop = await post(b, `/v1/runs/${two}/stop`);
    expect(stop).toMatchObject({ status: 200, body: { status: 'stopping' } });
    const second = eventsOf(await readFrames(await b.raw(`/v1/runs/${two}/events`)));
    expect(second.at(-1)).toMatchObject({
      event: 'run.cancelled',
      completed: false,
      interrupted: true,
      turn_exit_reason: 'interrupted_by_user',
    });
    expect((await status(b, two)).status).toBe('cancelled');
    const lateSteer = await post(b, `/v1/runs/${two}/steer`, { input: 'x' });
    expect(lateSteer.status).toBe(409);
    expect(lateSteer.body.error.code).toBe('run_not_accepting_steer');
    expect((await post(b, `/v1/runs/${two}/stop`)).body.status).toBe('cancelled');
  }, 30_000);

  it('two runs on one session started on two instances at once: exactly one runs, the other is 409 session_busy (100 races)', async () => {
    const rounds = 100;
    // Each answer takes a moment, so the winner still holds the turn when the other request arrives: two turns
    // that do not overlap in time are not a race (a fast answer could end before the second request lands).
    const replies = Array.from({ length: rounds }, (_, index) => step(delay(200), text(`answer ${index}`)));
    const [a, b] = await twoInstances({ a: replies, b: replies });
    for (let round = 0; round < rounds; round += 1) {
      const sessionId = `race-${round}`;
      await a.host.store.createSession({ id: sessionId, source: 'api_server' });
      const answers = await Promise.all(
        [a, b].map((rig) => post(rig, '/v1/runs', { input: `go ${round}`, session_id: sessionId })),
      );
      const started = answers.filter((answer) => answer.status === 202);
      const busy = answers.filter((answer) => answer.status === 409);
      expect(started, `round ${round}`).toHaveLength(1);
      expect(busy.map((answer) => answer.body.error.code)).toEqual(['session_busy']);
      const runId = started[0]?.body.run_id as string;
      const finished = await until(async () => {
        const current = await status(b, runId);
        return current.last_event === 'run.completed' ? current : null;
      });
      expect(finished.status).toBe('completed');
      expect(finished.output).toMatch(/^answer \d+$/);
      const runs = await a.host.store.runs.list({ sessionId });
      expect(runs.map((run) => run.status)).toEqual(['completed']);
    }
  }, 180_000);

  it('a turn told ended frees its session at once: the next turn on it is admitted, never 409 (20 rounds)', async () => {
    // The end of a run is shared with the other instances before its slot is given back (ADR 0050); the session
    // itself is free as soon as a client can learn the run ended, from the response, its events or its status.
    const rounds = 20;
    const replies = Array.from({ length: rounds * 2 }, (_, index) => step(text(`answer ${index}`)));
    const [a] = await twoInstances({ a: replies });
    await a.host.store.createSession({ id: 'back-to-back', source: 'api_server' });
    for (let round = 0; round < rounds; round += 1) {
      const chat = await post(a, '/api/sessions/back-to-back/chat', { message: `chat ${round}` });
      expect(chat.status, `round ${round}: session chat`).toBe(200);
      const created = await post(a, '/v1/runs', { input: `run ${round}`, session_id: 'back-to-back' });
      expect(created.status, `round ${round}: run after the chat's response`).toBe(202);
      await until(async () => (await status(a, created.body.run_id as string)).status === 'completed');
    }
  }, 120_000);

  it('previous_response_id from A continues on B', async () => {
    const [a, b] = await twoInstances({ a: [step(text('first answer'))], b: [step(text('second answer'))] });
    const first = await post(a, '/v1/responses', { input: 'remember the word kestrel' });
    expect(first.status).toBe(200);
    const second = await post(b, '/v1/responses', { input: 'which word?', previous_response_id: first.body.id });
    expect(second.status).toBe(200);
    expect(JSON.stringify(b.host.model.calls[0]?.messages)).toContain('remember the word kestrel');
    expect(JSON.stringify(b.host.model.calls[0]?.messages)).toContain('first answer');
  }, 30_000);

  it('a replay on B from events trimmed from the shared backlog starts with replay.truncated (spec §19.3)', async () => {
    const [a, b] = await twoInstances({ a: [step(text('one two three four'))] });
    const created = await post(a, '/v1/runs', { input: 'count' });
    const runId = created.body.run_id as string;
    const all = eventsOf(await readFrames(await a.raw(`/v1/runs/${runId}/events`)));
    expect(all.at(-1)?.event).toBe('run.completed');
    // The bus trims a run's oldest events past the backlog size (core test/store/run-events-retention.test.ts);
    // here the first three go as a trim would delete them.
    const pool = (
      a.host.store as unknown as {
        pool: { query(text: string, values: unknown[]): Promise<{ rows: { count: number }[] }> };
      }
    ).pool;
    // A's own stream ends on its terminal event, which its outbox may still be writing to the shared events: the trim
    // comes once all of them are there, or an event written after it would stand in the trimmed range.
    await until(async () => {
      const stored = await pool.query('SELECT count(*)::int AS count FROM run_events WHERE run_id = $1', [runId]);
      return stored.rows[0]?.count === all.length;
    });
    await pool.query('DELETE FROM run_events WHERE run_id = $1 AND seq <= 2', [runId]);

    const replay = eventsOf(
      await readFrames(await b.raw(`/v1/runs/${runId}/events`, { headers: { 'Last-Event-ID': '0' } })),
    );
    expect(replay[0]).toMatchObject({
      event: 'replay.truncated',
      run_id: runId,
      oldest_retained_seq: 3,
      requested_seq: 0,
    });
    expect(replay[0]).not.toHaveProperty('seq');
    expect(replay.slice(1)).toEqual(all.slice(3));
    // Without a replay request the stream starts at the oldest retained event, with no truncation frame.
    const fresh = eventsOf(await readFrames(await b.raw(`/v1/runs/${runId}/events`)));
    expect(fresh).toEqual(all.slice(3));
  }, 30_000);
});
