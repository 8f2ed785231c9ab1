import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { step, text } from '@hermes/core/testing';
import { describe, expect, it } from 'vitest';
import { bin, useChatHarness } from './fixtures/chat/harness.js';
import { PtySession } from './fixtures/chat/pty.js';

const { cleanups, temp, server } = useChatHarness();

function writeSkill(root: string, name: string, content: string): void {
  mkdirSync(join(root, name), { recursive: true });
  writeFileSync(join(root, name, 'SKILL.md'), content);
}

/** A home with one skill, a project (a git root) with its own skill, and the model environment. */
function setUp(baseURL: string): { env: Record<string, string>; project: string } {
  const home = temp('hermes-home-');
  writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
  writeSkill(join(home, 'skills'), 'haiku', '---\nname: haiku\ndescription: Write a haiku\n---\nAnswer in 5-7-5.\n');
  const project = temp('hermes-project-');
  mkdirSync(join(project, '.git'));
  writeSkill(
    join(project, '.hermes', 'skills'),
    'review',
    '---\nname: review\ndescription: Review\n---\nProject rules.\n',
  );
  return {
    project,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      TERM: 'xterm-256color',
      NO_COLOR: '1',
      HERMES_HOME: home,
      HERMES_MODEL: 'custom:scripted',
      HERMES_BASE_URL: baseURL,
    },
  };
}

describe('skill slash commands in the CLI (issue 16.2)', () => {
  it('the interactive chat completes a skill command with Tab and runs it as the skill', async () => {
    const scripted = await server([step(text('Waves fold and retreat.'))]);
    const { env, project } = setUp(scripted.baseURL);
    const session = new PtySession([process.execPath, bin], { cwd: project, env });
    cleanups.push(() => session.dispose());
    await session.waitFor('Ctrl-D or /exit quits.');
    session.type('/help\r');
    await session.waitFor('Skills:');
    await session.waitFor('/review [request]`: Review');
    session.type('/hai\t');
    await session.waitFor('/haiku');
    session.type(' the sea\r');
    await session.waitFor('Waves fold and retreat.');
    session.type('/exit\r');
    expect((await session.exited).code).toBe(0);
    expect(scripted.calls).toHaveLength(1);
    const sent = JSON.stringify(scripted.calls[0]?.messages);
    expect(sent).toContain('Answer in 5-7-5.');
    expect(sent).toContain('User request: the sea');
  });

  it('hermes -q "/<skill> <request>" runs the project skill of the working directory', async () => {
    const scripted = await server([step(text('Reviewed.'))]);
    const { env, project } = setUp(scripted.baseURL);
    const child = spawn(process.execPath, [bin, '-q', '/review chapter 2'], {
      cwd: project,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(stdout).toBe('Reviewed.\n');
    const sent = JSON.stringify(scripted.calls[0]?.messages);
    expect(sent).toContain('Project rules.');
    expect(sent).toContain('User request: chapter 2');
  });
});
