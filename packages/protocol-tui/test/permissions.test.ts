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
  mkdirSync(join(dir, 'build'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'build');
}

describe('"always" over the gateway (issue 32, ADR 0034)', () => {
  it('the approval says what always allows; permissions.list shows the entry and permissions.revoke removes it', async () => {
    const target = victim();
    const command = `rm -rf ${target}`;
    const fixture = await createFixture({
      script: [step(toolCall('terminal', { command }, 'call_rm')), step(text('removed'))],
    });
    cleanups.push(() => fixture.dispose());
    const client = await fixture.connect();
    await client.result('client.capabilities', { server_requests: true });
    // The folder is the session's workspace: the command sandbox lets a command delete only there.
    const created = await client.result('session.create', { cwd: dirname(target) });
    await client.result('prompt.submit', { session_id: created.session_id, text: 'go' });
    const approval = await client.waitFor((frame) => frame.method === 'approval');
    expect(approval.params).toMatchObject({ always_scope: command, allow_permanent: true });
    client.send({ jsonrpc: '2.0', id: approval.id, result: { choice: 'always' } });
    await client.event('message.complete', created.session_id);
    expect(existsSync(target)).toBe(false);

    const listed = await client.result('permissions.list', {});
    expect(listed.entries).toEqual([{ command, legacy: false, description: `always allow \`${command}\`` }]);
    expect(await client.result('permissions.revoke', { command })).toEqual({ removed: 1 });
    expect((await client.result('permissions.list', {})).entries).toEqual([]);
    const invalid = await client.call('permissions.revoke', {});
    expect(invalid.error?.code).toBe(4002);
  }, 60_000);
});
