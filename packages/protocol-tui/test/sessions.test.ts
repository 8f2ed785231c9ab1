import { delay, hang, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createFixture,
  createWebSocketFixture,
  type GatewayFixture,
  sleep,
  type WebSocketFixture,
} from './support/client.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(options: Parameters<typeof createFixture>[0] = {}): Promise<GatewayFixture> {
  const created = await createFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

async function ws(options: Parameters<typeof createWebSocketFixture>[0] = {}): Promise<WebSocketFixture> {
  const created = await createWebSocketFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

function slowReply(parts: number): ReturnType<typeof step> {
  const pieces = [];
  for (let index = 0; index < parts; index += 1) pieces.push(text(`part${index} `), delay(100));
  return step(...pieces);
}

describe('sessions (§12 checks 15–24)', () => {
  it('15. lazy rows: create reserves ids, info is lazy, then session.info; the list does not show it', async () => {
    const client = await (await fixture()).connect();
    const created = await client.result('session.create', {});
    expect(created.session_id).toMatch(/^[0-9a-f]{8}$/);
    expect(created.stored_session_id).toMatch(/^[0-9]{8}_[0-9]{6}_[0-9a-f]{6}$/);
    expect(created.messages).toEqual([]);
    expect(created.info.lazy).toBe(true);
    const info = await client.event('session.info', created.session_id);
    expect('lazy' in info.payload).toBe(false);
    const list = await client.result('session.list', {});
    expect(list.sessions.map((entry: { id: string }) => entry.id)).not.toContain(created.stored_session_id);
  });

  it('16. pending title is written with the row, and automatic titling is skipped', async () => {
    const client = await (
      await fixture({
        script: [step(text('hello')), step(text('Generated Title'))],
        config: { session: { auto_title: true } },
      })
    ).connect();
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    const title = await client.result('session.title', { session_id: sid, title: 'T' });
    expect(title).toEqual({ title: 'T', session_key: created.stored_session_id, pending: true });
    await client.event('session.info', sid);
    await client.result('prompt.submit', { session_id: sid, text: 'hi' });
    await client.event('message.complete', sid);
    await sleep(300);
    const list = await client.result('session.list', {});
    expect(list.sessions).toContainEqual(expect.objectContaining({ id: created.stored_session_id, title: 'T' }));
    expect(client.events('session.title')).toEqual([]);
  });

  it('17. close and stale ids: closed:false, closed:true, 4001, and the ring still answers', async () => {
    const client = await (await fixture({ script: [step(text('hello'))] })).connect();
    expect(await client.result('session.close', { session_id: 'deadbeef' })).toEqual({ closed: false });
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    await client.result('prompt.submit', { session_id: sid, text: 'hi' });
    await client.event('message.complete', sid);
    expect(await client.result('session.close', { session_id: sid })).toEqual({ closed: true });
    const history = await client.call('session.history', { session_id: sid });
    expect(history.error).toEqual({ code: 4001, message: 'session not found' });
    const replay = await client.result('session.events.since', { session_id: sid, last_seen: 0 });
    expect(replay.events.length).toBeGreaterThan(0);
    expect(replay.events.map((event: { type: string }) => event.type)).toContain('message.complete');
    expect(replay.epoch).toBe(client.frames[0]?.params.payload.replay_epoch);
    expect(replay.open_requests).toEqual([]);
  });

  it('18. resume reuses a live session: snapshot mid-stream, then both clients get the same frames', async () => {
    const fixtureWs = await ws({ script: [slowReply(15)] });
    const first = await fixtureWs.open();
    const second = await fixtureWs.open();
    const created = await first.result('session.create', {});
    const sid = created.session_id;
    await first.result('prompt.submit', { session_id: sid, text: 'hi' });
    await first.nthEvent('message.delta', 2, sid);
    const resumed = await second.result('session.resume', { session_id: created.stored_session_id });
    expect(resumed.session_id).toBe(sid);
    expect(resumed.running).toBe(true);
    expect(resumed.status).toBe('working');
    expect(resumed.inflight.user).toBe('hi');
    expect(resumed.inflight.streaming).toBe(true);
    expect(resumed.inflight.assistant.length).toBeGreaterThan(0);
    const firstComplete = await first.event('message.complete', sid);
    const secondComplete = await second.event('message.complete', sid);
    expect(firstComplete.payload.text.startsWith(resumed.inflight.assistant)).toBe(true);
    expect(secondComplete).toEqual(firstComplete);
    const lastSeqBefore = Math.max(...second.events(undefined, sid).map((event) => event.seq));
    const firstTail = first
      .events(undefined, sid)
      .filter((event) => event.seq <= lastSeqBefore && event.seq >= second.events(undefined, sid)[0]!.seq);
    expect(second.events(undefined, sid)).toEqual(firstTail);
  });

  it('19. one client leaving does not park a shared session', async () => {
    const fixtureWs = await ws({ script: [slowReply(20)], gateway: { reapGraceMs: 500 } });
    const first = await fixtureWs.open();
    const second = await fixtureWs.open();
    const created = await first.result('session.create', {});
    const sid = created.session_id;
    await first.result('prompt.submit', { session_id: sid, text: 'hi' });
    await first.event('message.delta', sid);
    await second.result('session.resume', { session_id: created.stored_session_id });
    first.socket.close();
    await first.closeCode;
    const complete = await second.event('message.complete', sid);
    expect(complete.payload.status).toBe('complete');
    await sleep(500 + 2000);
    expect(second.events('session.reclaimed')).toEqual([]);
    const active = await second.result('session.active_list', {});
    expect(active.sessions.map((entry: { id: string }) => entry.id)).toContain(sid);
  });

  it('20. reaping: an orphaned session is reclaimed after the grace period and resumes with its rows', async () => {
    const fixtureWs = await ws({
      script: [step(text('the reply'))],
      configYaml: 'tui_gateway:\n  ws_orphan_reap_grace_s: 1\n',
    });
    const first = await fixtureWs.open();
    const watcher = await fixtureWs.open();
    const created = await first.result('session.create', {});
    const sid = created.session_id;
    await first.result('prompt.submit', { session_id: sid, text: 'the prompt' });
    await first.event('message.complete', sid);
    first.socket.close();
    const reclaimed = await watcher.event('session.reclaimed', '', () => true, 5000);
    expect(reclaimed).toEqual({
      type: 'session.reclaimed',
      session_id: '',
      payload: { session_id: sid, stored_session_id: created.stored_session_id, reason: 'ws_orphan_reap' },
    });
    expect((await watcher.call('session.history', { session_id: sid })).error.code).toBe(4001);
    const resumed = await watcher.result('session.resume', { session_id: created.stored_session_id });
    expect(resumed.session_id).not.toBe(sid);
    expect(resumed.messages.map((message: { text: string }) => message.text)).toEqual(['the prompt', 'the reply']);
  });

  it('21. reattaching within the grace period cancels the reap', async () => {
    const fixtureWs = await ws({ script: [step(text('reply'))], gateway: { reapGraceMs: 2000 } });
    const first = await fixtureWs.open();
    const created = await first.result('session.create', {});
    first.socket.close();
    await first.closeCode;
    const second = await fixtureWs.open();
    const resumed = await second.result('session.resume', { session_id: created.stored_session_id });
    expect(resumed.session_id).toBe(created.session_id);
    await sleep(4000);
    expect(second.events('session.reclaimed')).toEqual([]);
    expect((await second.result('session.history', { session_id: created.session_id })).count).toBe(0);
  });

  it('22. close_on_disconnect finalizes at once with ws_disconnect and no reclaim event', async () => {
    const fixtureWs = await ws({ script: [step(text('reply'))] });
    const first = await fixtureWs.open();
    const watcher = await fixtureWs.open();
    const created = await first.result('session.create', { close_on_disconnect: true });
    await first.result('prompt.submit', { session_id: created.session_id, text: 'hi' });
    await first.event('message.complete', created.session_id);
    first.socket.close();
    await first.closeCode;
    await sleep(200);
    const active = await watcher.result('session.active_list', {});
    expect(active.sessions.map((entry: { id: string }) => entry.id)).not.toContain(created.session_id);
    expect(watcher.events('session.reclaimed')).toEqual([]);
    const row = await fixtureWs.host.store.getSession(created.stored_session_id);
    expect(row?.endReason).toBe('ws_disconnect');
  });

  it('23. settling: a stale running turn is interrupted, resume answers 4009, then the session is reclaimed', async () => {
    // A tool that blocks without events and ignores the interrupt for a while, so the turn settles slowly.
    const blocking = {
      name: 'block',
      description: 'blocks',
      inputSchema: z.object({}),
      toolset: 'test',
      kind: 'other' as const,
      readOnly: true,
      async execute() {
        await sleep(4500);
        return { content: 'unblocked' };
      },
    };
    const fixtureWs = await ws({
      script: [step(toolCall('block', {}, 'call_block')), step(text('done'))],
      configYaml: 'tui_gateway:\n  ws_orphan_reap_grace_s: 1\n  ws_orphan_activity_stale_s: 2\n',
      tools: [blocking as never],
    });
    const first = await fixtureWs.open();
    const watcher = await fixtureWs.open();
    const created = await first.result('session.create', {});
    await first.result('prompt.submit', { session_id: created.session_id, text: 'block' });
    await first.event('tool.start', created.session_id);
    first.socket.close();
    await first.closeCode;
    let settling: Record<string, unknown> | null = null;
    await sleep(2300);
    for (let attempt = 0; attempt < 30 && !settling; attempt += 1) {
      await sleep(100);
      const reply = await watcher.call('session.resume', { session_id: created.stored_session_id });
      if (reply.error?.code === 4009) settling = reply.error;
      else if (reply.result) throw new Error('resumed before settling');
    }
    expect(settling).toEqual({ code: 4009, message: 'session disconnect interrupt settling' });
    const reclaimed = await watcher.event('session.reclaimed', '', () => true, 10_000);
    expect(reclaimed.payload.reason).toBe('ws_orphan_reap');
  });

  it('24. resume guard: more display rows than sessions.max_resume_messages → 4130', async () => {
    const gateway = await fixture({
      script: [step(text('one')), step(text('two'))],
      gateway: { maxResumeMessages: 3 },
    });
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    for (const prompt of ['a', 'b']) {
      await client.result('prompt.submit', { session_id: created.session_id, text: prompt });
      await client.nthEvent('message.complete', prompt === 'a' ? 1 : 2, created.session_id);
    }
    await client.result('session.close', { session_id: created.session_id });
    const resumed = await client.call('session.resume', { session_id: created.stored_session_id });
    expect(resumed.error.code).toBe(4130);
  });
});

void hang;
