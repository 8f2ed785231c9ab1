import { delay, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture, type GatewayFixture, promptedChildGateway, sleep } from './support/client.js';
import { stubbornTool } from './support/tools.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(options: Parameters<typeof createFixture>[0] = {}): Promise<GatewayFixture> {
  const created = await createFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

describe('dispatch (§12 checks 8–14)', () => {
  it('8. validation codes for arrays, bad ids, bad methods, bad params and [later] methods', async () => {
    const client = await (await fixture()).connect();
    client.send('[1]');
    client.send({ id: 'x', method: 7 });
    client.send({ id: { k: 1 }, method: 'ping' });
    client.send({ id: 'y', method: 'ping', params: [1] });
    client.send({ id: 'z', method: 'no.such' });
    client.send({ id: 'w', method: 'session.set_hidden', params: {} });
    await client.waitFor((frame) => frame.id === 'w');
    const replies = client.frames.slice(1);
    expect(replies[0]).toMatchObject({ id: null, error: { code: -32600 } });
    expect(replies[1]).toMatchObject({ id: 'x', error: { code: -32600 } });
    expect(replies[2]).toMatchObject({ id: null, error: { code: -32600 } });
    expect(replies[3]).toMatchObject({ id: 'y', error: { code: -32602 } });
    expect(replies[4]).toMatchObject({ id: 'z', error: { code: -32601, message: 'unknown method: no.such' } });
    expect(replies[5]).toMatchObject({
      id: 'w',
      error: { code: -32601, message: 'unknown method: session.set_hidden' },
    });
  });

  it('9. unknown keys answer 4000 with data.unknown_keys before handler codes; then 4006', async () => {
    const client = await (await fixture()).connect();
    const created = await client.result('session.create', {});
    const unknown = await client.call('session.title', { session_id: created.session_id, titel: 'x' });
    expect(unknown.error.code).toBe(4000);
    expect(unknown.error.data).toEqual({ unknown_keys: ['titel'] });
    const resume = await client.call('session.resume', {});
    expect(resume.error).toEqual({ code: 4006, message: 'session_id required' });
  });

  it('a string in params over tui_gateway.max_text_chars answers 4002 before the method runs, at any depth', async () => {
    const client = await (await fixture({ configYaml: 'tui_gateway:\n  max_text_chars: 10\n' })).connect();
    const created = await client.result('session.create', {});
    const prompt = await client.call('prompt.submit', { session_id: created.session_id, text: 'eleven char' });
    expect(prompt.error).toEqual({
      code: 4002,
      message: 'invalid value for text: 11 characters exceed tui_gateway.max_text_chars (10)',
      data: { param: 'text', max_chars: 10 },
    });
    const seeded = await client.call('session.create', {
      messages: [
        { role: 'user', content: 'short' },
        { role: 'assistant', content: 'far too long here' },
      ],
    });
    expect(seeded.error).toMatchObject({ code: 4002, data: { param: 'messages[1].content' } });
    // Ten code points, twenty UTF-16 units: within the cap.
    const steer = await client.call('session.steer', { session_id: created.session_id, text: '😀'.repeat(10) });
    expect(steer.error).toBeUndefined();
  });

  it('10. client notifications get no reply, errors included', async () => {
    const client = await (await fixture()).connect();
    client.send({ jsonrpc: '2.0', method: 'ping' });
    client.send({ jsonrpc: '2.0', method: 'no.such' });
    const pong = await client.call('ping');
    expect(pong.result).toEqual({ pong: true });
    expect(client.frames).toHaveLength(2);
  });

  it('11. a slow method does not block a fast one on the same connection', async () => {
    const gateway = await fixture();
    const store = gateway.host.store;
    const original = store.listSessions.bind(store);
    store.listSessions = async (query) => {
      await sleep(3000);
      return original(query);
    };
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    client.send({ jsonrpc: '2.0', id: 'r1', method: 'session.list', params: {} });
    client.send({ jsonrpc: '2.0', id: 'r2', method: 'session.interrupt', params: { session_id: created.session_id } });
    const r1 = await client.waitFor((frame) => frame.id === 'r1', 10_000);
    const order = client.frames.filter((frame) => frame.id === 'r1' || frame.id === 'r2').map((frame) => frame.id);
    expect(order).toEqual(['r2', 'r1']);
    expect(client.frames.find((frame) => frame.id === 'r2')?.result).toEqual({ status: 'interrupted' });
    expect(Array.isArray(r1.result.sessions)).toBe(true);
  });

  it('12. a stray server-request answer gets no reply', async () => {
    const client = await (await fixture()).connect();
    client.send({ jsonrpc: '2.0', id: 'srq-000000000000', result: {} });
    expect((await client.call('ping')).result).toEqual({ pong: true });
    expect(client.frames).toHaveLength(2);
  });

  it('13. profile: another profile is 4064, the default profile proceeds', async () => {
    const client = await (await fixture()).connect();
    const other = await client.call('session.list', { profile: 'other' });
    expect(other.error).toEqual({ code: 4064, message: 'profile not found: other' });
    const mine = await client.call('session.list', { profile: 'default' });
    expect(mine.result.sessions).toEqual([]);
  });

  it('14. retiring (process): SIGTERM mid-turn interrupts the turn and exits 0', async () => {
    const { gateway, client, sessionId } = await promptedChildGateway(
      [step(text('slow '), delay(5000), text('reply'))],
      cleanups,
      { prompt: 'hi', readyTimeoutMs: 20_000 },
    );
    await client.event('message.delta', sessionId);
    gateway.child.kill('SIGTERM');
    const code = await gateway.exit;
    expect(code).toBe(0);
    const complete = client.events('message.complete', sessionId)[0];
    expect(complete?.payload.status).toBe('interrupted');
  });
});

describe('retiring in process', () => {
  it('14. retiring: after the trigger ping still answers, other requests get 5035, the turn ends interrupted', async () => {
    const gateway = await fixture({
      script: [step(toolCall('stubborn', {}, 'call_s')), step(text('never'))],
      tools: [stubbornTool('stubborn', 1500)],
    });
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: created.session_id, text: 'hi' });
    await client.event('tool.start', created.session_id);
    const shutdown = gateway.gateway.shutdown();
    expect((await client.call('ping')).result).toEqual({ pong: true });
    expect((await client.call('session.list', {})).error).toEqual({
      code: 5035,
      message: 'backend is retiring; reconnect to continue',
    });
    const complete = await client.event('message.complete', created.session_id);
    expect(complete.payload.status).toBe('interrupted');
    await shutdown;
  });
});

describe('fuzz', () => {
  it('10,000 random and malformed frames get only spec error replies; a valid request works afterwards', async () => {
    const gateway = await fixture();
    const client = await gateway.connect();
    let seed = 12345;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)] as T;
    const values = [null, true, 1, -1, 1.5, 'x', '', [], [1], {}, { a: 1 }, 'srq-000000000000'];
    const methods = [
      'ping',
      'session.create',
      'session.delete',
      'no.such',
      'prompt.submit',
      'session.history',
      7,
      null,
      'session.events.since',
    ];
    let expectedReplies = 0;
    for (let index = 0; index < 10_000; index += 1) {
      const kind = Math.floor(random() * 6);
      if (kind === 0) {
        client.send(
          String.fromCharCode(
            ...Array.from({ length: 1 + Math.floor(random() * 20) }, () => 33 + Math.floor(random() * 90)),
          ),
        );
      } else if (kind === 1) {
        client.send(JSON.stringify(pick(values)));
      } else {
        const frame: Record<string, unknown> = { jsonrpc: '2.0', method: pick(methods) };
        if (random() < 0.8) frame.id = random() < 0.5 ? `f${index}` : pick(values);
        if (random() < 0.5)
          frame.params = random() < 0.7 ? { session_id: pick(values), bogus: pick(values) } : pick(values);
        if (frame.method === 'session.create') frame.method = 'session.history';
        client.send(frame);
      }
      expectedReplies += 0;
    }
    void expectedReplies;
    const final = await client.call('ping', undefined, 60_000);
    expect(final.result).toEqual({ pong: true });
    const allowed = new Set([-32700, -32600, -32601, -32602, 4000, 4001, 4006, 4007, 4002]);
    for (const frame of client.frames.slice(1)) {
      if (frame.method === 'event') continue;
      if ('error' in frame) expect(allowed.has(frame.error.code)).toBe(true);
      else expect(frame.result).toBeDefined();
    }
    expect(client.frames.filter((frame) => frame.error?.code === -32000 || frame.error?.code === -32603)).toEqual([]);
  });
});
