import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestHost, step, type TestHost, text, toolCall } from '../../src/testing/index.js';

const hosts: TestHost[] = [];
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.dispose();
});

async function host(options: Parameters<typeof createTestHost>[0] = {}): Promise<TestHost> {
  const created = await createTestHost(options);
  hosts.push(created);
  return created;
}

describe('provider keys', () => {
  it('saveProviderKey writes the provider variable to HERMES_HOME/.env and the route resolves at once', async () => {
    const test = await host();
    expect(() => test.resolveModel('openai:gpt-4o')).toThrow(/OPENAI_API_KEY/);
    expect(await test.saveProviderKey('openai', '  sk-abc  ')).toEqual({
      provider: 'openai',
      variable: 'OPENAI_API_KEY',
    });
    expect(readFileSync(join(test.homeDir, '.env'), 'utf8')).toMatch(/^OPENAI_API_KEY=.*sk-abc/m);
    expect(test.resolveModel('openai:gpt-4o').provider).toBe('openai');
    expect(await test.removeProviderKey('openai')).toEqual({
      provider: 'openai',
      variable: 'OPENAI_API_KEY',
      present: false,
    });
    expect(() => test.resolveModel('openai:gpt-4o')).toThrow(/OPENAI_API_KEY/);
  });

  it('removeProviderKey reports a key that still comes from the process environment', async () => {
    const test = await host({ env: { OPENAI_API_KEY: 'sk-from-env' } });
    expect(await test.removeProviderKey('openai')).toEqual({
      provider: 'openai',
      variable: 'OPENAI_API_KEY',
      present: true,
    });
    await expect(test.saveProviderKey('nosuch', 'x')).rejects.toThrow(/nosuch/);
  });
});

describe('file checkpoints through the agent', () => {
  it('write_file and patch record checkpoints the session can restore', async () => {
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'hermes-ckpt-agent-')));
    try {
      writeFileSync(join(cwd, 'a.txt'), 'before\n');
      const test = await host({
        script: [
          step(toolCall('write_file', { path: 'a.txt', content: 'after\n' }, 'call_1')),
          step(toolCall('patch', { path: 'a.txt', old_string: 'after', new_string: 'patched' }, 'call_2')),
          step(text('ok')),
        ],
      });
      const agent = await test.newSession({ cwd });
      const run = agent.runTurn({ text: 'edit' });
      for await (const _ of run) {
        // drain
      }
      await run.result;
      const listed = test.checkpoints.list(agent.sessionId);
      expect(listed.map((checkpoint) => checkpoint.message)).toEqual(['before writing a.txt', 'before writing a.txt']);
      await test.checkpoints.restore(agent.sessionId, listed[1]?.id ?? '');
      expect(readFileSync(join(cwd, 'a.txt'), 'utf8')).toBe('before\n');
      await agent.close();
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
