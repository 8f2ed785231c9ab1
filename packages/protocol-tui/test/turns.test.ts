import { delay, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture, type GatewayFixture, sleep } from './support/client.js';
import { noopTool } from './support/tools.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(options: Parameters<typeof createFixture>[0] = {}): Promise<GatewayFixture> {
  const created = await createFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

describe('turns and events (§12 checks 25–30)', () => {
  it('25. the submit response precedes message.start; the turn ends with a complete message.complete', async () => {
    const client = await (await fixture({ script: [step(text('Scripted answer.'))] })).connect();
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    client.send({ jsonrpc: '2.0', id: 'go', method: 'prompt.submit', params: { session_id: sid, text: 'hi' } });
    const complete = await client.event('message.complete', sid);
    const responseIndex = client.frames.findIndex((frame) => frame.id === 'go');
    const startIndex = client.frames.findIndex((frame) => frame.params?.type === 'message.start');
    expect(client.frames[responseIndex]?.result).toEqual({ status: 'streaming' });
    expect(responseIndex).toBeLessThan(startIndex);
    expect(client.frames[startIndex]?.params.payload.input).toEqual({ role: 'user', text: 'hi' });
    const turnEvents = client
      .events(undefined, sid)
      .filter((event) => !['session.info', 'session.title'].includes(event.type));
    expect(turnEvents[turnEvents.length - 1]?.type).toBe('message.complete');
    expect(complete.payload.status).toBe('complete');
    expect(complete.payload.text).toBe('Scripted answer.');
    expect(typeof complete.payload.usage).toBe('object');
    expect(Number.isInteger(complete.payload.persisted_turn.user_row_id)).toBe(true);
  });

  it('26. an agent build failure arrives as events, never as an RPC error', async () => {
    const gateway = await fixture({
      gateway: {
        onAgentBuild: () => {
          throw new Error('no credentials');
        },
      },
    });
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    const error = await client.event('error', sid);
    expect(error.payload.message).toMatch(/^agent init failed: /);
    const submit = await client.call('prompt.submit', { session_id: sid, text: 'hi' });
    expect(submit.result).toEqual({ status: 'streaming' });
    const complete = await client.event('message.complete', sid);
    expect(client.events('message.start', sid)).toHaveLength(1);
    expect(complete.payload.status).toBe('error');
    expect(complete.payload.recoverable).toBe(true);
    expect(complete.payload.error_surface.layer).toBe('gateway');
    expect(complete.payload.error_surface.code).toBe('agent_init_failed');
    expect(client.frames.filter((frame) => frame.error)).toEqual([]);
  });

  it('27. sequence numbers without gaps, and replay from a watermark', async () => {
    const client = await (await fixture({ script: [step(text('one two three four five six', 4))] })).connect();
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    await client.event('session.info', sid);
    await client.result('prompt.submit', { session_id: sid, text: 'hi' });
    await client.event('message.complete', sid);
    await sleep(50);
    const live = client.events(undefined, sid);
    const n = live.length;
    expect(live.map((event) => event.seq)).toEqual(Array.from({ length: n }, (_, index) => index + 1));
    const k = Math.floor(n / 2);
    const partial = await client.result('session.events.since', { session_id: sid, last_seen: k });
    expect(partial.events.map((event: { seq: number }) => event.seq)).toEqual(
      Array.from({ length: n - k }, (_, index) => k + 1 + index),
    );
    for (const event of partial.events) {
      expect(Object.keys(event).sort()).toEqual(['payload', 'seq', 'session_id', 'type']);
    }
    expect(partial.latest_seq).toBe(n);
    expect(partial.truncated).toBe(false);
    expect(partial.count).toBe(n - k);
    const ahead = await client.result('session.events.since', { session_id: sid, last_seen: n + 5 });
    expect(ahead.events).toEqual([]);
    expect(ahead.truncated).toBe(true);
    expect((await client.call('session.events.since', { session_id: sid, last_seen: '3' })).error.code).toBe(-32602);
    expect((await client.call('session.events.since', { session_id: sid, last_seen: true })).error.code).toBe(-32602);
  });

  it('28. ring gap: 600 events leave at most 512, truncated from seq 0', async () => {
    const reply = 'x'.repeat(650);
    const client = await (await fixture({ script: [step(text(reply, 1))] })).connect();
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    await client.result('prompt.submit', { session_id: sid, text: 'hi' });
    await client.event('message.complete', sid);
    const replay = await client.result('session.events.since', { session_id: sid, last_seen: 0 });
    expect(replay.latest_seq).toBeGreaterThanOrEqual(600);
    expect(replay.truncated).toBe(true);
    expect(replay.events.length).toBeLessThanOrEqual(512);
    expect(replay.events[0].seq).toBeGreaterThan(1);
    expect(replay.events[replay.events.length - 1].seq).toBe(replay.latest_seq);
  });

  it('29. session.usage events are at least 1 s apart and none follows message.complete', async () => {
    const steps = [];
    for (let index = 0; index < 30; index += 1) steps.push(step(delay(100), toolCall('noop', {}, `call_${index}`)));
    steps.push(step(text('finished')));
    const gateway = await fixture({ script: steps, tools: [noopTool] });
    const client = await gateway.connect();
    const received: number[] = [];
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    const original = client.push.bind(client);
    client.push = (frame) => {
      if (frame.params?.type === 'session.usage') received.push(Date.now());
      original(frame);
    };
    await client.result('prompt.submit', { session_id: sid, text: 'go' });
    await client.event('message.complete', sid);
    await sleep(1200);
    expect(received.length).toBeGreaterThanOrEqual(2);
    for (let index = 1; index < received.length; index += 1) {
      expect((received[index] ?? 0) - (received[index - 1] ?? 0)).toBeGreaterThanOrEqual(900);
    }
    const events = client.events(undefined, sid);
    const completeIndex = events.findIndex((event) => event.type === 'message.complete');
    expect(events.slice(completeIndex + 1).filter((event) => event.type === 'session.usage')).toEqual([]);
  });

  it('30. tool events in order with one tool_id; none with verbose off', async () => {
    const gateway = await fixture({
      script: [
        step(toolCall('noop', {}, 'call_a')),
        step(text('done')),
        step(toolCall('noop', {}, 'call_b')),
        step(text('done again')),
      ],
      tools: [noopTool],
    });
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    await client.result('prompt.submit', { session_id: sid, text: 'first' });
    await client.event('message.complete', sid);
    const toolEvents = client.events(undefined, sid).filter((event) => event.type.startsWith('tool.'));
    expect(toolEvents.map((event) => event.type)).toEqual(['tool.generating', 'tool.start', 'tool.complete']);
    expect(toolEvents[1]?.payload.tool_id).toBe(toolEvents[2]?.payload.tool_id);
    expect(await client.result('config.set', { key: 'verbose', value: 'off' })).toMatchObject({
      key: 'verbose',
      value: 'off',
    });
    const before = client.frames.length;
    await client.result('prompt.submit', { session_id: sid, text: 'second' });
    await client.nthEvent('message.complete', 2, sid);
    expect(
      client.frames.slice(before).filter((frame) => frame.method === 'event' && frame.params.type.startsWith('tool.')),
    ).toEqual([]);
  });
});

describe('automatic titles (§5.2 session.title)', () => {
  it('after the first complete turn of an untitled session, session.title then session.info follow message.complete', async () => {
    const gateway = await fixture({
      script: [step(text('Hello!')), step(text('Friendly Greeting'))],
      config: { session: { auto_title: true } },
    });
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    await client.result('prompt.submit', { session_id: sid, text: 'hi' });
    const title = await client.event('session.title', sid);
    expect(title.payload).toEqual({ session_id: created.stored_session_id, title: 'Friendly Greeting' });
    const events = client.events(undefined, sid);
    const completeIndex = events.findIndex((event) => event.type === 'message.complete');
    const titleIndex = events.findIndex((event) => event.type === 'session.title');
    expect(titleIndex).toBeGreaterThan(completeIndex);
    const info = await client.waitFor((frame) => frame.params?.type === 'session.info' && frame.params.seq > title.seq);
    expect(info.params.payload.title).toBe('Friendly Greeting');
  });
});
