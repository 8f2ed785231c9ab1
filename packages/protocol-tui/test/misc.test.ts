import { join } from 'node:path';
import { delay, hang, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture, type GatewayFixture } from './support/client.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(options: Parameters<typeof createFixture>[0] = {}): Promise<GatewayFixture> {
  const created = await createFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

describe('configuration, commands and other methods (§12 checks 60–67)', () => {
  it('60. config round trip and its errors', async () => {
    const client = await (await fixture()).connect();
    expect(await client.result('config.set', { key: 'busy', value: 'queue' })).toEqual({ key: 'busy', value: 'queue' });
    expect(await client.result('config.get', { key: 'busy' })).toEqual({ value: 'queue' });
    expect((await client.call('config.set', { key: 'foo', value: 1 })).error).toEqual({
      code: 4002,
      message: 'unknown config key: foo',
    });
    expect((await client.call('config.set', { key: 'busy', value: 'fast' })).error.code).toBe(4002);
  });

  it('61. a model switch during a turn is deferred to the next turn', async () => {
    const gateway = await fixture({
      script: [step(text('slow'), delay(500), text(' reply'))],
      scripts: { m2: [step(text('from m2'))] },
    });
    const client = await gateway.connect();
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    await client.result('prompt.submit', { session_id: sid, text: 'first' });
    await client.event('message.delta', sid);
    const set = await client.result('config.set', { key: 'model', value: 'scripted:m2', session_id: sid });
    expect(set.deferred).toBe(true);
    await client.nthEvent('message.complete', 1, sid);
    const before = client.frames.length;
    await client.result('prompt.submit', { session_id: sid, text: 'second' });
    const info = await client.waitFor(
      (frame) => frame.params?.type === 'session.info' && frame.params.payload.model === 'm2',
      10_000,
      'session.info m2',
      before,
    );
    expect(info.params.session_id).toBe(sid);
    const done = await client.nthEvent('message.complete', 2, sid);
    expect(done.payload.text).toBe('from m2');
  });

  it('62. command.dispatch rules', async () => {
    const client = await (await fixture({ script: [step(text('x'), hang())] })).connect();
    const created = await client.result('session.create', {});
    const sid = created.session_id;
    await client.result('prompt.submit', { session_id: sid, text: 'go' });
    await client.event('message.delta', sid);
    expect((await client.call('command.dispatch', { name: 'undo', session_id: sid })).error.code).toBe(4009);
    expect((await client.call('command.dispatch', { name: 'queue', session_id: sid })).error).toEqual({
      code: 4004,
      message: 'usage: /queue <prompt>',
    });
    expect((await client.call('command.dispatch', { name: 'nope', session_id: sid })).error.code).toBe(4018);
    await client.result('session.interrupt', { session_id: sid });
  });

  it('63. cli.exec argument checks and blocked commands', async () => {
    const client = await (await fixture()).connect();
    expect((await client.call('cli.exec', { argv: 'x' })).error).toEqual({
      code: 4003,
      message: 'argv must be list[str]',
    });
    const blocked = await client.result('cli.exec', { argv: ['setup'] });
    expect(blocked).toEqual({ blocked: true, hint: 'run this in a terminal: setup', code: -1, output: '' });
  });

  it('64. clipboard.paste on a headless host', async () => {
    const client = await (await fixture()).connect();
    const created = await client.result('session.create', {});
    const pasted = await client.call('clipboard.paste', { session_id: created.session_id });
    expect(pasted.result.attached).toBe(false);
    expect(typeof pasted.result.message).toBe('string');
  });

  it('65. spawn trees: save, list, and a load outside the root', async () => {
    const gateway = await fixture();
    const client = await gateway.connect();
    expect((await client.call('spawn_tree.save', {})).error).toEqual({
      code: 4000,
      message: 'subagents list required',
    });
    const saved = await client.result('spawn_tree.save', { subagents: [{ goal: 'g' }], session_id: 'S' });
    expect(saved.session_id).toBe('S');
    expect(typeof saved.path).toBe('string');
    const listed = await client.result('spawn_tree.list', { session_id: 'S' });
    expect(listed.entries).toHaveLength(1);
    expect(listed.entries[0].count).toBe(1);
    const outside = await client.call('spawn_tree.load', { path: join(gateway.host.homeDir, 'outside.json') });
    expect(outside.error.code).toBe(4030);
    expect(await client.result('spawn_tree.load', { path: saved.path })).toMatchObject({ session_id: 'S' });
  });

  it('66. subagent authority', async () => {
    const gateway = await fixture();
    const owner = await gateway.connect();
    const stranger = await gateway.connect();
    const created = await owner.result('session.create', {});
    expect((await owner.call('subagent.interrupt', { session_id: created.session_id })).error).toEqual({
      code: 4000,
      message: 'subagent_id required',
    });
    expect(
      (await stranger.call('subagent.interrupt', { subagent_id: 'x', session_id: created.session_id })).error.code,
    ).toBe(4001);
  });

  it('67. busy and empty guards for compress and branch', async () => {
    const client = await (await fixture({ script: [step(text('x'), hang())] })).connect();
    const idle = await client.result('session.create', {});
    expect((await client.call('session.branch', { session_id: idle.session_id })).error).toEqual({
      code: 4008,
      message: 'nothing to branch — send a message first',
    });
    const busy = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: busy.session_id, text: 'go' });
    await client.event('message.delta', busy.session_id);
    expect((await client.call('session.compress', { session_id: busy.session_id })).error.code).toBe(4009);
    expect((await client.call('session.branch', { session_id: busy.session_id })).error.code).toBe(4009);
    await client.result('session.interrupt', { session_id: busy.session_id });
  });
});

describe('runtime methods', () => {
  it('reload.mcp asks for confirmation, then reloads and coalesces; delegation.pause round-trips', async () => {
    const client = await (await fixture()).connect();
    expect((await client.result('reload.mcp', {})).status).toBe('confirm_required');
    const reloaded = await client.result('reload.mcp', { confirm: true });
    expect(reloaded.status).toBe('reloaded');
    expect(reloaded.loaded_rev).toMatch(/^[0-9a-f]{12}$/);
    expect(await client.result('reload.mcp', { confirm: true })).toEqual({
      status: 'reloaded',
      loaded_rev: reloaded.loaded_rev,
      coalesced: true,
    });
    expect((await client.result('config.get', { key: 'mtime' })).mcp_rev).toBe(reloaded.loaded_rev);
    expect(await client.result('delegation.pause', {})).toEqual({ paused: true });
    expect((await client.result('delegation.status', {})).paused).toBe(true);
    expect(await client.result('reload.env', {})).toEqual({ updated: 0 });
  });
});
