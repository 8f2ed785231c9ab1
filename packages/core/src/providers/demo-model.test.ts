import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAgentHost } from '../agent/host.js';
import { silentLogger } from '../logger.js';
import { createDemoProvider, DEMO_MODEL_SPEC, DEMO_WORKSPACE_PREFIX } from './demo-model.js';

describe('the offline demo model', () => {
  it('writes its notes in a fresh folder on every run, so each run shows a diff and an approval', async () => {
    const home = mkdtempSync(join(tmpdir(), 'hermes-demo-home-'));
    const approvals: string[] = [];
    const host = await createAgentHost({
      homeDir: home,
      env: {},
      logger: silentLogger,
      providers: [createDemoProvider()],
      config: { model: { default: DEMO_MODEL_SPEC }, session: { auto_title: false } },
      callbacks: {
        approve: async (request) => {
          approvals.push(request.command);
          return 'once';
        },
      },
    });
    try {
      const folders: string[] = [];
      for (const question of ['first run', 'second run']) {
        const agent = await host.newSession({ cwd: home });
        const diffs: string[] = [];
        const run = agent.runTurn({ text: question });
        for await (const event of run)
          if (event.type === 'tool.end') for (const diff of event.diffs ?? []) diffs.push(diff.path);
        const result = await run.result;
        expect(result.outcome).toBe('completed');
        expect(result.finalText).toContain(`You said: "${question}"`);
        expect(diffs).toHaveLength(1);
        const notes = diffs[0] ?? '';
        expect(notes.startsWith(DEMO_WORKSPACE_PREFIX)).toBe(true);
        expect(readFileSync(notes, 'utf8')).toContain(`You asked: ${question}`);
        folders.push(dirname(notes));
        await agent.close();
      }
      expect(folders[0]).not.toBe(folders[1]);
      expect(approvals).toEqual(folders.map((folder) => `rm -rf ${join(folder, 'scratch')}`));
      for (const folder of folders) {
        expect(existsSync(folder)).toBe(true);
        rmSync(folder, { recursive: true, force: true });
      }
    } finally {
      await host.close();
      rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);
});
