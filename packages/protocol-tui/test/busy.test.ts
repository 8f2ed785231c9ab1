import { delay, hang, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture, sleep, type TestClient } from './support/client.js';
import { noopTool } from './support/tools.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function slow(label: string, parts: number) {
  const pieces = [];
  for (let index = 0; index < parts; index += 1) pieces.push(text(`${label}${index} `), delay(80));
  return step(...pieces);
}

async function running(script: ReturnType<typeof step>[], options: Parameters<typeof createFixture>[0] = {}) {
  const fixture = await createFixture({ script, tools: [noopTool], ...options });
  cleanups.push(() => fixture.dispose());
  const client = await fixture.connect();
  const created = await client.result('session.create', {});
  const sid: string = created.session_id;
  await client.result('prompt.submit', { session_id: sid, text: 'start' });
  await client.event('message.delta', sid);
  return { fixture, client, sid, stored: created.stored_session_id as string };
}

function starts(client: TestClient, sid: string) {
  return client.events('message.start', sid);
}

describe('busy input (§12 checks 43–49)', () => {
  it('43. the default busy mode redirects a streaming reply', async () => {
    const { client, sid } = await running([slow('a', 30), slow('b', 20)]);
    const reply = await client.result('prompt.submit', { session_id: sid, text: 'change course' });
    expect(reply).toEqual({ status: 'redirected' });
    const interim = await client.event('message.interim', sid);
    expect(interim.payload.already_streamed).toBe(true);
    const snapshot = await client.result('session.activate', { session_id: sid });
    expect(snapshot.inflight.corrections).toEqual(['change course']);
    expect(snapshot.inflight.correction_offsets).toHaveLength(1);
    await client.event('message.complete', sid);
    await sleep(300);
    expect(client.events('message.complete', sid)).toHaveLength(1);
  });

  it('44. interrupt without redirect: the input is queued and runs after the interrupted turn', async () => {
    const { fixture, client, sid, stored } = await running([slow('a', 40), step(text('new course'))]);
    const agent = fixture.host.getAgent(stored);
    if (!agent) throw new Error('no agent');
    (agent as { redirect: unknown }).redirect = () => ({ status: 'rejected' });
    const reply = await client.result('prompt.submit', { session_id: sid, text: 'change course' });
    expect(reply).toEqual({ status: 'queued' });
    const first = await client.nthEvent('message.complete', 1, sid);
    expect(first.payload.status).toBe('interrupted');
    const second = await client.nthEvent('message.start', 2, sid);
    expect(second.payload.input.text).toBe('change course');
    const done = await client.nthEvent('message.complete', 2, sid);
    expect(done.payload.status).toBe('complete');
  });

  it('45. queued:true always queues', async () => {
    const { client, sid } = await running([slow('a', 10), step(text('next reply'))]);
    expect(await client.result('prompt.submit', { session_id: sid, text: 'next', queued: true })).toEqual({
      status: 'queued',
    });
    const first = await client.nthEvent('message.complete', 1, sid);
    expect(first.payload.status).toBe('complete');
    const next = await client.nthEvent('message.start', 2, sid);
    expect(next.payload.input.text).toBe('next');
  });

  it('46. steer mode steers a turn that still has a tool call ahead', async () => {
    const fixture = await createFixture({
      script: [step(text('working'), delay(400), toolCall('noop', {}, 'call_1')), step(text('done'))],
      tools: [noopTool],
    });
    cleanups.push(() => fixture.dispose());
    const client = await fixture.connect();
    expect(await client.result('config.set', { key: 'busy', value: 'steer' })).toEqual({ key: 'busy', value: 'steer' });
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    await client.result('prompt.submit', { session_id: sid, text: 'start' });
    await client.event('message.delta', sid);
    expect(await client.result('prompt.submit', { session_id: sid, text: 'also this' })).toEqual({ status: 'steered' });
  });

  it('47. queued inputs of the same visibility merge into one turn', async () => {
    const { client, sid } = await running([slow('a', 10), step(text('merged reply'))], {
      configYaml: 'display:\n  busy_input_mode: queue\n',
    });
    expect(await client.result('prompt.submit', { session_id: sid, text: 'a' })).toEqual({ status: 'queued' });
    expect(await client.result('prompt.submit', { session_id: sid, text: 'b' })).toEqual({ status: 'queued' });
    await client.nthEvent('message.complete', 2, sid);
    await sleep(200);
    const list = starts(client, sid);
    expect(list).toHaveLength(2);
    expect(list[1]?.payload.input.text).toBe('a\n\nb');
  });

  it('48. the 17th queued submission is refused', async () => {
    const { client, sid } = await running([step(text('x'), hang())], {
      configYaml: 'display:\n  busy_input_mode: queue\n',
    });
    for (let index = 0; index < 16; index += 1) {
      expect(await client.result('prompt.submit', { session_id: sid, text: `q${index}` })).toEqual({
        status: 'queued',
      });
    }
    const refused = await client.call('prompt.submit', { session_id: sid, text: 'q16' });
    expect(refused.error).toEqual({
      code: 4009,
      message: 'pending input queue is full — retry after the current turn',
    });
    await client.result('session.interrupt', { session_id: sid });
  });

  it('49. interrupt clears the queue', async () => {
    const { client, sid } = await running([slow('a', 100), step(text('should not run'))], {
      configYaml: 'display:\n  busy_input_mode: queue\n',
    });
    expect(await client.result('prompt.submit', { session_id: sid, text: 'later' })).toEqual({ status: 'queued' });
    expect(await client.result('session.interrupt', { session_id: sid })).toEqual({ status: 'interrupted' });
    const complete = await client.event('message.complete', sid);
    expect(complete.payload.status).toBe('interrupted');
    await sleep(2000);
    expect(starts(client, sid)).toHaveLength(1);
  });
});

describe('busy input for a turn another surface runs (ADR 0037)', () => {
  /** A gateway session whose stored session runs a turn started on its agent directly, as the HTTP API would. */
  async function foreignTurn(script: ReturnType<typeof step>[], configYaml?: string) {
    const fixture = await createFixture({ script, tools: [noopTool], ...(configYaml ? { configYaml } : {}) });
    cleanups.push(() => fixture.dispose());
    const client = await fixture.connect();
    const created = await client.result('session.create', {});
    const sid: string = created.session_id;
    const stored: string = created.stored_session_id;
    // The agent build comes a moment after session.create; a turn on the agent needs none of it.
    const agent = fixture.host.getAgent(stored);
    if (!agent) throw new Error('no agent');
    const run = agent.runTurn({ text: 'from another surface' });
    const events: string[] = [];
    void (async () => {
      for await (const event of run) events.push(event.type);
    })();
    for (let attempt = 0; attempt < 500 && !events.includes('message.delta'); attempt += 1) await sleep(10);
    return { fixture, client, sid, stored, run };
  }

  it('queue mode queues behind it and starts the input once it ends', async () => {
    const { client, sid, run } = await foreignTurn(
      [slow('a', 10), step(text('the gateway turn'))],
      'display:\n  busy_input_mode: queue\n',
    );
    expect(await client.result('prompt.submit', { session_id: sid, text: 'after it' })).toEqual({ status: 'queued' });
    expect((await run.result).outcome).toBe('completed');
    const complete = await client.event(
      'message.complete',
      sid,
      (params) => params.payload.text === 'the gateway turn',
    );
    expect(complete.payload.status).toBe('complete');
    // The other surface's turn is shown on the session too (ADR 0053), then the queued input's own turn.
    expect(starts(client, sid).map((start) => start.payload.input.text)).toEqual(['from another surface', 'after it']);
  });

  it('steer mode steers it, and undo is refused with 4009 while it runs', async () => {
    const { client, sid, run } = await foreignTurn(
      [step(text('working'), delay(400), toolCall('noop', {}, 'call_1')), step(text('done'))],
      'display:\n  busy_input_mode: steer\n',
    );
    expect(await client.result('prompt.submit', { session_id: sid, text: 'also this' })).toEqual({ status: 'steered' });
    const undo = await client.call('session.undo', { session_id: sid });
    expect(undo.error?.code).toBe(4009);
    const result = await run.result;
    expect(result.outcome).toBe('completed');
    // No turn of the gateway's own: the one turn shown is the other surface's, steered (ADR 0053).
    expect(starts(client, sid).map((start) => start.payload.input.text)).toEqual(['from another surface']);
  });

  it('interrupt mode redirects it', async () => {
    const { client, sid, run } = await foreignTurn([slow('a', 30), slow('b', 5)]);
    expect(await client.result('prompt.submit', { session_id: sid, text: 'change course' })).toEqual({
      status: 'redirected',
    });
    const result = await run.result;
    expect(result.outcome).toBe('completed');
  });
});
