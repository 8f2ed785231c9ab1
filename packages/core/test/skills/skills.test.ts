import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSkillRegistry, parseSkillFile, skillCommandName, skillsByCategory } from '../../src/index.js';
import { collectTurn, createTestHost, step, type TestHost, text } from '../../src/testing/index.js';

function writeSkill(root: string, relative: string, content: string): string {
  const directory = join(root, relative);
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'SKILL.md'), content);
  return directory;
}

function skillText(name: string, description: string, body: string): string {
  return `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`;
}

let host: TestHost | null = null;
afterEach(async () => {
  await host?.dispose();
  host = null;
});

describe('SKILL.md parsing', () => {
  it('parses the YAML frontmatter with its nested values and keeps the body', () => {
    const parsed = parseSkillFile(
      '---\nname: Deploy\ndescription: "Ships: it"\ntags: [ops, ci]\n---\n# Steps\nRun it.\n',
    );
    expect(parsed).toEqual({
      ok: true,
      frontmatter: { name: 'Deploy', description: 'Ships: it', tags: ['ops', 'ci'] },
      body: '# Steps\nRun it.\n',
    });
  });

  it('refuses a file without frontmatter and malformed YAML with the line of the problem', () => {
    expect(parseSkillFile('# just markdown')).toMatchObject({
      ok: false,
      reason: expect.stringContaining('frontmatter'),
    });
    const broken = parseSkillFile('---\nname: a\ndescription: [unclosed\n---\nbody');
    expect(broken.ok).toBe(false);
    expect(!broken.ok && broken.reason).toMatch(/invalid YAML frontmatter: line \d+/);
    expect(parseSkillFile('---\n- a\n- b\n---\nbody')).toMatchObject({
      ok: false,
      reason: expect.stringContaining('mapping'),
    });
  });

  it('slugs names into commands and keeps letters of any script', () => {
    expect(skillCommandName('Code Review!')).toBe('code-review');
    expect(skillCommandName('git_helper')).toBe('git_helper');
    expect(skillCommandName('小说 拆条')).toBe('小说-拆条');
    expect(skillCommandName('+++')).toBe('');
  });
});

describe('skill registry', () => {
  it('loads home skills, categories and project skills; the project wins a name clash; bad files are skipped with a warning', async () => {
    const home = mkdtempSync(join(tmpdir(), 'hermes-skills-home-'));
    const project = mkdtempSync(join(tmpdir(), 'hermes-skills-project-'));
    mkdirSync(join(project, '.git'));
    writeSkill(join(home, 'skills'), 'review', skillText('review', 'Home review', 'Review like home.'));
    writeSkill(join(home, 'skills'), 'devops/deploy', skillText('Deploy App', 'Ship it', 'Deploy steps.'));
    writeSkill(join(home, 'skills'), 'broken', '---\nname: [oops\n---\nbody');
    writeSkill(join(home, 'skills'), 'nofront', 'no frontmatter here');
    writeSkill(join(home, 'skills'), 'help', skillText('help', 'shadows a built-in', 'never used'));
    writeSkill(
      join(project, '.hermes', 'skills'),
      'review',
      skillText('review', 'Project review', 'Review like the project.'),
    );
    mkdirSync(join(project, 'src', 'deep'), { recursive: true });

    const registry = createSkillRegistry({
      homeSkillsDir: join(home, 'skills'),
      isBuiltinCommand: (name) => name === 'help',
    });
    const fromHome = await registry.snapshot();
    expect(fromHome.skills.map((skill) => [skill.command, skill.description, skill.category])).toEqual([
      ['deploy-app', 'Ship it', 'devops'],
      ['review', 'Home review', 'general'],
    ]);
    expect(
      fromHome.warnings.some((warning) => warning.includes(join('broken', 'SKILL.md')) && /invalid YAML/.test(warning)),
    ).toBe(true);
    expect(fromHome.warnings.some((warning) => warning.includes('nofront') && /frontmatter/.test(warning))).toBe(true);
    expect(fromHome.warnings.some((warning) => warning.includes('/help is a built-in command'))).toBe(true);

    // From anywhere inside the project (up to its repository root) the project's skill replaces the home one.
    const fromProject = await registry.list({ cwd: join(project, 'src', 'deep') });
    const review = fromProject.find((skill) => skill.command === 'review');
    expect(review).toMatchObject({ description: 'Project review', source: 'project' });
    expect(skillsByCategory(fromProject)).toEqual({ devops: ['Deploy App'], general: ['review'] });
    expect(await registry.find('/Deploy-App')).toMatchObject({ name: 'Deploy App' });
  });

  it('expands a skill command into the skill instructions with the user request, stored with the typed text', async () => {
    const home = mkdtempSync(join(tmpdir(), 'hermes-skills-home-'));
    const directory = writeSkill(
      join(home, 'skills'),
      'haiku',
      skillText('haiku', 'Write a haiku', 'Answer in 5-7-5.'),
    );
    const registry = createSkillRegistry({
      homeSkillsDir: join(home, 'skills'),
      isBuiltinCommand: (name) => name === 'model',
    });
    const invocation = await registry.expand('/haiku  about the sea ');
    expect(invocation?.display).toBe('/haiku about the sea');
    expect(invocation?.message).toContain('Answer in 5-7-5.');
    expect(invocation?.message).toContain(directory);
    expect(invocation?.message).toContain('about the sea');
    expect(invocation?.input.persistAs?.displayMetadata).toEqual({ display_text: '/haiku about the sea' });
    expect(await registry.expand('/model x')).toBeNull();
    expect(await registry.expand('/unknown')).toBeNull();
    expect(await registry.expand('haiku')).toBeNull();
  });

  it('reload picks up added, removed and changed files and reports the difference', async () => {
    const home = mkdtempSync(join(tmpdir(), 'hermes-skills-home-'));
    writeSkill(join(home, 'skills'), 'one', skillText('one', 'first', 'One.'));
    writeSkill(join(home, 'skills'), 'two', skillText('two', 'second', 'Two.'));
    const registry = createSkillRegistry({ homeSkillsDir: join(home, 'skills') });
    // peek never reads the disk: nothing until a scan has settled.
    expect(registry.peek()).toBeUndefined();
    expect((await registry.list()).map((skill) => skill.name)).toEqual(['one', 'two']);
    expect(registry.peek()?.skills.map((skill) => skill.name)).toEqual(['one', 'two']);
    expect(registry.peek({ cwd: home })).toBeUndefined();
    writeSkill(join(home, 'skills'), 'three', skillText('three', 'third', 'Three.'));
    writeFileSync(join(home, 'skills', 'two', 'SKILL.md'), 'broken now');
    // Cached until reload.
    expect((await registry.list()).map((skill) => skill.name)).toEqual(['one', 'two']);
    const result = await registry.reload();
    expect(registry.peek()?.skills.map((skill) => skill.name)).toEqual(['one', 'three']);
    expect(result.added).toEqual([{ name: 'three', description: 'third' }]);
    expect(result.removed).toEqual([{ name: 'two', description: 'second' }]);
    expect(result.unchanged).toEqual(['one']);
    expect(result.total).toBe(2);
    expect(result.warnings.some((warning) => warning.includes(join('two', 'SKILL.md')))).toBe(true);
  });

  it('a host loads HERMES_HOME/skills, never lets a skill shadow a built-in, and a skill turn sends the expanded message', async () => {
    const home = mkdtempSync(join(tmpdir(), 'hermes-skills-home-'));
    writeSkill(join(home, 'skills'), 'haiku', skillText('haiku', 'Write a haiku', 'Answer in 5-7-5.'));
    writeSkill(join(home, 'skills'), 'usage', skillText('usage', 'shadow', 'no'));
    host = await createTestHost({ homeDir: home, script: [step(text('waves'))] });
    expect((await host.skills.list()).map((skill) => skill.command)).toEqual(['haiku']);
    const agent = await host.newSession({ cwd: home });
    const invocation = await host.skills.expand('/haiku the sea', { cwd: agent.cwd });
    expect(invocation).not.toBeNull();
    const { result } = await collectTurn(agent.runTurn(invocation?.input ?? {}));
    expect(result.outcome).toBe('completed');
    const sent = JSON.stringify(host.model.calls[0]?.messages);
    expect(sent).toContain('Answer in 5-7-5.');
    expect(sent).toContain('User request: the sea');
    const rows = await host.store.loadConversation(agent.sessionId);
    const userRow = rows.find((row) => row.role === 'user');
    expect(userRow?.displayMetadata).toEqual({ display_text: '/haiku the sea' });
  });
});
