import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { delay, hang, step, text, toolCall } from '@hermes/core/testing';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayClient, RunsApiError, RunsClient } from '../src/index.js';
import { Cleanups, makeHome, startModel, startServerApp, TcpProxy } from './support/fixtures.js';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

async function server(script: Parameters<typeof startModel>[0]) {
  const home = makeHome(cleanups);
  const model = await startModel(script, cleanups);
  const app = await startServerApp(home, model.baseURL, cleanups);
  return { ...app, runs: new RunsClient({ baseURL: app.url, apiKey: app.key }) };
}

describe('RunsClient against the deployable server (apps/server)', () => {
  it('creating twice with one idempotency key returns the same run, replayed the second time', async () => {
    const { runs } = await server([step(text('only once'))]);
    const first = await runs.create({ input: 'hello' }, { idempotencyKey: 'key-1' });
    expect(first).toMatchObject({ object: 'hermes.run', status: 'started', replayed: false });
    expect(first.sessionHeader).toBe(first.session_id);
    const again = await runs.create({ input: 'hello' }, { idempotencyKey: 'key-1' });
    expect(again.run_id).toBe(first.run_id);
    expect(again.replayed).toBe(true);
    const status = await runs.waitForStatus(first.run_id, ['completed'], { intervalMs: 50 });
    expect(status.output).toBe('only once');
  });

  it('streams every event once in seq order, resuming from the last seq after the stream is cut mid-run', async () => {
    const pieces = Array.from({ length: 12 }, (_, index) => [text(`w${index} `), delay(80)]).flat();
    const app = await server([step(...pieces)]);
    const proxy = new TcpProxy(app.port);
    await proxy.start();
    cleanups.add(() => proxy.stop());
    const runs = new RunsClient({ baseURL: `http://127.0.0.1:${proxy.port}`, apiKey: app.key });
    const created = await runs.create({ input: 'stream please' });
    const seqs: number[] = [];
    const names: string[] = [];
    let cut = false;
    for await (const event of runs.events(created.run_id, { reconnectDelayMs: 50 })) {
      if (typeof event.seq === 'number') seqs.push(event.seq);
      names.push(event.event);
      if (!cut && seqs.length === 3) {
        cut = true;
        proxy.cutConnections();
      }
    }
    expect(proxy.accepted).toBeGreaterThanOrEqual(3);
    expect(seqs).toEqual(seqs.map((_, index) => index));
    expect(names.at(-1)).toBe('run.completed');
    expect(names.filter((name) => name === 'message.delta')).toHaveLength(12);
    // A later subscription with lastSeq starts right after it.
    const tail: number[] = [];
    for await (const event of runs.events(created.run_id, { lastSeq: 5 })) tail.push(event.seq as number);
    expect(tail).toEqual(seqs.slice(6));
  });

  it('an approval requested by a run is answered with approve() and the command runs', async () => {
    const target = mkdtempSync(join(tmpdir(), 'hermes-sdk-run-approval-'));
    const { runs } = await server([
      step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')),
      step(text('cleaned')),
    ]);
    const created = await runs.create({ input: 'clean up' });
    const seen: string[] = [];
    for await (const event of runs.events(created.run_id)) {
      seen.push(event.event);
      if (event.event === 'approval.request') {
        const waiting = await runs.get(created.run_id);
        expect(waiting.status).toBe('waiting_for_approval');
        const answer = await runs.approve(created.run_id, { choice: 'once', requestId: String(event.request_id) });
        expect(answer).toMatchObject({ choice: 'once', resolved: 1 });
      }
    }
    expect(seen).toContain('approval.responded');
    expect(seen.at(-1)).toBe('run.completed');
    expect(existsSync(target)).toBe(false);
  });

  it('stop() cancels a running run, and steering a finished run fails with RunsApiError 409', async () => {
    const { runs } = await server([step(text('thinking '), hang())]);
    const created = await runs.create({ input: 'take your time' });
    await runs.waitForStatus(created.run_id, ['running'], { intervalMs: 50 });
    const stopping = await runs.stop(created.run_id);
    expect(stopping.status).toBe('stopping');
    const final = await runs.waitForStatus(created.run_id, undefined, { intervalMs: 50 });
    expect(final.status).toBe('cancelled');
    const error = await runs.steer(created.run_id, 'too late').catch((caught: unknown) => caught);
    expect(RunsApiError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ status: 409, code: 'run_not_accepting_steer' });
    const missing = await runs.get('run_000000000000000000000000').catch((caught: unknown) => caught);
    expect(missing).toMatchObject({ status: 404, code: 'run_not_found' });
  });

  it('steer() is accepted while the run is running and the stream reports run.steered', async () => {
    const { runs } = await server([
      step(text('working '), delay(1500), toolCall('terminal', { command: 'echo steered' }, 'call_echo')),
      step(text('finished')),
    ]);
    const created = await runs.create({ input: 'do the thing' });
    await runs.waitForStatus(created.run_id, ['running'], { intervalMs: 50 });
    const steered = await runs.steer(created.run_id, 'also mention the weather');
    expect(steered).toMatchObject({ object: 'hermes.run.steer', run_id: created.run_id, accepted: true });
    const names: string[] = [];
    for await (const event of runs.events(created.run_id)) names.push(event.event);
    expect(names).toContain('run.steered');
    expect(names.at(-1)).toBe('run.completed');
  });

  it('GatewayClient attaches to the same server over its /api/ws WebSocket with the API key as token', async () => {
    const { url, key } = await server([step(text('over the server socket'))]);
    const client = await GatewayClient.connect({
      connection: { url: `${url.replace('http', 'ws')}/api/ws`, token: key },
    });
    cleanups.add(() => client.close());
    const created = await client.session.create({});
    const turn = await client.startTurn({ session_id: created.session_id, text: 'hi' });
    expect((await turn.completed).text).toBe('over the server socket');
  });

  it('the official openai client talks to the same server for chat completions and Responses', async () => {
    const { url, key } = await server([step(text('Hi from chat.')), step(text('Hi from Responses.'))]);
    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: key });
    const completion = await openai.chat.completions.create({
      model: 'hermes-agent',
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(completion.choices[0]?.message.content).toBe('Hi from chat.');
    const response = await openai.responses.create({ model: 'hermes-agent', input: 'Hello' });
    expect(response.output_text).toBe('Hi from Responses.');
  });
});
