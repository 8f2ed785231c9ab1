import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Message, inProcessAgent as serveInProcess } from './in-process-agent.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The in-process agent, with the session's available_commands_update notifications. */
async function inProcessAgent() {
  const { agent, project, host, sessionId, received, waitFor } = await serveInProcess(cleanups);
  const commandUpdates = () =>
    received.filter(
      (message) =>
        message.method === 'session/update' &&
        message.params?.sessionId === sessionId &&
        message.params.update.sessionUpdate === 'available_commands_update',
    );
  const names = (message: Message | undefined) =>
    ((message?.params.update.availableCommands ?? []) as { name: string }[]).map((command) => command.name);
  const nextCommandUpdate = (count: number) =>
    waitFor(() => commandUpdates().length > count).then(() => commandUpdates().at(-1));
  return { agent, project, host, sessionId, commandUpdates, names, nextCommandUpdate };
}

describe('ACP command list refresh', () => {
  it('an open session gets a fresh available_commands_update after a later commands.register', async () => {
    const run = await inProcessAgent();
    await run.nextCommandUpdate(0);
    const before = run.commandUpdates().length;
    run.agent.commands.register({ name: 'deploy', description: 'Deploy the app', run: async () => ({ text: 'ok' }) });
    const update = await run.nextCommandUpdate(before);
    expect(run.names(update)).toContain('deploy');
    expect(run.names(update)).toContain('help');
  });

  it('an open session gets a fresh available_commands_update, with the new skill, after a skills reload', async () => {
    const run = await inProcessAgent();
    await run.nextCommandUpdate(0);
    const host = run.host();
    // The session's skills are read once; a skill installed later shows up only after a reload.
    await host.skills.list({ cwd: run.project });
    const before = run.commandUpdates().length;
    await mkdir(join(host.skills.homeSkillsDir, 'haiku'), { recursive: true });
    await writeFile(
      join(host.skills.homeSkillsDir, 'haiku', 'SKILL.md'),
      '---\nname: haiku\ndescription: Write a haiku\n---\nAnswer in 5-7-5.\n',
    );
    await host.skills.reload({ cwd: run.project });
    const update = await run.nextCommandUpdate(before);
    expect(update?.params.update.availableCommands).toContainEqual({
      name: 'haiku',
      description: 'Write a haiku',
      input: { hint: 'request' },
    });
    expect(run.names(update)).toContain('help');
  });
});
