// biome-ignore-all lint/suspicious/noExplicitAny: assertions dig into untyped JSON payloads of the wire.
import { delay, step, text, toolCall } from '@hermes/core/testing';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { RunStatusObjectSchema } from '../src/wire/index.js';
import { dataOf, type Rig, readFrames, startRig, until } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

type RunEvent = Record<string, any> & { event: string; seq?: number };

async function createRun(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return (await rig!.native.post('/v1/runs', { body, headers })) as { run_id: string; session_id: string };
}

async function events(runId: string, headers: Record<string, string> = {}, query = '') {
  const response = await rig!.raw(`/v1/runs/${runId}/events${query}`, { headers });
  return { response, frames: await readFrames(response) };
}

function eventFrames(frames: string[]): RunEvent[] {
  return frames.filter((frame) => frame.includes('data: ')).map((frame) => dataOf(frame) as RunEvent);
}

const danger = () => step(toolCall('terminal', { command: 'rm -rf ./conformance-scratch' }));

describe('runs', () => {
  it('32. run lifecycle', async () => {
    rig = await startRig({ script: [step(text('Done.'))] });
    const { data, response } = await rig.native.post('/v1/runs', { body: { input: 'hi' } }).withResponse();
    const created = data as Record<string, string>;
    expect(response.status).toBe(202);
    expect(response.headers.get('location')).toBe(`/v1/runs/${created.run_id}`);
    expect(created).toMatchObject({ object: 'hermes.run', status: 'started', replayed: false });
    expect(created.run_id).toMatch(/^run_[0-9a-f]{24}$/);
    expect(created.session_id).toBe(created.run_id);
    const raw = await rig.raw(`/v1/runs/${created.run_id}/events`);
    const body = await raw.text();
    expect(body.startsWith(': open\n\n')).toBe(true);
    expect(body.endsWith(': stream closed\n\n')).toBe(true);
    const frames = body.split('\n\n').filter((frame) => frame.startsWith('id: '));
    const parsed = frames.map((frame) => {
      const [idLine, dataLine, ...rest] = frame.split('\n');
      expect(rest).toEqual([]);
      expect(dataLine?.startsWith('data: ')).toBe(true);
      const payload = JSON.parse(dataLine?.slice(6) ?? '') as RunEvent;
      expect(idLine).toBe(`id: ${payload.seq}`);
      return payload;
    });
    expect(body.split('\n').some((line) => line.startsWith('event:'))).toBe(false);
    expect(parsed.map((event) => event.seq)).toEqual(parsed.map((_, index) => index));
    const names = parsed.map((event) => event.event);
    expect(names.indexOf('message.delta')).toBeGreaterThanOrEqual(0);
    expect(names.at(-1)).toBe('run.completed');
    expect(parsed.at(-1)).toMatchObject({ output: 'Done.', completed: true });
    expect(parsed.at(-1)?.usage).toBeTruthy();
    const status = (await rig.native.get(`/v1/runs/${created.run_id}`)) as Record<string, any>;
    expect(RunStatusObjectSchema.safeParse(status).success).toBe(true);
    expect(status).toMatchObject({
      status: 'completed',
      completed: true,
      partial: false,
      interrupted: false,
      output: 'Done.',
      last_event: 'run.completed',
    });
    expect(Number.isInteger(status.usage.total_tokens)).toBe(true);
    const missing = await rig.native.get('/v1/runs/run_000000000000000000000000').catch((caught: unknown) => caught);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('run_not_found');
  });

  it('33. run idempotency', async () => {
    rig = await startRig({
      script: [step(toolCall('test_sleep', { seconds: 1 })), step(text('ok'))],
      settings: { maxConcurrentRuns: 1 },
    });
    const first = await createRun({ input: 'hi', instructions: 'x' }, { 'Idempotency-Key': 'conf-k1' });
    await until(() => rig?.host.model.calls.length === 1);
    const replay = await rig.native
      .post('/v1/runs', { body: { instructions: 'x', input: 'hi' }, headers: { 'Idempotency-Key': 'conf-k1' } })
      .withResponse();
    expect(replay.response.status).toBe(202);
    expect(replay.response.headers.get('idempotency-replayed')).toBe('true');
    expect(replay.data).toMatchObject({ replayed: true, run_id: first.run_id });
    expect(rig.host.model.calls).toHaveLength(1);
    const before = rig.requests.length;
    const conflict = await rig.native
      .post('/v1/runs', { body: { input: 'other' }, headers: { 'Idempotency-Key': 'conf-k1' } })
      .catch((caught: unknown) => caught);
    expect(conflict).toBeInstanceOf(OpenAI.ConflictError);
    expect((conflict as InstanceType<typeof OpenAI.ConflictError>).code).toBe('idempotency_key_conflict');
    expect((conflict as InstanceType<typeof OpenAI.ConflictError>).headers?.get('x-should-retry')).toBe('false');
    expect(rig.requests.length - before).toBe(1);
    const bad = await rig.raw('/v1/runs', {
      method: 'POST',
      body: JSON.stringify({ input: 'hi' }),
      headers: { 'Idempotency-Key': 'bad key' },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_idempotency_key');
    await events(first.run_id);
  });

  it('34. event replay (raw)', async () => {
    rig = await startRig({ script: [step(text('one two three four five six', 3))] });
    const run = await createRun({ input: 'hi' });
    const all = eventFrames((await events(run.run_id)).frames);
    expect(all.length).toBeGreaterThanOrEqual(5);
    const resumed = (await events(run.run_id, { 'Last-Event-ID': '2' })).frames;
    expect(resumed[0]).toBe(': open');
    expect(resumed[1]?.startsWith('id: 3\n')).toBe(true);
    const byQuery = (await events(run.run_id, {}, '?last_seq=2')).frames;
    expect(byQuery[1]?.startsWith('id: 3\n')).toBe(true);
    const bad = await rig.raw(`/v1/runs/${run.run_id}/events`, { headers: { 'Last-Event-ID': 'x' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_last_event_id');

    await rig.close();
    rig = await startRig({ script: [step(text('x'.repeat(1_200), 1))] });
    const long = await createRun({ input: 'hi' });
    // Wait on the status rather than a live stream: a live reader that falls 256 events behind is dropped by design.
    await until(
      async () => ((await rig!.native.get(`/v1/runs/${long.run_id}`)) as { status: string }).status === 'completed',
    );
    const truncated = (await events(long.run_id, { 'Last-Event-ID': '0' })).frames;
    const first = truncated[1] ?? '';
    expect(first.startsWith('data: ')).toBe(true);
    const replayed = eventFrames(truncated.slice(2));
    const lastSeq = replayed.at(-1)?.seq ?? 0;
    expect(replayed.at(-1)?.event).toBe('run.completed');
    expect(lastSeq).toBeGreaterThanOrEqual(1_200);
    const K = lastSeq - 999;
    expect(dataOf(first)).toMatchObject({ event: 'replay.truncated', oldest_retained_seq: K, requested_seq: 0 });
    expect(truncated[2]?.startsWith(`id: ${K}\n`)).toBe(true);
    expect(replayed.map((event) => event.seq)).toEqual(Array.from({ length: 1_000 }, (_, index) => K + index));
  });

  it('35. dropping a subscriber does not stop the run; Last-Event-ID resumes it', async () => {
    rig = await startRig({
      script: [step(text('before '), toolCall('test_sleep', { seconds: 1 })), step(text('after'))],
    });
    const run = await createRun({ input: 'hi' });
    const controller = new AbortController();
    const response = await rig.raw(`/v1/runs/${run.run_id}/events`, { signal: controller.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    while (!buffer.includes('\nid: ') && !/(^|\n\n)id: /.test(buffer)) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
    }
    const received = buffer
      .split('\n\n')
      .filter((frame) => frame.startsWith('id: ') && frame.includes('\ndata: '))
      .map((frame) => dataOf(frame) as RunEvent);
    expect(received.length).toBeGreaterThan(0);
    controller.abort();
    await until(
      async () => ((await rig!.native.get(`/v1/runs/${run.run_id}`)) as { status: string }).status === 'completed',
    );
    const lastId = received.at(-1)?.seq as number;
    const rest = eventFrames((await events(run.run_id, { 'Last-Event-ID': String(lastId) })).frames);
    expect(rest[0]?.seq).toBe(lastId + 1);
    expect(rest.at(-1)?.event).toBe('run.completed');
    const full = eventFrames((await events(run.run_id)).frames);
    expect([...received, ...rest].map((event) => event.seq)).toEqual(full.map((event) => event.seq));
  });

  it('36. steer and stop', async () => {
    rig = await startRig({
      script: [
        step(toolCall('test_sleep', { seconds: 1 })),
        step(text('steered')),
        step(toolCall('test_sleep', { seconds: 30 })),
      ],
    });
    const one = await createRun({ input: 'work' });
    await until(
      async () =>
        ((await rig!.native.get(`/v1/runs/${one.run_id}`)) as { status: string }).status === 'running' &&
        rig?.host.model.calls.length === 1,
    );
    const steer = await rig.native.post(`/v1/runs/${one.run_id}/steer`, { body: { input: 'also check tests' } });
    expect(steer).toMatchObject({ object: 'hermes.run.steer', accepted: true });
    const first = eventFrames((await events(one.run_id)).frames);
    expect(first.some((event) => event.event === 'run.steered')).toBe(true);
    expect(JSON.stringify(rig.host.model.calls[1]?.messages)).toContain('also check tests');

    const two = await createRun({ input: 'sleep' });
    await until(() => rig?.host.model.calls.length === 3);
    const stop = await rig.native.post(`/v1/runs/${two.run_id}/stop`);
    expect(stop).toMatchObject({ status: 'stopping' });
    const second = eventFrames((await events(two.run_id)).frames);
    expect(second.at(-1)).toMatchObject({
      event: 'run.cancelled',
      completed: false,
      interrupted: true,
      turn_exit_reason: 'interrupted_by_user',
    });
    expect(((await rig.native.get(`/v1/runs/${two.run_id}`)) as { status: string }).status).toBe('cancelled');
    const before = rig.requests.length;
    const late = await rig.native
      .post(`/v1/runs/${two.run_id}/steer`, { body: { input: 'x' } })
      .catch((caught: unknown) => caught);
    expect(late).toBeInstanceOf(OpenAI.ConflictError);
    expect((late as InstanceType<typeof OpenAI.ConflictError>).code).toBe('run_not_accepting_steer');
    expect(rig.requests.length - before).toBe(1);
    const again = (await rig.native.post(`/v1/runs/${two.run_id}/stop`)) as { status: string };
    expect(again.status).toBe('cancelled');
  });

  it('37. pending_steer', async () => {
    rig = await startRig({
      script: [
        step(text('a'), delay(300), text('b'), delay(300), text('c'), delay(300), text('d'), delay(300), text('e')),
      ],
    });
    const run = await createRun({ input: 'write' });
    await until(async () => {
      const current = (await rig!.native.get(`/v1/runs/${run.run_id}`)) as { last_event: string | null };
      return current.last_event === 'message.delta';
    });
    const steer = await rig.native.post(`/v1/runs/${run.run_id}/steer`, { body: { input: 'and add tests' } });
    expect(steer).toMatchObject({ accepted: true });
    const all = eventFrames((await events(run.run_id)).frames);
    expect(all.at(-1)).toMatchObject({ event: 'run.completed', pending_steer: 'and add tests' });
    const status = (await rig.native.get(`/v1/runs/${run.run_id}`)) as Record<string, unknown>;
    expect(status.pending_steer).toBe('and add tests');
  });

  it('38. approval flow on a run', async () => {
    rig = await startRig({ script: [danger(), step(toolCall('test_sleep', { seconds: 1 })), step(text('finished'))] });
    const run = await createRun({ input: 'clean' });
    const status = await until(async () => {
      const current = (await rig!.native.get(`/v1/runs/${run.run_id}`)) as Record<string, any>;
      return current.status === 'waiting_for_approval' ? current : null;
    });
    const requestId = status.approval.request_id as string;
    expect(requestId).toMatch(/^apr_/);
    const backlog = await rig.raw(`/v1/runs/${run.run_id}/events`);
    const reader = (backlog.body as ReadableStream<Uint8Array>).getReader();
    let text_ = '';
    while (!text_.includes('approval.request')) text_ += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const request = text_
      .split('\n\n')
      .filter((frame) => frame.includes('approval.request'))
      .map((frame) => dataOf(frame) as RunEvent)[0];
    expect(request?.request_id).toBe(requestId);
    expect(request?.command).toContain('rm -rf');
    expect(request?.choices).toEqual(expect.arrayContaining(['once', 'deny']));
    const steer = await rig.native
      .post(`/v1/runs/${run.run_id}/steer`, { body: { input: 'x' } })
      .catch((caught: unknown) => caught);
    expect((steer as InstanceType<typeof OpenAI.ConflictError>).code).toBe('run_not_accepting_steer');
    const maybe = await rig.native
      .post(`/v1/runs/${run.run_id}/approval`, { body: { choice: 'maybe' } })
      .catch((caught: unknown) => caught);
    expect((maybe as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('invalid_approval_choice');
    const answer = await rig.native.post(`/v1/runs/${run.run_id}/approval`, {
      body: { choice: 'deny', request_id: requestId },
    });
    expect(answer).toMatchObject({ object: 'hermes.run.approval_response', choice: 'deny', resolved: 1 });
    await until(() => rig?.host.model.calls.length === 2);
    const notPending = await rig.native
      .post(`/v1/runs/${run.run_id}/approval`, { body: { choice: 'deny' } })
      .catch((caught: unknown) => caught);
    expect((notPending as InstanceType<typeof OpenAI.ConflictError>).code).toBe('approval_not_pending');
    const all = eventFrames((await events(run.run_id)).frames);
    expect(all.find((event) => event.event === 'approval.responded')).toMatchObject({
      choice: 'deny',
      source: 'client',
      resolved: 1,
    });
    expect(all.at(-1)?.event).toBe('run.completed');
    const inactive = await rig.native
      .post(`/v1/runs/${run.run_id}/approval`, { body: { choice: 'deny' } })
      .catch((caught: unknown) => caught);
    expect((inactive as InstanceType<typeof OpenAI.ConflictError>).code).toBe('approval_not_active');
  });

  it('39. approval timeout', async () => {
    rig = await startRig({
      script: [danger(), step(text('carried on'))],
      config: { approvals: { mode: 'manual', timeout: 1 } } as never,
    });
    const run = await createRun({ input: 'clean' });
    const all = eventFrames((await events(run.run_id)).frames);
    expect(all.find((event) => event.event === 'approval.responded')).toMatchObject({
      choice: 'deny',
      source: 'timeout',
    });
    expect(['run.completed', 'run.failed']).toContain(all.at(-1)?.event);
  });
});

describe('run placement', () => {
  it('a run continues a stored response, or starts a session seeded with conversation_history', async () => {
    rig = await startRig({ script: [step(text('One.')), step(text('Two.')), step(text('Three.'))] });
    const first = await rig.client.responses.create({ model: 'hermes-agent', input: 'A' }).withResponse();
    const chained = await createRun({ input: 'B', previous_response_id: first.data.id });
    expect(chained.session_id).toBe(first.response.headers.get('x-hermes-session-id'));
    await events(chained.run_id);
    expect(JSON.stringify(rig.host.model.calls[1]?.messages)).toContain('One.');
    const seeded = await createRun({
      input: 'C',
      conversation_history: [
        { role: 'user', content: 'earlier question' },
        { role: 'assistant', content: 'earlier answer' },
      ],
    });
    expect(seeded.session_id).toBe(seeded.run_id);
    await events(seeded.run_id);
    const seen = JSON.stringify(rig.host.model.calls[2]?.messages);
    expect(seen).toContain('earlier question');
    expect(seen).toContain('earlier answer');
    const conflict = await rig.native
      .post('/v1/runs', { body: { input: 'x', session_id: 's', conversation_history: [] } })
      .catch((caught: unknown) => caught);
    expect((conflict as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('session_id');
  });
});
