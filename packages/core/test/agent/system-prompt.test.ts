import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildSystemPrompt, type SystemPromptInput } from '../../src/agent/system-prompt.js';
import { useCleanups } from '../support/cleanups.js';

const { temp } = useCleanups();

const shell = process.env.SHELL;
afterEach(() => {
  if (shell === undefined) delete process.env.SHELL;
  else process.env.SHELL = shell;
});

function input(homeDir: string, cwd: string, changes: Partial<SystemPromptInput> = {}): SystemPromptInput {
  return {
    homeDir,
    toolNames: ['read_file', 'write_file', 'patch', 'terminal'],
    configuredText: 'Answer briefly.',
    cwd,
    skipContextFiles: false,
    createdAt: Date.UTC(2026, 11, 5, 12),
    model: { provider: 'custom', model: 'bench' },
    source: 'api_server',
    ...changes,
  };
}

describe('the system prompt kept per probe (ADR 0108)', () => {
  it('is the same text for the same inputs, and another text when any input changes', () => {
    const homeDir = temp('hermes-prompt-home-');
    const cwd = temp('hermes-prompt-cwd-');
    const first = buildSystemPrompt(input(homeDir, cwd));
    expect(buildSystemPrompt(input(homeDir, cwd))).toBe(first);
    const changes: [Partial<SystemPromptInput>, string][] = [
      [{ toolNames: ['todo'] }, 'keep the `todo` list current'],
      [{ configuredText: 'Answer at length.' }, 'Answer at length.'],
      [{ focusInstruction: 'Only the goal.' }, 'Only the goal.'],
      [{ skills: [{ name: 'deploy', description: 'Ships it.' }] }, '- deploy: Ships it.'],
      [{ createdAt: Date.UTC(2026, 11, 6, 12) }, 'Session date: 2026-12-06'],
      [{ model: { provider: 'custom', model: 'other' } }, 'model other from provider custom'],
      [{ model: null }, 'Answer briefly.'],
      [{ source: 'tui' }, 'terminal user interface'],
    ];
    for (const [change, marker] of changes) {
      const changed = buildSystemPrompt(input(homeDir, cwd, change));
      expect(changed).not.toBe(first);
      expect(changed).toContain(marker);
    }
    const otherCwd = temp('hermes-prompt-cwd-');
    writeFileSync(join(otherCwd, 'AGENTS.md'), 'Use spaces.');
    expect(buildSystemPrompt(input(homeDir, otherCwd))).toContain(`Working directory: ${otherCwd}`);
    expect(buildSystemPrompt(input(homeDir, otherCwd))).toContain('Use spaces.');
    expect(buildSystemPrompt(input(homeDir, otherCwd, { skipContextFiles: true }))).not.toContain('Use spaces.');
    process.env.SHELL = '/bin/other-shell';
    expect(buildSystemPrompt(input(homeDir, cwd))).toContain('Shell: /bin/other-shell');
    if (shell === undefined) delete process.env.SHELL;
    else process.env.SHELL = shell;
    // Back to the first inputs: the first text again.
    expect(buildSystemPrompt(input(homeDir, cwd))).toBe(first);
  });

  it('sees a changed SOUL.md and project context file once the probe is read again, as without the kept prompts', async () => {
    const homeDir = temp('hermes-prompt-home-');
    const cwd = temp('hermes-prompt-cwd-');
    const first = buildSystemPrompt(input(homeDir, cwd));
    expect(first).not.toContain('pirate');
    writeFileSync(join(homeDir, 'SOUL.md'), 'You are a pirate.');
    writeFileSync(join(cwd, 'AGENTS.md'), 'Use tabs.');
    // The probe's second (PROBE_TTL_MS) has to pass before the files are read again.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const after = buildSystemPrompt(input(homeDir, cwd));
    expect(after).toContain('You are a pirate.');
    expect(after).toContain('Use tabs.');
  });
});
