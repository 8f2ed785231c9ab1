import { hang, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture, type GatewayFixture, type TestClient } from './support/client.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Durable {
  fixture: GatewayFixture;
  client: TestClient;
  sid: string;
  u: [number, number, number];
  completes: number;
}

/** Durable session D: a stored row and three completed turns with user row ids u1, u2, u3. */
async function durable(extraSteps: ReturnType<typeof step>[] = []): Promise<Durable> {
  const fixture = await createFixture({
    script: [
      step(text('reply one')),
      step(text('reply two')),
      step(text('reply three')),
      ...extraSteps,
      step(text('again')),
      step(text('more')),
    ],
  });
  cleanups.push(() => fixture.dispose());
  const client = await fixture.connect();
  const created = await client.result('session.create', {});
  const sid = created.session_id;
  for (const [index, prompt] of ['one', 'two', 'three'].entries()) {
    await client.result('prompt.submit', { session_id: sid, text: prompt });
    await client.nthEvent('message.complete', index + 1, sid);
  }
  const history = await client.result('session.history', { session_id: sid });
  const users = history.messages
    .filter((message: { role: string }) => message.role === 'user')
    .map((message: { row_id: number }) => message.row_id);
  return { fixture, client, sid, u: users as [number, number, number], completes: 3 };
}

async function submit(d: Durable, params: Record<string, unknown>) {
  return d.client.call('prompt.submit', { session_id: d.sid, ...params });
}

describe('rewind and truncation (§12 checks 31–42)', () => {
  it('31. consent first: a target without confirm_truncate is 4029 and changes nothing', async () => {
    const d = await durable();
    const before = await d.client.result('session.history', { session_id: d.sid });
    const reply = await submit(d, { text: 'x', truncate_before_row_id: d.u[1] });
    expect(reply.error.code).toBe(4029);
    expect(await d.client.result('session.history', { session_id: d.sid })).toEqual(before);
  });

  it('32. booleans are not integers', async () => {
    const d = await durable();
    const reply = await submit(d, { text: 'x', truncate_before_user_ordinal: true, confirm_truncate: true });
    expect(reply.error).toEqual({ code: 4004, message: 'truncate_before_user_ordinal must be an integer' });
  });

  it('33. confirm without a target is 4004', async () => {
    const d = await durable();
    expect((await submit(d, { text: 'x', confirm_truncate: true })).error.code).toBe(4004);
  });

  it('34. an empty cut needs confirm_empty_truncate', async () => {
    const d = await durable();
    expect((await submit(d, { text: 'x', truncate_before_row_id: d.u[0], confirm_truncate: true })).error.code).toBe(
      4028,
    );
    const reply = await submit(d, {
      text: 'x',
      truncate_before_row_id: d.u[0],
      confirm_truncate: true,
      confirm_empty_truncate: true,
    });
    expect(reply.result).toEqual({ status: 'streaming', survivor_user_row_ids: [] });
  });

  it('35. a stale row id is 4018 with the R5 data', async () => {
    const d = await durable();
    const reply = await submit(d, { text: 'x', truncate_before_row_id: 999999, confirm_truncate: true });
    expect(reply.error).toEqual({
      code: 4018,
      message: 'target user message is no longer in session history',
      data: { user_turn_count: 3, ordinal: null, segment_ordinal: null, prefix_user_count: 0 },
    });
  });

  it('36. the ordinal cross-check: mismatch is 4030, a match streams', async () => {
    const d = await durable();
    const mismatch = await submit(d, {
      truncate_before_row_id: d.u[1],
      truncate_before_user_ordinal: 2,
      confirm_truncate: true,
      text: 'x',
    });
    expect(mismatch.error.code).toBe(4030);
    const match = await submit(d, {
      truncate_before_row_id: d.u[1],
      truncate_before_user_ordinal: 1,
      confirm_truncate: true,
      text: 'x',
    });
    expect(match.result.status).toBe('streaming');
  });

  it('37. ordinal-only truncation of a durable session is refused', async () => {
    const d = await durable();
    const reply = await submit(d, { truncate_before_user_ordinal: 1, confirm_truncate: true, text: 'x' });
    expect(reply.error).toEqual({
      code: 4004,
      message: 'ordinal-only truncation is unsafe for durable session history; include truncate_before_row_id',
    });
  });

  it('38. survivor ids change; old ids are stale; new ids work', async () => {
    const d = await durable();
    const first = await submit(d, { truncate_before_row_id: d.u[2], confirm_truncate: true, text: 'again' });
    const [n1, n2] = first.result.survivor_user_row_ids;
    expect(first.result.survivor_user_row_ids).toHaveLength(2);
    expect(n1).not.toBe(d.u[0]);
    expect(n2).not.toBe(d.u[1]);
    await d.client.nthEvent('message.complete', 4, d.sid);
    expect((await submit(d, { truncate_before_row_id: d.u[1], confirm_truncate: true, text: 'x' })).error.code).toBe(
      4018,
    );
    const again = await submit(d, { truncate_before_row_id: n2, confirm_truncate: true, text: 'more' });
    expect(again.result.status).toBe('streaming');
  });

  it('39. rebind map: survivors map to new ids, dropped ids to null, unknown ids left out', async () => {
    const d = await durable();
    const reply = await submit(d, {
      truncate_before_row_id: d.u[2],
      rebind_survivor_row_ids: [d.u[0], d.u[2], 123456],
      confirm_truncate: true,
      text: 'x',
    });
    const map = reply.result.survivor_row_id_map;
    expect(Number.isInteger(map[String(d.u[0])])).toBe(true);
    expect(map[String(d.u[0])]).not.toBe(d.u[0]);
    expect(map[String(d.u[2])]).toBeNull();
    expect('123456' in map).toBe(false);
    expect('survivor_user_row_ids' in reply.result).toBe(false);
  });

  it('40. persist before memory: a store failure is 5008 and history is unchanged', async () => {
    const d = await durable();
    const before = await d.client.result('session.history', { session_id: d.sid });
    d.fixture.host.store.rewind = async () => {
      throw new Error('disk I/O error');
    };
    const reply = await submit(d, { truncate_before_row_id: d.u[1], confirm_truncate: true, text: 'x' });
    expect(reply.error.code).toBe(5008);
    expect(reply.error.message).toMatch(/^failed to persist history truncation: /);
    expect(await d.client.result('session.history', { session_id: d.sid })).toEqual(before);
  });

  it('41. a rewind during a running turn is 4009', async () => {
    const d = await durable([step(hang())]);
    await submit(d, { text: 'block' });
    await d.client.nthEvent('message.start', 4, d.sid);
    const reply = await submit(d, { truncate_before_row_id: d.u[1], confirm_truncate: true, text: 'x' });
    expect(reply.error).toEqual({ code: 4009, message: 'session busy — interrupt the current turn before rewinding' });
    await d.client.result('session.interrupt', { session_id: d.sid });
  });

  it('42. ordinal cut before persistence answers survivor_user_row_ids [null]', async () => {
    const fixture = await createFixture({ script: [step(text('after the cut'))] });
    cleanups.push(() => fixture.dispose());
    const client = await fixture.connect();
    const created = await client.result('session.create', {
      messages: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'first answer' },
        { role: 'user', content: 'second question' },
        { role: 'assistant', content: 'second answer' },
      ],
    });
    const sid = created.session_id;
    const reply = await client.call('prompt.submit', {
      session_id: sid,
      truncate_before_user_ordinal: 1,
      confirm_truncate: true,
      text: 'x',
    });
    expect(reply.result).toEqual({ status: 'streaming', survivor_user_row_ids: [null] });
    await client.nthEvent('message.complete', 1, sid);
    const history = await client.result('session.history', { session_id: sid });
    const texts = history.messages.map(
      (message: { text?: string; content?: string }) => message.text ?? message.content,
    );
    expect(texts).not.toContain('second question');
    expect(JSON.stringify(fixture.host.model.calls[0]!.messages)).not.toContain('second question');
  });
});
