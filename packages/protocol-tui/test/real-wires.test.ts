import { delay, startScriptedOpenAIServer, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createWebSocketFixture,
  sleep,
  spawnGateway,
  type TestClient,
  type WebSocketFixture,
} from './support/client.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const replies = ['reply one', 'reply two', 'reply three', 'again', 'more', 'last'].map((reply) => step(text(reply)));

/** Builds durable session D on any wire and runs the rewind checks 31, 34, 35 and 38 against it. */
async function rewindChecks(client: TestClient) {
  const created = await client.result('session.create', {});
  const sid = created.session_id;
  for (const [index, prompt] of ['one', 'two', 'three'].entries()) {
    await client.result('prompt.submit', { session_id: sid, text: prompt });
    await client.nthEvent('message.complete', index + 1, sid, 20_000);
  }
  const history = await client.result('session.history', { session_id: sid });
  const u = history.messages
    .filter((message: { role: string }) => message.role === 'user')
    .map((message: { row_id: number }) => message.row_id);
  const consent = await client.call('prompt.submit', { session_id: sid, text: 'x', truncate_before_row_id: u[1] });
  expect(consent.error.code).toBe(4029);
  expect(await client.result('session.history', { session_id: sid })).toEqual(history);
  expect(
    (
      await client.call('prompt.submit', {
        session_id: sid,
        text: 'x',
        truncate_before_row_id: u[0],
        confirm_truncate: true,
      })
    ).error.code,
  ).toBe(4028);
  const stale = await client.call('prompt.submit', {
    session_id: sid,
    text: 'x',
    truncate_before_row_id: 999999,
    confirm_truncate: true,
  });
  expect(stale.error.data).toEqual({ user_turn_count: 3, ordinal: null, segment_ordinal: null, prefix_user_count: 0 });
  const cut = await client.result('prompt.submit', {
    session_id: sid,
    text: 'again',
    truncate_before_row_id: u[2],
    confirm_truncate: true,
  });
  expect(cut.status).toBe('streaming');
  expect(cut.survivor_user_row_ids).toHaveLength(2);
  expect(cut.survivor_user_row_ids[0]).not.toBe(u[0]);
  await client.nthEvent('message.complete', 4, sid, 20_000);
  expect(
    (
      await client.call('prompt.submit', {
        session_id: sid,
        text: 'x',
        truncate_before_row_id: u[1],
        confirm_truncate: true,
      })
    ).error.code,
  ).toBe(4018);
  const again = await client.result('prompt.submit', {
    session_id: sid,
    text: 'more',
    truncate_before_row_id: cut.survivor_user_row_ids[1],
    confirm_truncate: true,
  });
  expect(again.status).toBe('streaming');
  await client.nthEvent('message.complete', 5, sid, 20_000);
  const after = await client.result('session.history', { session_id: sid });
  expect(after.messages.map((message: { text: string }) => message.text)).toEqual(['one', 'reply one', 'more', 'more']);
}

describe('rewind and attach over a spawned hermes gateway', () => {
  async function child(script = replies) {
    const server = await startScriptedOpenAIServer({ script, apiKey: 'test-key' });
    cleanups.push(() => server.close());
    const gateway = spawnGateway(server.baseURL);
    cleanups.push(() => gateway.dispose());
    await gateway.client.waitFor((frame) => frame.params?.type === 'gateway.ready', 20_000);
    return gateway;
  }

  it('31/34/35/38 over stdio: consent, empty cut, stale id, survivor ids', async () => {
    const gateway = await child();
    await rewindChecks(gateway.client);
  });

  it('18 over stdio: resume of a live session attaches to the same runtime and snapshot', async () => {
    const gateway = await child([step(text('slow '), delay(300), text('reply'), delay(300), text(' end'))]);
    const client = gateway.client;
    const created = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: created.session_id, text: 'hi' });
    await client.event('message.delta', created.session_id);
    const resumed = await client.result('session.resume', { session_id: created.stored_session_id });
    expect(resumed.session_id).toBe(created.session_id);
    expect(resumed.running).toBe(true);
    expect(resumed.inflight.user).toBe('hi');
    const activated = await client.result('session.activate', { session_id: created.session_id });
    expect(activated.session_id).toBe(created.session_id);
    const complete = await client.event('message.complete', created.session_id, () => true, 20_000);
    expect(complete.payload.text).toBe('slow reply end');
  });
});

describe('rewind and attach over a real WebSocket', () => {
  async function web(options: Parameters<typeof createWebSocketFixture>[0] = {}): Promise<WebSocketFixture> {
    const fixture = await createWebSocketFixture(options);
    cleanups.push(() => fixture.dispose());
    return fixture;
  }

  it('31/34/35/38 over WebSocket: consent, empty cut, stale id, survivor ids', async () => {
    const fixture = await web({ script: replies });
    await rewindChecks(await fixture.open());
  });

  it('two clients of one session receive every event in the same order; one leaving does not stop the turn; an orphan is reclaimed', async () => {
    const pieces = [];
    for (let index = 0; index < 20; index += 1) pieces.push(text(`p${index} `), delay(50));
    const fixture = await web({ script: [step(...pieces)], gateway: { reapGraceMs: 300 } });
    const first = await fixture.open();
    const second = await fixture.open();
    const watcher = await fixture.open();
    const created = await first.result('session.create', {});
    const sid = created.session_id;
    await second.result('session.activate', { session_id: sid });
    await first.result('prompt.submit', { session_id: sid, text: 'go' });
    await second.nthEvent('message.delta', 5, sid);
    const shared = second.events(undefined, sid).map((event) => event.seq);
    expect(
      first
        .events(undefined, sid)
        .filter((event) => event.seq >= (shared[0] ?? 0))
        .map((event) => event.seq)
        .slice(0, shared.length),
    ).toEqual(shared);
    first.socket.close();
    await first.closeCode;
    const complete = await second.event('message.complete', sid, () => true, 20_000);
    expect(complete.payload.status).toBe('complete');
    const seqs = second.events(undefined, sid).map((event) => event.seq);
    expect(seqs).toEqual([...seqs].sort((left, right) => left - right));
    expect(new Set(seqs).size).toBe(seqs.length);
    second.socket.close();
    await second.closeCode;
    const reclaimed = await watcher.event('session.reclaimed', '', () => true, 10_000);
    expect(reclaimed.payload).toEqual({
      session_id: sid,
      stored_session_id: created.stored_session_id,
      reason: 'ws_orphan_reap',
    });
    await sleep(10);
  });
});
