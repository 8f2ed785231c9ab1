import { startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { GatewayTicketStore } from '../src/index.js';
import { GATEWAY_SUBPROTOCOL, GATEWAY_TICKET_PROTOCOL_PREFIX, PARSE_ERROR_FRAME } from '../src/wire/index.js';
import {
  type ChildGateway,
  createWebSocketFixture,
  sleep,
  spawnGateway,
  type WebSocketFixture,
} from './support/client.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function child(script: Parameters<typeof startScriptedOpenAIServer>[0]['script'] = []): Promise<ChildGateway> {
  const server = await startScriptedOpenAIServer({ script, apiKey: 'test-key' });
  cleanups.push(() => server.close());
  const gateway = spawnGateway(server.baseURL);
  cleanups.push(() => gateway.dispose());
  await gateway.client.waitFor((frame) => frame.params?.type === 'gateway.ready', 20_000);
  return gateway;
}

async function ws(
  options: Parameters<typeof createWebSocketFixture>[0] = {},
  endpoint: Parameters<typeof createWebSocketFixture>[1] = {},
): Promise<WebSocketFixture> {
  const fixture = await createWebSocketFixture(options, endpoint);
  cleanups.push(() => fixture.dispose());
  return fixture;
}

describe('transport and framing (§12 checks 1–7, real child process and real WebSocket)', () => {
  it('1. stdio NDJSON: three replies in order, nothing for the blank line, parse error answered exactly', async () => {
    const gateway = await child();
    gateway.child.stdin.write(
      '{"jsonrpc":"2.0","id":"a","method":"ping"}\n\n{not json\n{"jsonrpc":"2.0","id":"b","method":"ping"}\n',
    );
    await gateway.client.waitFor((frame) => frame.id === 'b');
    await gateway.client.result('ping');
    expect(gateway.lines.slice(1, 4)).toEqual([
      '{"jsonrpc":"2.0","id":"a","result":{"pong":true}}',
      PARSE_ERROR_FRAME,
      '{"jsonrpc":"2.0","id":"b","result":{"pong":true}}',
    ]);
  });

  it('2. stdio first frame is gateway.ready with heartbeat false and a 16-hex epoch', async () => {
    const gateway = await child();
    const first = JSON.parse(gateway.lines[0] ?? '{}');
    expect(first.method).toBe('event');
    expect(first.params.type).toBe('gateway.ready');
    expect(first.params.session_id).toBe('');
    expect('seq' in first.params).toBe(false);
    expect(first.params.payload.skin).toEqual({});
    expect(first.params.payload.change_events).toBe(false);
    expect(first.params.payload.replay_epoch).toMatch(/^[0-9a-f]{16}$/);
    expect(first.params.payload.heartbeat).toBe(false);
  });

  it('every stdout line of a spawned hermes gateway is a JSON-RPC frame', async () => {
    const gateway = await child([step(text('Hi there, this is the reply.'))]);
    const created = await gateway.client.result('session.create', {});
    await gateway.client.result('prompt.submit', { session_id: created.session_id, text: 'hi' });
    await gateway.client.event('message.complete', created.session_id, () => true, 20_000);
    gateway.child.stdin.write('garbage\n[1]\n{"id":{"x":1},"method":"ping"}\n');
    await gateway.client.result('session.list', {});
    gateway.child.stdin.end();
    expect(await gateway.exit).toBe(0);
    expect(gateway.lines.length).toBeGreaterThan(5);
    for (const line of gateway.lines) {
      const frame = JSON.parse(line);
      expect(frame.jsonrpc).toBe('2.0');
      expect('method' in frame || 'result' in frame || 'error' in frame).toBe(true);
    }
  });

  it('3. WebSocket first frame, shared epoch, and gateway.ping answered while a tool blocks', async () => {
    const fixture = await ws({
      script: [step(toolCall('terminal', { command: 'sleep 10' }, 'call_block')), step(text('done'))],
    });
    const first = await fixture.open();
    const second = await fixture.open();
    const ready = first.frames[0]?.params;
    expect(ready.type).toBe('gateway.ready');
    expect(ready.payload.heartbeat).toBe(true);
    expect(second.frames[0]?.params.payload.replay_epoch).toBe(ready.payload.replay_epoch);
    const created = await first.result('session.create', {});
    await first.result('prompt.submit', { session_id: created.session_id, text: 'block' });
    await first.event('tool.start', created.session_id);
    first.send({ jsonrpc: '2.0', id: 'heartbeat-1', method: 'gateway.ping', params: {} });
    const pong = await first.waitFor((frame) => frame.id === 'heartbeat-1', 1000);
    expect(pong).toEqual({ jsonrpc: '2.0', id: 'heartbeat-1', result: { pong: true } });
    expect(first.events('tool.complete')).toHaveLength(0);
    await first.result('session.interrupt', { session_id: created.session_id });
  });

  it('4. WebSocket token: missing, wrong of the same length, wrong of another length → 4401, no frames', async () => {
    const fixture = await ws();
    const wrongSame = fixture.token.replace(/.$/, (last) => (last === 'A' ? 'B' : 'A'));
    for (const token of [null, wrongSame, 'short']) {
      const client = await fixture.ws({}, token);
      expect(await client.closeCode).toBe(4401);
      expect(client.frames).toHaveLength(0);
    }
  });

  it('5. WebSocket boundary: bad Host or Origin → 4403; allowed Origin or none → gateway.ready', async () => {
    const fixture = await ws();
    const evilHost = await fixture.ws({ headers: { Host: 'evil.example' } });
    expect(await evilHost.closeCode).toBe(4403);
    expect(evilHost.frames).toHaveLength(0);
    const evilOrigin = await fixture.ws({ headers: { Origin: 'http://evil.example' } });
    expect(await evilOrigin.closeCode).toBe(4403);
    expect(evilOrigin.frames).toHaveLength(0);
    const goodOrigin = await fixture.ws({ headers: { Origin: `http://localhost:${fixture.port}` } });
    expect((await goodOrigin.waitFor((frame) => frame.method === 'event')).params.type).toBe('gateway.ready');
    const noOrigin = await fixture.ws();
    expect((await noOrigin.waitFor((frame) => frame.method === 'event')).params.type).toBe('gateway.ready');
  });

  it("WebSocket boundary: allowedHosts admits a proxy's public name in Host and Origin, and nothing more", async () => {
    const fixture = await ws({}, { allowedHosts: ['Hermes.Example.com'] });
    const publicHost = await fixture.ws({ headers: { Host: 'hermes.example.com' } });
    expect((await publicHost.waitFor((frame) => frame.method === 'event')).params.type).toBe('gateway.ready');
    const publicOrigin = await fixture.ws({ headers: { Origin: 'https://hermes.example.com' } });
    expect((await publicOrigin.waitFor((frame) => frame.method === 'event')).params.type).toBe('gateway.ready');
    const other = await fixture.ws({ headers: { Host: 'evil.example' } });
    expect(await other.closeCode).toBe(4403);
  });

  it('WebSocket token: one in an Authorization header is checked as the query parameter is', async () => {
    const fixture = await ws();
    const good = await fixture.ws({ headers: { Authorization: `Bearer ${fixture.token}` } }, null);
    expect((await good.waitFor((frame) => frame.method === 'event')).params.type).toBe('gateway.ready');
    const wrong = await fixture.ws({ headers: { Authorization: 'Bearer not-the-token' } }, null);
    expect(await wrong.closeCode).toBe(4401);
    expect(wrong.frames).toHaveLength(0);
  });

  it('WebSocket ticket: admitted once from Sec-WebSocket-Protocol; reused, unknown, expired or bare → 4401', async () => {
    const tickets = new GatewayTicketStore();
    const fixture = await ws({}, { tickets });
    const offer = (ticket: string, protocols = [GATEWAY_SUBPROTOCOL, `${GATEWAY_TICKET_PROTOCOL_PREFIX}${ticket}`]) =>
      new Promise<{ code: number; protocol: string; frames: string[] }>((resolveOffer) => {
        const socket = new WebSocket(fixture.url(null), protocols);
        const frames: string[] = [];
        socket.on('message', (data) => {
          frames.push(String(data));
          socket.close(1000);
        });
        socket.on('close', (code) => resolveOffer({ code, protocol: socket.protocol, frames }));
        socket.on('error', () => {});
      });
    const { ticket } = tickets.mint();
    const first = await offer(ticket);
    expect(first.protocol).toBe(GATEWAY_SUBPROTOCOL);
    expect(JSON.parse(first.frames[0] as string).params.type).toBe('gateway.ready');
    // Single use: the same ticket again is refused, as are a made-up one and one offered without the protocol name.
    expect(await offer(ticket)).toMatchObject({ code: 4401, frames: [] });
    expect(await offer('made-up-ticket')).toMatchObject({ code: 4401, frames: [] });
    expect(await offer(tickets.mint().ticket, [`${GATEWAY_TICKET_PROTOCOL_PREFIX}x`])).toMatchObject({ code: 4401 });
    const expiring = new GatewayTicketStore({ lifetimeMs: 1 });
    const short = await ws({}, { tickets: expiring });
    const stale = expiring.mint().ticket;
    await sleep(20);
    const socket = new WebSocket(short.url(null), [GATEWAY_SUBPROTOCOL, `${GATEWAY_TICKET_PROTOCOL_PREFIX}${stale}`]);
    socket.on('error', () => {});
    expect(await new Promise((resolveCode) => socket.on('close', resolveCode))).toBe(4401);
    // An endpoint without a ticket store admits no ticket at all.
    const plain = await ws();
    const bare = new WebSocket(plain.url(null), [GATEWAY_SUBPROTOCOL, `${GATEWAY_TICKET_PROTOCOL_PREFIX}${ticket}`]);
    bare.on('error', () => {});
    expect(await new Promise((resolveCode) => bare.on('close', resolveCode))).toBe(4401);
  });

  it('6. WebSocket message forms: binary with trailing spaces answered, empty text ignored', async () => {
    const fixture = await ws();
    const client = await fixture.open();
    client.socket.send(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}   '), { binary: true });
    client.socket.send('');
    client.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
    await client.waitFor((frame) => frame.id === 2);
    expect(client.frames.slice(1)).toEqual([
      { jsonrpc: '2.0', id: 1, result: { pong: true } },
      { jsonrpc: '2.0', id: 2, result: { pong: true } },
    ]);
  });

  it('7. back-pressure: a stalled stdout reader loses at most deltas, in order, and the final text is whole', async () => {
    const chunks = Array.from({ length: 2000 }, (_, index) => `w${String(index).padStart(4, '0')} `);
    const reply = chunks.join('');
    const gateway = await child([step(text(reply, 6))]);
    const created = await gateway.client.result('session.create', {});
    gateway.child.stdout.pause();
    gateway.client.send({
      jsonrpc: '2.0',
      id: 'go',
      method: 'prompt.submit',
      params: { session_id: created.session_id, text: 'stream' },
    });
    await sleep(2000);
    gateway.child.stdout.resume();
    const complete = await gateway.client.event('message.complete', created.session_id, () => true, 30_000);
    const deltas = gateway.client.events('message.delta', created.session_id);
    expect(deltas.length).toBeLessThanOrEqual(2000);
    const seqs = deltas.map((delta) => delta.seq);
    expect([...seqs].sort((left, right) => left - right)).toEqual(seqs);
    expect(complete.payload.text).toBe(reply);
  });
});

describe('hermes gateway --ws', () => {
  it('prints one listening line with the token on stderr and serves gateway.ready with heartbeat true', async () => {
    const server = await startScriptedOpenAIServer({ script: [], apiKey: 'test-key' });
    cleanups.push(() => server.close());
    const token = 'fixed-test-token-0123456789abcdef';
    const gateway = spawnGateway(server.baseURL, ['--ws', '--port', '0'], { HERMES_GATEWAY_TOKEN: token });
    cleanups.push(() => gateway.dispose());
    let line: RegExpMatchArray | null = null;
    for (let attempt = 0; attempt < 200 && !line; attempt += 1) {
      await sleep(50);
      line = gateway.stderr().match(/gateway listening ws:\/\/127\.0\.0\.1:(\d+)\/api\/ws\?token=(\S+)\n/);
    }
    expect(line?.[2]).toBe(token);
    expect(gateway.stderr().split(token).length - 1).toBe(1);
    expect(gateway.lines).toEqual([]);
    const { connectWebSocket } = await import('./support/client.js');
    const client = await connectWebSocket(`ws://127.0.0.1:${line?.[1]}/api/ws?token=${token}`);
    const ready = await client.waitFor((frame) => frame.method === 'event');
    expect(ready.params.payload.heartbeat).toBe(true);
    expect((await client.call('ping')).result).toEqual({ pong: true });
    client.socket.close();
    gateway.child.kill('SIGTERM');
    expect(await gateway.exit).toBe(0);
  });
});
