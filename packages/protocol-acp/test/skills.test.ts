import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { initialize } from './agent-harness.js';
import { agentOn, eventually, fixtureFor, prompt, requestText, teardown, updatesOf } from './conformance-helpers.js';

afterEach(async (context) => {
  await teardown(context.task.result?.state === 'fail');
});

async function writeSkill(root: string, name: string, content: string): Promise<void> {
  await mkdir(join(root, name), { recursive: true });
  await writeFile(join(root, name, 'SKILL.md'), content);
}

describe('ACP skill commands (issue 16.2)', () => {
  it('advertises installed skills as available commands and runs a typed skill command as the expanded skill', async () => {
    const fixture = await fixtureFor({ script: [step(text('the sea, in three lines'))] });
    await writeSkill(
      join(fixture.home, 'skills'),
      'haiku',
      '---\nname: haiku\ndescription: Write a haiku\n---\nAnswer in 5-7-5.\n',
    );
    await writeSkill(join(fixture.home, 'skills'), 'broken', '---\nname: [oops\n---\nbody\n');
    await mkdir(join(fixture.project, '.git'));
    await writeSkill(
      join(fixture.project, '.hermes', 'skills'),
      'review',
      '---\nname: review\ndescription: Project review\n---\nProject rules.\n',
    );
    const agent = await agentOn(fixture);
    await initialize(agent, {});
    const session = await agent.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });
    const run = { fixture, agent, sessionId: session.sessionId as string };
    // The skills come with the built-in commands, or in a later update when they were still being read.
    await eventually(() =>
      updatesOf(agent, session.sessionId, 'available_commands_update').some(
        (line) =>
          line.update.sessionUpdate === 'available_commands_update' &&
          line.update.availableCommands.some((command) => command.name === 'haiku'),
      ),
    );
    const advertised = updatesOf(agent, run.sessionId, 'available_commands_update').at(-1);
    const commands =
      advertised?.update.sessionUpdate === 'available_commands_update' ? advertised.update.availableCommands : [];
    expect(commands).toContainEqual({ name: 'haiku', description: 'Write a haiku', input: { hint: 'request' } });
    expect(commands).toContainEqual({ name: 'review', description: 'Project review', input: { hint: 'request' } });
    expect(commands.map((command) => command.name)).toContain('help');
    expect(commands.map((command) => command.name)).not.toContain('broken');

    expect(await prompt(run, '/haiku the sea')).toEqual({ stopReason: 'end_turn' });
    const sent = requestText(fixture.server.calls[0] ?? { messages: [] });
    expect(sent).toContain('Answer in 5-7-5.');
    expect(sent).toContain('User request: the sea');
    expect(sent).not.toContain('"/haiku the sea"');
    expect(updatesOf(agent, run.sessionId, 'agent_message_chunk').length).toBeGreaterThan(0);

    // A later session/load replays what the user typed, not the expanded skill.
    const fresh = await agentOn(fixture);
    await initialize(fresh, {});
    await fresh.agent.request('session/load', { sessionId: run.sessionId, cwd: fixture.project, mcpServers: [] });
    await eventually(() => updatesOf(fresh, run.sessionId, 'user_message_chunk').length > 0);
    const replayed = updatesOf(fresh, run.sessionId, 'user_message_chunk').map((line) =>
      line.update.sessionUpdate === 'user_message_chunk' && line.update.content.type === 'text'
        ? line.update.content.text
        : '',
    );
    expect(replayed.join('')).toBe('/haiku the sea');
  });
});
