import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/index.js';
import { collectTurn, createTestHost, step, type TestHost, text, toolCall } from '../../src/testing/index.js';

function writeSkill(root: string, relative: string, name: string, description: string, body: string): void {
  const directory = join(root, relative);
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'SKILL.md'), `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`);
}

function systemText(host: TestHost, call: number): string {
  const messages = host.model.calls[call]!.messages as { role: string; content: unknown }[];
  return String(messages.find((message) => message.role === 'system')?.content ?? '');
}

function offered(host: TestHost, call: number): string[] {
  return ((host.model.calls[call]!.tools ?? []) as { name: string }[]).map((tool) => tool.name);
}

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

describe('skills told to the model (issue 16.2)', () => {
  it('the system prompt lists the skills, and skill_view returns the SKILL.md body the model then follows', async () => {
    const home = mkdtempSync(join(tmpdir(), 'hermes-skill-tools-'));
    writeSkill(
      join(home, 'skills'),
      'devops/deploy',
      'deploy',
      'Ship the app to production',
      'Run make ship, then tag.',
    );
    const project = mkdtempSync(join(tmpdir(), 'hermes-skill-project-'));
    mkdirSync(join(project, '.git'));
    writeSkill(join(project, '.hermes', 'skills'), 'lint', 'lint', 'Lint the repository', 'Run biome check.');
    host = await createTestHost({
      homeDir: home,
      config: { session: { auto_title: false } },
      script: [
        step(toolCall('skill_view', { name: 'deploy' }, 'call_view')),
        step(toolCall('skills_list', {}, 'call_list')),
        step(text('Deployed as the skill says.')),
      ],
    });
    const agent = await host.newSession({ cwd: project });
    const { result, events } = await collectTurn(agent.runTurn({ text: 'ship it' }));
    expect(result.outcome).toBe('completed');

    const prompt = systemText(host, 0);
    expect(prompt).toContain('# Skills');
    expect(prompt).toContain('- deploy: Ship the app to production');
    expect(prompt).toContain('- lint: Lint the repository');
    expect(offered(host, 0)).toEqual(expect.arrayContaining(['skills_list', 'skill_view']));

    const ends = events.filter((event) => event.type === 'tool.end');
    expect(ends[0]).toMatchObject({ name: 'skill_view', status: 'completed' });
    const rows = await host.store.loadConversation(agent.sessionId);
    const viewed = rows.find((row) => row.role === 'tool' && row.toolCallId === 'call_view');
    expect(String(viewed?.content)).toContain('Run make ship, then tag.');
    expect(JSON.stringify(host.model.calls[1]!.messages)).toContain('Run make ship, then tag.');
    const listed = rows.find((row) => row.role === 'tool' && row.toolCallId === 'call_list');
    expect(String(listed?.content)).toContain('- deploy: Ship the app to production [devops]');
    expect(String(listed?.content)).toContain('- lint: Lint the repository');
  });

  it('an unknown skill name is an error result listing the installed ones', async () => {
    const home = mkdtempSync(join(tmpdir(), 'hermes-skill-tools-'));
    writeSkill(join(home, 'skills'), 'deploy', 'deploy', 'Ship it', 'Steps.');
    host = await createTestHost({
      homeDir: home,
      config: { session: { auto_title: false } },
      script: [step(toolCall('skill_view', { name: 'nope' })), step(text('ok'))],
    });
    const agent = await host.newSession({ cwd: mkdtempSync(join(tmpdir(), 'hermes-skill-cwd-')) });
    const { events } = await collectTurn(agent.runTurn({ text: 'x' }));
    const end = events.find((event) => event.type === 'tool.end');
    expect(end).toMatchObject({ name: 'skill_view', status: 'failed' });
    expect(String((end as { result: string }).result)).toContain('No skill named "nope". Installed skills: deploy.');
  });

  it('without skills, or with the skills toolset off, neither the tools nor the Skills layer appear', async () => {
    host = await createTestHost({ config: { session: { auto_title: false } }, script: [step(text('hi'))] });
    const bare = await host.newSession({ cwd: mkdtempSync(join(tmpdir(), 'hermes-skill-cwd-')) });
    await collectTurn(bare.runTurn({ text: 'x' }));
    expect(offered(host, 0)).not.toContain('skill_view');
    expect(systemText(host, 0)).not.toContain('# Skills');
    await host.dispose();

    const home = mkdtempSync(join(tmpdir(), 'hermes-skill-tools-'));
    writeSkill(join(home, 'skills'), 'deploy', 'deploy', 'Ship it', 'Steps.');
    const toolsets = defaultConfig().toolsets.filter((name) => name !== 'skills');
    host = await createTestHost({
      homeDir: home,
      config: { session: { auto_title: false }, toolsets },
      script: [step(text('hi'))],
    });
    const off = await host.newSession({ cwd: mkdtempSync(join(tmpdir(), 'hermes-skill-cwd-')) });
    await collectTurn(off.runTurn({ text: 'x' }));
    expect(offered(host, 0)).not.toContain('skill_view');
    expect(systemText(host, 0)).not.toContain('# Skills');
  });
});
