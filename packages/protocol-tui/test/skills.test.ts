import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createWebSocketFixture, type WebSocketFixture } from './support/client.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function writeSkill(root: string, relative: string, content: string): void {
  mkdirSync(join(root, relative), { recursive: true });
  writeFileSync(join(root, relative, 'SKILL.md'), content);
}

async function fixture(script = [step(text('done'))]): Promise<{ gateway: WebSocketFixture; project: string }> {
  const gateway = await createWebSocketFixture({ script });
  const project = mkdtempSync(join(tmpdir(), 'hermes-gw-project-'));
  mkdirSync(join(project, '.git'));
  cleanups.push(() => gateway.dispose());
  cleanups.push(() => rmSync(project, { recursive: true, force: true }));
  const skills = join(gateway.host.homeDir, 'skills');
  writeSkill(skills, 'haiku', '---\nname: haiku\ndescription: Write a haiku\n---\nAnswer in 5-7-5.\n');
  writeSkill(
    skills,
    'writing/review',
    '---\nname: review\ndescription: Home review\ntags: [prose]\n---\nHome rules.\n',
  );
  writeSkill(skills, 'broken', '---\nname: [oops\n---\nbody\n');
  writeSkill(
    join(project, '.hermes', 'skills'),
    'review',
    '---\nname: review\ndescription: Project review\n---\nProject rules.\n',
  );
  return { gateway, project };
}

describe('skills on the gateway (issue 16.2, spec §4.8)', () => {
  it('commands.catalog lists the skills of the session, the project skill replacing the home one, with a warning for a broken file', async () => {
    const { gateway, project } = await fixture();
    const client = await gateway.open();
    const sid = (await client.result('session.create', { cwd: project })).session_id;
    const catalog = await client.result('commands.catalog', { session_id: sid });
    expect(catalog.skills).toEqual({
      '/haiku': { usage: '/haiku [request]', origin: 'local' },
      '/review': { usage: '/review [request]', origin: 'local' },
    });
    expect(catalog.skill_count).toBe(2);
    expect(catalog.commands['/haiku']).toEqual({ argument_mode: 'optional' });
    expect(catalog.pairs).toContainEqual(['/review', 'Project review']);
    expect(catalog.pairs).toContainEqual(['/help', expect.any(String)]);
    expect(catalog.categories.find((category: { name: string }) => category.name === 'Skills').pairs).toEqual([
      ['/haiku', 'Write a haiku'],
      ['/review', 'Project review'],
    ]);
    expect(catalog.warning).toMatch(/broken.SKILL\.md: skipped: invalid YAML frontmatter/);
    // Without a session only HERMES_HOME/skills applies.
    const homeOnly = await client.result('commands.catalog', {});
    expect(homeOnly.pairs).toContainEqual(['/review', 'Home review']);
  });

  it('session.info lists the skills of the session by category once the agent is built, none in the lazy form', async () => {
    const { gateway, project } = await fixture();
    const client = await gateway.open();
    const created = await client.result('session.create', { cwd: project });
    expect(created.info.skills).toEqual({});
    const info = await client.event('session.info', created.session_id);
    // The project's uncategorised review replaces the home one filed under writing/.
    expect(info.payload.skills).toEqual({ general: ['haiku', 'review'] });
  });

  it('command.dispatch answers the skill directive; slash.exec refuses a skill; an unknown name stays 4018', async () => {
    const { gateway, project } = await fixture();
    const client = await gateway.open();
    const sid = (await client.result('session.create', { cwd: project })).session_id;
    const directive = await client.result('command.dispatch', { name: '/Review', arg: 'chapter 2', session_id: sid });
    expect(directive.type).toBe('skill');
    expect(directive.name).toBe('review');
    expect(directive.display).toBe('/review chapter 2');
    expect(directive.message).toContain('Project rules.');
    expect(directive.message).toContain('chapter 2');
    expect(await client.result('command.resolve', { name: 'HAIKU' })).toEqual({
      canonical: '/haiku',
      description: 'Write a haiku',
      category: 'skill',
    });
    expect((await client.call('command.resolve', { name: 'nope' })).error.code).toBe(4011);
    expect((await client.call('slash.exec', { session_id: sid, command: '/haiku x' })).error).toEqual({
      code: 4018,
      message: 'skill commands must use command.dispatch',
    });
    expect((await client.call('command.dispatch', { name: 'nope', session_id: sid })).error).toEqual({
      code: 4018,
      message: 'not a quick, skill or built-in command: /nope',
    });
  });

  it('prompt.submit of "/<skill> <request>" sends the expanded skill to the model and stores the typed text for display', async () => {
    const { gateway, project } = await fixture();
    const client = await gateway.open();
    const sid = (await client.result('session.create', { cwd: project })).session_id;
    expect(await client.result('prompt.submit', { session_id: sid, text: '/haiku the sea' })).toEqual({
      status: 'streaming',
    });
    const start = await client.event('message.start', sid);
    expect(start.payload.input).toEqual({ role: 'user', text: '/haiku the sea' });
    await client.event('message.complete', sid);
    const sent = JSON.stringify(gateway.host.model.calls[0]?.messages);
    expect(sent).toContain('Answer in 5-7-5.');
    expect(sent).toContain('User request: the sea');
    const stored = await client.result('session.history', { session_id: sid });
    const user = stored.messages.find((message: { role: string }) => message.role === 'user');
    expect(JSON.stringify(user)).toContain('/haiku the sea');
    expect(gateway.host.model.calls).toHaveLength(1);
  });

  it('skills.manage lists, searches, browses and inspects installed skills and says install needs a hub; skills.reload reports changes', async () => {
    const { gateway, project } = await fixture();
    const client = await gateway.open();
    const sid = (await client.result('session.create', { cwd: project })).session_id;
    expect(await client.result('skills.manage', { action: 'list' })).toEqual({
      skills: { general: ['haiku'], writing: ['review'] },
    });
    expect(await client.result('skills.manage', { action: 'search', query: 'PROSE' })).toEqual({
      results: [{ name: 'review', description: 'Home review' }],
    });
    const browse = await client.result('skills.manage', { action: 'browse', page_size: 1, page: 2, session_id: sid });
    expect(browse).toMatchObject({ page: 2, total_pages: 2, total: 2 });
    expect(browse.items).toEqual([
      { name: 'review', description: 'Project review', source: 'project', trust: 'local', identifier: 'review' },
    ]);
    const inspect = await client.result('skills.manage', { action: 'inspect', query: 'haiku' });
    expect(inspect.info).toMatchObject({ name: 'haiku', skill_md_preview: 'Answer in 5-7-5.' });
    expect(await client.result('skills.manage', { action: 'inspect', query: 'missing' })).toEqual({ info: {} });
    const install = await client.result('skills.manage', { action: 'install', query: 'some/hub-skill' });
    expect(install).toMatchObject({ installed: false, name: 'some/hub-skill' });
    expect(install.message).toMatch(/no skills hub/);
    expect((await client.call('skills.manage', { action: 'explode' })).error.code).toBe(4002);

    writeSkill(
      join(gateway.host.homeDir, 'skills'),
      'limerick',
      '---\nname: limerick\ndescription: Five lines\n---\nAABBA.\n',
    );
    const reloaded = await client.result('skills.reload', {});
    expect(reloaded.result).toEqual({
      added: [{ name: 'limerick', description: 'Five lines' }],
      removed: [],
      unchanged: ['haiku', 'review'],
      total: 3,
      commands: 3,
    });
    expect(reloaded.output).toContain('Added: limerick');
    const catalog = await client.result('commands.catalog', {});
    expect(catalog.skills['/limerick']).toEqual({ usage: '/limerick [request]', origin: 'local' });
  });
});
