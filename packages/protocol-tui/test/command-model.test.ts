import { step, text } from '@hermes/core/testing';
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

describe('command.dispatch /model (issue 16.4)', () => {
  it('a whole command line "/model provider:model" switches the session model', async () => {
    const gateway = await fixture({ scripts: { m2: [step(text('from m2'))] } });
    const client = await gateway.connect();
    const sid = (await client.result('session.create', {})).session_id;
    await client.event('session.info', sid, (params) => params.payload.lazy !== true);
    const before = client.frames.length;
    const switched = await client.result('command.dispatch', { command: '/model scripted:m2', session_id: sid });
    expect(switched).toEqual({ type: 'exec', output: 'model → scripted:m2' });
    const info = await client.waitFor(
      (frame) => frame.params?.type === 'session.info' && frame.params.payload.model === 'm2',
      10_000,
      'session.info m2',
      before,
    );
    expect(info.params.payload.provider).toBe('scripted');
    await client.result('prompt.submit', { session_id: sid, text: 'hi' });
    const done = await client.event('message.complete', sid);
    expect(done.payload.text).toBe('from m2');
  });

  it('the name + arg form switches too, and a bare /model reports the current one', async () => {
    const gateway = await fixture({ scripts: { m3: [] } });
    const client = await gateway.connect();
    const sid = (await client.result('session.create', {})).session_id;
    await client.result('command.dispatch', { name: '/model', arg: 'scripted:m3', session_id: sid });
    expect(await client.result('command.dispatch', { command: '/model', session_id: sid })).toEqual({
      type: 'exec',
      output: 'model: scripted:m3',
    });
  });

  it('a model that cannot be used is refused with 4002 and the session keeps its model', async () => {
    const gateway = await fixture();
    const client = await gateway.connect();
    const sid = (await client.result('session.create', {})).session_id;
    const refused = await client.call('command.dispatch', { command: '/model openai:gpt-4o', session_id: sid });
    expect(refused.error.code).toBe(4002);
    expect(refused.error.message).toMatch(/^unknown model: .*API key/);
    const current = await client.result('command.dispatch', { command: '/model', session_id: sid });
    expect(current.output).toBe('model: scripted:test');
  });

  it('/model without a session answers 4001', async () => {
    const client = await (await fixture()).connect();
    const answer = await client.call('command.dispatch', { command: '/model scripted:test' });
    expect(answer.error.code).toBe(4001);
  });
});
