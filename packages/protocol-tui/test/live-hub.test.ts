import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture } from './support/client.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function victim(): string {
  const dir = mkdtempSync(join(tmpdir(), 'hermes-victim-'));
  mkdirSync(join(dir, 'target'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'target');
}

describe('a turn another surface runs on the session, through the core’s live-session hub (ADR 0053)', () => {
  it('is shown to the attached client, and its approval is asked once and answered from the gateway', async () => {
    const target = victim();
    const fixture = await createFixture({
      script: [step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')), step(text('removed'))],
    });
    cleanups.push(() => fixture.dispose());
    const client = await fixture.connect();
    await client.result('client.capabilities', { server_requests: true });
    const created = await client.result('session.create', { cwd: dirname(target) });
    const sid: string = created.session_id;
    const agent = fixture.host.getAgent(created.stored_session_id as string);
    if (!agent) throw new Error('no agent');

    // A library caller runs a turn on the gateway's agent with no approve callback of its own.
    const run = agent.runTurn({ text: 'from the library' });
    void (async () => {
      for await (const _event of run) {
        // drained
      }
    })();
    const approval = await client.waitFor((frame) => frame.method === 'approval');
    expect(approval.params).toMatchObject({ session_id: sid, command: `rm -rf ${target}` });
    client.send({ jsonrpc: '2.0', id: approval.id, result: { choice: 'once' } });
    expect((await run.result).outcome).toBe('completed');
    expect(existsSync(target)).toBe(false);
    // One server request for the one approval, though the turn reached the gateway's callbacks and its hub view.
    expect(client.frames.filter((frame) => frame.method === 'approval')).toHaveLength(1);
    const complete = await client.event('message.complete', sid);
    expect(complete.payload).toMatchObject({ text: 'removed', status: 'complete' });
    expect(client.events('message.start', sid).map((start) => start.payload.input)).toEqual([
      { role: 'user', text: 'from the library' },
    ]);
    expect(client.events('tool.complete', sid).map((event) => event.payload.name)).toEqual(['terminal']);
  });
});
