import { step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture, type GatewayFixture, sleep } from './support/client.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(options: Parameters<typeof createFixture>[0] = {}): Promise<GatewayFixture> {
  const created = await createFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

// Parent call 1 delegates; the child (same scripted model) answers with call 2; the parent ends with call 3.
const delegationScript = () => [
  step(toolCall('delegate_task', { goal: 'count the files' }, 'call_delegate')),
  step(text('there are 3 files')),
  step(text('the child says 3')),
];

describe('delegation.pause holds new children (§4.10, issue 16.6)', () => {
  it('a delegation started while paused does not start its child until unpause', async () => {
    const gateway = await fixture({ script: delegationScript() });
    const client = await gateway.connect();
    expect(await client.result('delegation.pause', {})).toEqual({ paused: true });
    expect((await client.result('delegation.status', {})).paused).toBe(true);

    const { session_id: sid } = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: sid, text: 'delegate it' });
    await client.event('tool.start', sid, (event) => event.payload.name === 'delegate_task');
    // Give a child every chance to start: it must not, however long we wait.
    await sleep(300);
    await client.result('gateway.ping', {});
    expect(client.events('subagent.start', sid)).toEqual([]);
    expect(gateway.host.model.calls).toHaveLength(1);
    expect((await client.result('delegation.status', {})).active).toEqual([]);
    expect(gateway.host.delegationPaused).toBe(true);

    const resumed = await client.call('delegation.pause', { paused: false });
    expect(resumed.result).toEqual({ paused: false });
    const resumedAt = client.frames.indexOf(resumed);
    const start = await client.event('subagent.start', sid);
    expect(start.payload.goal).toBe('count the files');
    expect(client.frames.findIndex((frame) => frame.params === start)).toBeGreaterThan(resumedAt);
    const complete = await client.event('subagent.complete', sid);
    expect(complete.payload).toMatchObject({ status: 'completed', summary: 'there are 3 files' });
    const done = await client.event('message.complete', sid);
    expect(done.payload.text).toBe('the child says 3');
    expect(gateway.host.model.calls).toHaveLength(3);
  });

  it('an interrupt while held ends the turn without ever starting the child', async () => {
    const gateway = await fixture({ script: delegationScript() });
    const client = await gateway.connect();
    await client.result('delegation.pause', { paused: true });
    const { session_id: sid } = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: sid, text: 'delegate it' });
    await client.event('tool.start', sid, (event) => event.payload.name === 'delegate_task');
    await client.result('session.interrupt', { session_id: sid });
    const done = await client.event('message.complete', sid);
    expect(done.payload.status).toBe('interrupted');
    await client.result('delegation.pause', { paused: false });
    await client.result('gateway.ping', {});
    expect(client.events('subagent.start', sid)).toEqual([]);
    expect(gateway.host.model.calls).toHaveLength(1);
  });

  it('children already running are not held by a later pause', async () => {
    const gateway = await fixture({ script: delegationScript() });
    const client = await gateway.connect();
    const { session_id: sid } = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: sid, text: 'delegate it' });
    await client.event('subagent.start', sid);
    await client.result('delegation.pause', { paused: true });
    const done = await client.event('message.complete', sid);
    expect(done.payload.text).toBe('the child says 3');
    await client.result('delegation.pause', { paused: false });
  });
});
