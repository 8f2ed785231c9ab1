import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { collectTurn, createTestHost, step, type TestHost, text } from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';

const child = fileURLToPath(new URL('../fixtures/crash-child.mjs', import.meta.url));
const { cleanups } = useCleanups();

/** Starts the child, waits for it to reach the point of interest, and kills it with SIGKILL. */
async function killMidTurn(homeDir: string, mode: 'streaming' | 'tool'): Promise<string> {
  const idFile = join(homeDir, 'session-id');
  const process_ = spawn(process.execPath, [child, homeDir, idFile, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    process_.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('READY')) resolve();
    });
    process_.on('exit', (code) => reject(new Error(`child exited early with ${code}`)));
  });
  process_.kill('SIGKILL');
  await new Promise((resolve) => process_.once('exit', resolve));
  return readFileSync(idFile, 'utf8');
}

describe('crash safety', () => {
  for (const mode of ['streaming', 'tool'] as const) {
    it(`a turn killed with SIGKILL during ${mode} leaves an intact database whose session resumes`, async () => {
      const homeDir = mkdtempSync(join(tmpdir(), 'hermes-crash-'));
      cleanups.push(() => rmSync(homeDir, { recursive: true, force: true }));
      const sessionId = await killMidTurn(homeDir, mode);

      const raw = new Database(join(homeDir, 'state.db'));
      expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
      raw.close();

      const host: TestHost = await createTestHost({
        homeDir,
        storage: 'file',
        autoAdvance: true,
        config: { session: { auto_title: false } },
        script: [step(text('Resumed fine.'))],
      });
      cleanups.push(() => host.dispose());
      const before = await host.store.loadConversation(sessionId);
      expect(before[0]).toMatchObject({ role: 'user', content: `crash me during ${mode}` });
      if (mode === 'tool') expect(before[1]?.toolCalls?.[0]?.id).toBe('call_sleep');

      const agent = await host.resumeSession(sessionId);
      const { result } = await collectTurn(agent.runTurn({ text: 'are you there?' }));
      expect(result.outcome).toBe('completed');
      const messages = JSON.stringify(host.model.calls[0]!.messages);
      expect(messages).toContain(`crash me during ${mode}`);
      if (mode === 'tool') expect(messages).toContain('No result was recorded for this call.');
    });
  }
});
