import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { collectTurn, createTestHost, step, type TestHost, text } from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';

const child = fileURLToPath(new URL('../fixtures/lease-child.mjs', import.meta.url));
const { cleanups } = useCleanups();

async function host(homeDir: string, options: Parameters<typeof createTestHost>[0] = {}): Promise<TestHost> {
  const created = await createTestHost({
    homeDir,
    storage: 'file',
    clock: systemClock as never,
    ...options,
    config: { ...(options.config ?? {}), session: { auto_title: false, ...(options.config?.session ?? {}) } },
  });
  cleanups.push(() => created.dispose());
  return created;
}

/** Starts a child that runs a turn on the session and resolves once its model is streaming. */
async function childTurn(
  homeDir: string,
  sessionId: string,
  mode: 'brief' | 'hang',
): Promise<{ process: ChildProcess; done: Promise<string> }> {
  const process_ = spawn(process.execPath, [child, homeDir, sessionId, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  cleanups.push(() => {
    if (process_.exitCode === null) process_.kill('SIGKILL');
  });
  let output = '';
  const done = new Promise<string>((resolve) => {
    process_.on('exit', () => resolve(output));
  });
  await new Promise<void>((resolve, reject) => {
    process_.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('READY')) resolve();
    });
    void done.then(() => reject(new Error(`child ended early: ${output}`)));
  });
  return { process: process_, done };
}

describe('two processes contend for one session', () => {
  it("the second process waits on the first one's lease, then runs and sees its rows", async () => {
    const homeDir = mkdtempSync(join(tmpdir(), 'hermes-contend-'));
    cleanups.push(() => rmSync(homeDir, { recursive: true, force: true }));
    const parent = await host(homeDir, { script: [step(text('created')), step(text('parent after child'))] });
    const agent = await parent.newSession();
    await collectTurn(agent.runTurn({ text: 'create the session' }));

    const other = await childTurn(homeDir, agent.sessionId, 'brief');
    const { events, result } = await collectTurn(agent.runTurn({ text: 'parent turn' }));
    expect(await other.done).toContain('DONE completed');
    expect(events.some((event) => event.type === 'status' && event.phase === 'lease_wait')).toBe(true);
    expect(result.outcome).toBe('completed');
    const prompt = JSON.stringify(parent.model.calls.at(-1)!.messages);
    expect(prompt).toContain('child turn');
    expect(prompt).toContain('child was here');
  });

  it('with a 1 s lease_wait the second process fails with session_locked while the first holds the lease', async () => {
    const homeDir = mkdtempSync(join(tmpdir(), 'hermes-contend-'));
    cleanups.push(() => rmSync(homeDir, { recursive: true, force: true }));
    const parent = await host(homeDir, { config: { session: { lease_wait: 1 } }, script: [step(text('created'))] });
    const agent = await parent.newSession();
    await collectTurn(agent.runTurn({ text: 'create the session' }));

    await childTurn(homeDir, agent.sessionId, 'hang');
    const { result } = await collectTurn(agent.runTurn({ text: 'blocked' }));
    expect(result).toMatchObject({ outcome: 'failed', exitReason: 'session_locked' });
    expect(parent.model.calls).toHaveLength(1);
  });
});
