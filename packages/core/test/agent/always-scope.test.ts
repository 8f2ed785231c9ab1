import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events.js';
import { collectTurn, createTestHost, step, type TestHost, text, toolCall } from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';

const { cleanups, temp } = useCleanups();

async function testHost(options: Parameters<typeof createTestHost>[0]): Promise<TestHost> {
  const host = await createTestHost({
    ...options,
    config: { session: { auto_title: false }, ...(options?.config ?? {}) },
  });
  cleanups.push(() => host.dispose());
  return host;
}

function workspace(...folders: string[]): string {
  const cwd = temp('hermes-always-');
  for (const folder of folders) {
    mkdirSync(join(cwd, folder));
    writeFileSync(join(cwd, folder, 'file'), 'x');
  }
  return cwd;
}

const resolved = (events: AgentEvent[]) =>
  events.flatMap((event) => (event.type === 'approval.resolved' ? [event] : []));

describe('"always" allows exactly the approved command (issue 32, ADR 0034)', () => {
  it('always for rm -rf ./build: a new host runs it unasked, rm -rf ./src still asks; the list shows it; revoke removes it', async () => {
    const homeDir = temp('hermes-home-');
    const cwd = workspace('build', 'src');
    const first = await testHost({
      homeDir,
      script: [step(toolCall('terminal', { command: 'rm -rf ./build' })), step(text('ok'))],
    });
    first.approvals.answer('always');
    const agent = await first.newSession({ cwd });
    const { events } = await collectTurn(agent.runTurn({ text: 'x' }));
    const request = events.find((event) => event.type === 'approval.request');
    expect(request?.type === 'approval.request' && request.request.alwaysScope).toBe('rm -rf ./build');
    expect(existsSync(join(cwd, 'build'))).toBe(false);
    expect(readFileSync(join(homeDir, 'config.yaml'), 'utf8')).toContain('- command: rm -rf ./build');
    expect(readFileSync(join(homeDir, 'config.yaml'), 'utf8')).not.toMatch(/- recursive_delete/);
    await first.dispose();
    cleanups.pop();

    mkdirSync(join(cwd, 'build'));
    const second = await testHost({
      homeDir,
      script: [
        step(toolCall('terminal', { command: 'rm -rf ./build' }, 'a')),
        step(toolCall('terminal', { command: 'rm -rf ./src' }, 'b')),
        step(text('done')),
      ],
    });
    const again = await second.newSession({ cwd });
    const turn = await collectTurn(again.runTurn({ text: 'y' }));
    expect(resolved(turn.events).map((event) => event.source)).toEqual(['allowlist', 'user']);
    expect(second.approvals.requests).toHaveLength(1);
    expect(second.approvals.requests[0]).toMatchObject({ command: 'rm -rf ./src' });
    expect(existsSync(join(cwd, 'build'))).toBe(false);
    expect(existsSync(join(cwd, 'src', 'file'))).toBe(true);

    expect(second.commandAllowlist()).toEqual([
      { entry: { command: 'rm -rf ./build' }, legacy: false, description: 'always allow `rm -rf ./build`' },
    ]);
    const listed = await second.commands.execute(again, '/permissions');
    expect(listed).toMatchObject({ kind: 'text', text: '1. always allow `rm -rf ./build`' });
    const revoked = await second.commands.execute(again, '/permissions revoke 1');
    expect(revoked).toMatchObject({ kind: 'text', text: 'Revoked: always allow `rm -rf ./build`.' });
    expect(second.commandAllowlist()).toEqual([]);
    expect(readFileSync(join(homeDir, 'config.yaml'), 'utf8')).not.toContain('rm -rf ./build');
  }, 120_000);

  it('a legacy bare key no longer allows its class; an explicit `pattern:` entry does', async () => {
    const homeDir = temp('hermes-home-');
    writeFileSync(join(homeDir, 'config.yaml'), 'command_allowlist:\n  - recursive_delete\n');
    const cwd = workspace('a', 'b');
    const legacy = await testHost({
      homeDir,
      script: [step(toolCall('terminal', { command: 'rm -rf a' })), step(text('ok'))],
    });
    const session = await legacy.newSession({ cwd });
    await collectTurn(session.runTurn({ text: 'x' }));
    expect(legacy.approvals.requests).toHaveLength(1);
    expect(existsSync(join(cwd, 'a'))).toBe(true);
    expect(legacy.commandAllowlist()[0]).toMatchObject({ entry: { pattern: 'recursive_delete' }, legacy: true });
    expect(legacy.commandAllowlist()[0]?.description).toContain('not honoured');
    await legacy.dispose();
    cleanups.pop();

    writeFileSync(join(homeDir, 'config.yaml'), 'command_allowlist:\n  - pattern: recursive_delete\n');
    const explicit = await testHost({
      homeDir,
      script: [step(toolCall('terminal', { command: 'rm -rf b' })), step(text('ok'))],
    });
    const next = await explicit.newSession({ cwd });
    const { events } = await collectTurn(next.runTurn({ text: 'y' }));
    expect(explicit.approvals.requests).toHaveLength(0);
    expect(resolved(events)[0]).toMatchObject({ source: 'allowlist' });
    expect(existsSync(join(cwd, 'b'))).toBe(false);
  }, 120_000);

  it('/permissions allow-class is the explicit way to allow a whole class; an unknown class is refused', async () => {
    const homeDir = temp('hermes-home-');
    const host = await testHost({ homeDir, script: [] });
    const session = await host.newSession({ cwd: workspace() });
    expect(await host.commands.execute(session, '/permissions allow-class nonsense')).toMatchObject({ kind: 'error' });
    expect(await host.commands.execute(session, '/permissions allow-class git_destructive')).toMatchObject({
      kind: 'text',
    });
    expect(readFileSync(join(homeDir, 'config.yaml'), 'utf8')).toContain('- pattern: git_destructive');
    expect(host.commandAllowlist()[0]?.description).toBe('always allow every command of the class `git_destructive`');
  }, 120_000);

  it('a session grant for a command that cannot be judged covers that command only', async () => {
    const cwd = workspace('d', 'e');
    const host = await testHost({
      script: [
        step(toolCall('terminal', { command: "echo 'rm -rf d' | bash" }, 'a')),
        step(toolCall('terminal', { command: "echo 'rm -rf d' | bash" }, 'b')),
        step(toolCall('terminal', { command: "echo 'rm -rf e' | bash" }, 'c')),
        step(text('done')),
      ],
    });
    host.approvals.answer('session');
    host.approvals.answer('deny');
    const agent = await host.newSession({ cwd });
    const { events } = await collectTurn(agent.runTurn({ text: 'x' }));
    expect(resolved(events).map((event) => event.source)).toEqual(['user', 'session_grant', 'user']);
    expect(existsSync(join(cwd, 'd'))).toBe(false);
    expect(existsSync(join(cwd, 'e', 'file'))).toBe(true);
  }, 120_000);
});
