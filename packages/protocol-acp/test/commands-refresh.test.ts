import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@hermes/core';
import { createTestHost, type TestHost } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createAcpAgent, serveAcp } from '../src/index.js';

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary message fields without narrowing each one.
type Message = Record<string, any>;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An ACP agent served in this process over NDJSON streams, so the test can reach its host and registry. */
async function inProcessAgent() {
  const project = await mkdtemp(join(tmpdir(), 'hermes-acp-refresh-'));
  cleanups.push(() => rm(project, { recursive: true, force: true }));
  let host: TestHost | undefined;
  const agent = createAcpAgent({
    createHost: async () => {
      host = await createTestHost();
      return host;
    },
    version: '0.0.0-test',
    logger: silentLogger,
  });
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const fromAgent = new TransformStream<Uint8Array, Uint8Array>();
  const served = serveAcp(agent, { input: toAgent.readable, output: fromAgent.writable });
  const writer = toAgent.writable.getWriter();
  const received: Message[] = [];
  const waiters = new Set<() => void>();
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of fromAgent.readable) {
      buffer += decoder.decode(chunk, { stream: true });
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line) received.push(JSON.parse(line) as Message);
        newline = buffer.indexOf('\n');
      }
      for (const waiter of [...waiters]) waiter();
    }
  })();
  const waitFor = (predicate: (message: Message) => boolean): Promise<Message> =>
    new Promise((resolve) => {
      const check = () => {
        const found = received.find(predicate);
        if (!found) return;
        waiters.delete(check);
        resolve(found);
      };
      waiters.add(check);
      check();
    });
  let nextId = 0;
  const request = async (method: string, params: unknown): Promise<Message> => {
    const id = ++nextId;
    await writer.write(new TextEncoder().encode(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`));
    const answer = await waitFor((message) => message.id === id && !('method' in message));
    if (answer.error) throw new Error(JSON.stringify(answer.error));
    return answer.result as Message;
  };
  cleanups.push(async () => {
    await writer.close().catch(() => undefined);
    await served.catch(() => undefined);
    await host?.dispose();
  });
  await request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  const session = await request('session/new', { cwd: project, mcpServers: [] });
  const sessionId = session.sessionId as string;
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
  return { agent, project, host: () => host as TestHost, sessionId, commandUpdates, names, nextCommandUpdate };
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
