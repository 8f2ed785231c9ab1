import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { type AnyGatewayEvent, GatewayClient, type ResyncNotice } from '../src/index.js';
import { Cleanups } from './support/fixtures.js';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const EPOCH = '0123456789abcdef';
const SESSION = 'abcd1234';
const USAGE = { input: 0, output: 0, cache_read: 0, cache_write: 0, reasoning: 0, total: 0, calls: 0, cost_usd: 0 };

function event(type: string, payload: Record<string, unknown>, seq?: number) {
  return JSON.stringify({
    jsonrpc: '2.0',
    method: 'event',
    params: { type, session_id: seq === undefined ? '' : SESSION, payload, ...(seq === undefined ? {} : { seq }) },
  });
}

/**
 * A gateway stand-in on a real loopback WebSocket: `turn` sends the frames of a prompt's turn, `since` is the answer to
 * `session.events.since`, and every method a client calls is recorded in `calls`.
 */
async function standInGateway(turn: (send: (frame: string) => void) => void, since: unknown, calls: string[] = []) {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  cleanups.add(() => new Promise<void>((resolve) => server.close(() => resolve())));
  server.on('connection', (socket: WebSocket) => {
    socket.send(event('gateway.ready', { skin: {}, change_events: false, replay_epoch: EPOCH, heartbeat: false }));
    socket.on('message', (data) => {
      const request = JSON.parse(String(data)) as { id: number | string; method: string; params: unknown };
      calls.push(request.method);
      const reply = (result: unknown) => socket.send(JSON.stringify({ jsonrpc: '2.0', id: request.id, result }));
      if (request.method === 'client.capabilities') reply({ server_requests: true });
      else if (request.method === 'prompt.submit') {
        reply({ status: 'streaming' });
        turn((frame) => socket.send(frame));
      } else if (request.method === 'session.events.since') reply(since);
      else reply({});
    });
  });
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/api/ws`;
}

/**
 * The congestion case of spec §1.4: the deltas of seq 3–699 were dropped on the wire and the replay ring holds only
 * seq 189–700, so `session.events.since` answers `truncated` — while the turn's `message.complete` (seq 701) has
 * already arrived live and waits in the client's buffer.
 */
function congestedGateway() {
  const events = Array.from({ length: 512 }, (_, index) => ({
    type: 'message.delta',
    session_id: SESSION,
    payload: { text: 'r' },
    seq: 189 + index,
  }));
  return standInGateway(
    (send) => {
      send(event('message.start', {}, 1));
      send(event('message.delta', { text: 'a' }, 2));
      // seq 3–699 were dropped while the connection was congested.
      send(event('message.delta', { text: 'z' }, 700));
      send(event('message.complete', { text: 'done', usage: USAGE, status: 'complete' }, 701));
    },
    { events, latest_seq: 701, truncated: true, epoch: EPOCH, open_requests: [] },
  );
}

describe('GatewayClient when the replay ring cannot fill a gap', () => {
  it('reports the resync and still delivers the live events it holds, so the turn completes', async () => {
    const url = await congestedGateway();
    const client = await GatewayClient.connect({ connection: { url, token: 't' }, reconnect: false });
    cleanups.add(() => client.close());
    const notices: ResyncNotice[] = [];
    client.onResync((notice) => notices.push(notice));
    const turn = await client.startTurn({ session_id: SESSION, text: 'go' });
    const seen: AnyGatewayEvent[] = [];
    for await (const received of turn.events) seen.push(received);
    expect((await turn.completed).text).toBe('done');
    expect(notices).toEqual([{ sessionId: SESSION, reason: 'truncated' }]);
    const seqs = seen.map((received) => received.seq ?? 0);
    // Every seq once, in order: 1, 2, then what the ring still had (189–700), then the live 701.
    expect(seqs).toEqual([1, 2, ...Array.from({ length: 512 }, (_, index) => 189 + index), 701]);
  });
});

/**
 * A congested connection whose held deltas were joined (ADR 0059): the deltas of seq 3–699 arrive as one frame with
 * `first_seq: 3`. Nothing is missing, so nothing is replayed.
 */
function joiningGateway(calls: string[]) {
  return standInGateway(
    (send) => {
      send(event('message.start', {}, 1));
      send(event('message.delta', { text: 'a' }, 2));
      const joined = JSON.parse(event('message.delta', { text: 'j'.repeat(697) }, 699)) as {
        params: Record<string, unknown>;
      };
      joined.params.first_seq = 3;
      send(JSON.stringify(joined));
      send(event('message.delta', { text: 'z' }, 700));
      send(event('message.complete', { text: 'done', usage: USAGE, status: 'complete' }, 701));
    },
    // Answered as a ring that lost seq 3–188 would: taking this path would lose the joined frame's text.
    { events: [], latest_seq: 701, truncated: true, epoch: EPOCH, open_requests: [] },
    calls,
  );
}

describe('GatewayClient and a frame of joined deltas', () => {
  it('takes the seqs from first_seq on as delivered by that frame: no replay, no resync, every character', async () => {
    const calls: string[] = [];
    const url = await joiningGateway(calls);
    const client = await GatewayClient.connect({ connection: { url, token: 't' }, reconnect: false });
    cleanups.add(() => client.close());
    const notices: ResyncNotice[] = [];
    client.onResync((notice) => notices.push(notice));
    const turn = await client.startTurn({ session_id: SESSION, text: 'go' });
    const seen: AnyGatewayEvent[] = [];
    for await (const received of turn.events) seen.push(received);
    expect((await turn.completed).text).toBe('done');
    expect(calls).not.toContain('session.events.since');
    expect(notices).toEqual([]);
    expect(seen.map((received) => received.seq)).toEqual([1, 2, 699, 700, 701]);
    const text = seen
      .filter((received) => received.type === 'message.delta')
      .map((received) => (received.payload as { text: string }).text)
      .join('');
    expect(text).toBe(`a${'j'.repeat(697)}z`);
  });
});
