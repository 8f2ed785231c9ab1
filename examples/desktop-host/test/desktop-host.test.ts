import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScriptedOpenAIServer, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { runDesktopHost } from '../src/main.js';

const CLI_BIN = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../apps/cli/dist/bin.js');
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the desktop host example', () => {
  it('streams a turn, answers its approval, rewinds the last turn and lists the session, over a spawned gateway', async () => {
    if (!existsSync(CLI_BIN)) throw new Error(`${CLI_BIN} is missing: build apps/cli first (npx tsup)`);
    // The build folder is inside the session's workspace: the command sandbox lets commands change nothing else.
    const workspace = mkdtempSync(join(tmpdir(), 'hermes-desktop-host-'));
    cleanups.push(() => rmSync(workspace, { recursive: true, force: true }));
    const target = join(workspace, 'build');
    mkdirSync(target);
    const home = mkdtempSync(join(tmpdir(), 'hermes-desktop-home-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
    const model = await startScriptedOpenAIServer({
      apiKey: 'test-key',
      script: [
        step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')),
        step(text('Removed the build folder.')),
        step(text('A long summary.')),
        step(text('Short summary.')),
      ],
    });
    cleanups.push(() => model.close());
    const printed: string[] = [];
    const report = await runDesktopHost({
      connection: {
        command: process.execPath,
        args: [CLI_BIN, 'gateway'],
        env: {
          PATH: process.env.PATH ?? '',
          HOME: home,
          HERMES_HOME: home,
          HERMES_MODEL: 'custom:scripted',
          HERMES_BASE_URL: model.baseURL,
          HERMES_API_KEY: 'test-key',
        },
      },
      prompt: 'Tidy the build folder.',
      followUp: 'Now summarise.',
      edited: 'Summarise in one line.',
      print: (chunk) => printed.push(chunk),
      cwd: workspace,
    });
    expect(report.approvals).toEqual([{ command: `rm -rf ${target}`, choice: 'once' }]);
    expect(existsSync(target)).toBe(false);
    expect(report.replies).toEqual(['Removed the build folder.', 'A long summary.', 'Short summary.']);
    expect(report.survivorUserRowIds).toHaveLength(1);
    const conversation = report.transcript.filter((row) => row.role !== 'tool').map((row) => row.text);
    expect(conversation).toEqual([
      'Tidy the build folder.',
      'Removed the build folder.',
      'Summarise in one line.',
      'Short summary.',
    ]);
    expect(report.sessions.map((session) => session.id)).toContain(report.storedSessionId);
    expect(printed.join('')).toContain('[approval requested]');
  });
});
