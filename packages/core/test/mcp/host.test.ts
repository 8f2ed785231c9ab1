import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events.js';
import {
  collectTurn,
  createTestHost,
  step,
  type TestHost,
  type TestHostOptions,
  text,
  toolCall,
} from '../../src/testing/index.js';
import { useCleanups } from '../support/cleanups.js';
import {
  CRASH_SERVER,
  isAlive,
  PROCESS_TEST_TIMEOUT_MS,
  reference,
  STDIO_SERVER,
  stdioServer,
  until,
} from './helpers.js';

const { cleanups, temp } = useCleanups();

async function testHost(options: TestHostOptions): Promise<TestHost> {
  const host = await createTestHost({
    connectMcp: true,
    ...options,
    config: { session: { auto_title: false }, ...(options.config ?? {}) },
  });
  cleanups.push(() => host.dispose());
  return host;
}

/** A config.yaml with these stdio test servers; JSON strings are valid YAML scalars whatever the path holds. */
function configYaml(servers: string[]): string {
  const lines = ['mcp_servers:'];
  for (const name of servers)
    lines.push(
      `  ${name}:`,
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(STDIO_SERVER)}]`,
    );
  return `${lines.join('\n')}\n`;
}

function toolEnds(events: AgentEvent[]) {
  return events.flatMap((event) => (event.type === 'tool.end' ? [event] : []));
}

function toolNamesOf(host: TestHost, callIndex: number): string[] {
  return (host.model.calls[callIndex]?.tools ?? []).map((tool) => tool.name);
}

describe('MCP through a real host (checklist 45)', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("45. a stdio MCP server's tool echo is registered as mcp_<server>_echo, can be called, and maps its result", async () => {
    const host = await testHost({
      config: { mcp_servers: { echo: { command: process.execPath, args: [STDIO_SERVER] } } },
      script: [
        step(toolCall('mcp_echo_echo', { text: 'hello from MCP' }, 'call_echo')),
        step(text('The server said hello.')),
      ],
    });
    expect(host.mcp.status()).toEqual([{ name: 'echo', transport: 'stdio', state: 'connected', toolCount: 10 }]);
    const agent = await host.newSession();
    const { events, result } = await collectTurn(agent.runTurn({ text: 'echo something' }));
    expect(result.outcome).toBe('completed');
    const declared = host.model.calls[0]?.tools.find((tool) => tool.name === 'mcp_echo_echo');
    expect(declared?.schema).toMatchObject({ type: 'object', properties: { text: { type: 'string' } } });
    expect(toolEnds(events)).toEqual([
      expect.objectContaining({
        callId: 'call_echo',
        name: 'mcp_echo_echo',
        status: 'completed',
        result: 'hello from MCP',
      }),
    ]);
    const rows = await host.store.loadConversation(agent.sessionId);
    expect(rows.find((row) => row.role === 'tool')).toMatchObject({
      toolName: 'mcp_echo_echo',
      content: 'hello from MCP',
    });
    expect(JSON.stringify(host.model.calls[1]?.messages)).toContain('hello from MCP');
  });

  it('45. a server that fails to start does not block host creation', async () => {
    const host = await testHost({
      config: {
        mcp_servers: {
          missing: { command: '/nonexistent/hermes-mcp-server' },
          crashing: { command: process.execPath, args: [CRASH_SERVER] },
        },
      },
      script: [step(text('Still here.'))],
    });
    expect(host.mcp.status()).toEqual([
      expect.objectContaining({ name: 'missing', state: 'failed', toolCount: 0 }),
      expect.objectContaining({
        name: 'crashing',
        state: 'failed',
        toolCount: 0,
        error: expect.stringContaining('cannot open the database'),
      }),
    ]);
    const agent = await host.newSession();
    const { result } = await collectTurn(agent.runTurn({ text: 'hi' }));
    expect(result.outcome).toBe('completed');
    expect(result.finalText).toBe('Still here.');
    expect(toolNamesOf(host, 0).some((name) => name.startsWith('mcp_'))).toBe(false);
  });

  it('45. reload() picks up a changed mcp_servers section', async () => {
    const homeDir = temp('hermes-mcp-home-');
    writeFileSync(join(homeDir, 'config.yaml'), configYaml(['alpha']));
    const host = await testHost({
      homeDir,
      script: [
        step(toolCall('mcp_alpha_pid', {}, 'call_pid')),
        step(text('noted')),
        step(toolCall('mcp_beta_echo', { text: 'from beta' }, 'call_beta')),
        step(text('done')),
      ],
    });
    expect(host.mcp.status().map((status) => [status.name, status.state])).toEqual([['alpha', 'connected']]);
    const agent = await host.newSession();
    const first = await collectTurn(agent.runTurn({ text: 'pid?' }));
    const alphaPid = Number(toolEnds(first.events)[0]?.result);

    writeFileSync(join(homeDir, 'config.yaml'), configYaml(['beta']));
    await host.reloadConfig();
    const statuses = await host.mcp.reload();
    expect(statuses.map((status) => [status.name, status.state])).toEqual([['beta', 'connected']]);
    expect(isAlive(alphaPid)).toBe(false);
    // The live session is told its tools changed; its prompt is rebuilt at the next turn (the tool names are in its fingerprint).
    expect(agent.eventsSince(0)).toContainEqual(expect.objectContaining({ type: 'notice', key: 'mcp_tools_changed' }));

    const second = await collectTurn(agent.runTurn({ text: 'echo' }));
    expect(toolEnds(second.events)).toEqual([
      expect.objectContaining({ name: 'mcp_beta_echo', status: 'completed', result: 'from beta' }),
    ]);
    const names = toolNamesOf(host, 2);
    expect(names).toContain('mcp_beta_echo');
    expect(names.some((name) => name.startsWith('mcp_alpha_'))).toBe(false);
  });

  it('maps results through the loop: isError ends the call failed, structuredContent becomes structured, images become text', async () => {
    const host = await testHost({
      config: { mcp_servers: { echo: stdioServer() } },
      script: [
        step(
          toolCall('mcp_echo_fail', {}, 'call_fail'),
          toolCall('mcp_echo_add', { a: 20, b: 22 }, 'call_add'),
          toolCall('mcp_echo_image', {}, 'call_image'),
        ),
        step(text('done')),
      ],
    });
    const agent = await host.newSession();
    const { events } = await collectTurn(agent.runTurn({ text: 'go' }));
    const ends = new Map(toolEnds(events).map((event) => [event.callId, event]));
    expect(ends.get('call_fail')).toMatchObject({ status: 'failed', result: 'something went wrong on purpose' });
    expect(ends.get('call_add')).toMatchObject({ status: 'completed', result: '42', structured: { sum: 42 } });
    expect(ends.get('call_image')).toMatchObject({
      status: 'completed',
      result: 'Here is the picture:\n[image: image/png, 5 bytes]',
    });
  });

  it('a tool with readOnlyHint runs in parallel with its batch and the others do not', async () => {
    const host = await testHost({
      config: { mcp_servers: { echo: stdioServer() } },
      script: [
        step(toolCall('mcp_echo_environment', {}, 'read_1'), toolCall('mcp_echo_environment', {}, 'read_2')),
        step(toolCall('mcp_echo_echo', { text: 'a' }, 'echo_1'), toolCall('mcp_echo_echo', { text: 'b' }, 'echo_2')),
        step(text('done')),
      ],
    });
    const agent = await host.newSession();
    const { events } = await collectTurn(agent.runTurn({ text: 'go' }));
    const parallel = Object.fromEntries(
      events.flatMap((event) => (event.type === 'tool.start' ? [[event.callId, event.parallel]] : [])),
    );
    expect(parallel).toEqual({ read_1: true, read_2: true, echo_1: false, echo_2: false });
  });

  it(`the stdio server gets the minimal environment of the host plus its env, with \${VAR} from the environment and .env`, async () => {
    const previous = process.env.HERMES_MCP_TEST_SECRET_API_KEY;
    process.env.HERMES_MCP_TEST_SECRET_API_KEY = 'sk-parent-process-secret';
    cleanups.push(() => {
      if (previous === undefined) delete process.env.HERMES_MCP_TEST_SECRET_API_KEY;
      else process.env.HERMES_MCP_TEST_SECRET_API_KEY = previous;
    });
    const homeDir = temp('hermes-mcp-home-');
    writeFileSync(
      join(homeDir, '.env'),
      'HERMES_MCP_TEST_DOTENV=from-dotenv\nHERMES_MCP_TEST_DOTENV_ONLY=not-passed\n',
    );
    const host = await testHost({
      homeDir,
      // The host reads the real process environment, as it does outside tests.
      env: { ...process.env },
      config: {
        mcp_servers: {
          echo: {
            ...stdioServer(),
            env: {
              FROM_DOTENV: reference('HERMES_MCP_TEST_DOTENV'),
              FROM_ENVIRONMENT: reference('HERMES_MCP_TEST_SECRET_API_KEY'),
            },
          },
        },
      },
      script: [step(toolCall('mcp_echo_environment', {}, 'call_env')), step(text('done'))],
    });
    const agent = await host.newSession();
    const { events } = await collectTurn(agent.runTurn({ text: 'env?' }));
    const environment = JSON.parse(toolEnds(events)[0]?.result ?? '{}') as Record<string, string>;
    expect(environment.FROM_DOTENV).toBe('from-dotenv');
    // A secret reaches the server only when its configuration asks for it by name; the server got its value, and
    // the tool result that echoes it back shows the model only its name (issue 32: tool output is redacted).
    expect(environment.FROM_ENVIRONMENT).toBe('[REDACTED:HERMES_MCP_TEST_SECRET_API_KEY]');
    expect(environment.HERMES_MCP_TEST_SECRET_API_KEY).toBeUndefined();
    expect(environment.HERMES_MCP_TEST_DOTENV_ONLY).toBeUndefined();
    expect(environment.PATH).toBe(process.env.PATH);
    const allowed = new Set([
      'PATH',
      'HOME',
      'USER',
      'LANG',
      'TMPDIR',
      'SHELL',
      'TERM',
      'FROM_DOTENV',
      'FROM_ENVIRONMENT',
    ]);
    expect(Object.keys(environment).filter((name) => !allowed.has(name) && !name.startsWith('LC_'))).toEqual([]);
  });

  it('session servers are visible only to their session and stop when it closes', async () => {
    const host = await testHost({
      script: [step(toolCall('mcp_ide_pid', {}, 'call_pid')), step(text('noted')), step(text('other session'))],
    });
    const agent = await host.newSession({ mcpServers: [{ name: 'ide', ...stdioServer() }] });
    // The host attaches session servers without waiting for them.
    await until(() => host.mcp.status().some((status) => status.name === 'ide' && status.state === 'connected'));
    const { events } = await collectTurn(agent.runTurn({ text: 'pid?' }));
    const pid = Number(toolEnds(events)[0]?.result);
    expect(isAlive(pid)).toBe(true);
    expect(toolNamesOf(host, 0)).toContain('mcp_ide_echo');

    const other = await host.newSession();
    await collectTurn(other.runTurn({ text: 'hi' }));
    expect(toolNamesOf(host, 2).some((name) => name.startsWith('mcp_ide_'))).toBe(false);

    await agent.close();
    await until(() => !isAlive(pid));
    expect(host.mcp.status().some((status) => status.name === 'ide')).toBe(false);
  });

  it('no MCP child process is left running after host.close()', async () => {
    const host = await createTestHost({
      connectMcp: true,
      config: { session: { auto_title: false }, mcp_servers: { echo: stdioServer() } },
      script: [
        step(toolCall('mcp_echo_pid', {}, 'call_pid')),
        step(toolCall('mcp_ide_pid', {}, 'call_ide_pid')),
        step(text('done')),
      ],
    });
    const agent = await host.newSession({ mcpServers: [{ name: 'ide', ...stdioServer() }] });
    await until(() => host.mcp.status().some((status) => status.name === 'ide' && status.state === 'connected'));
    const { events } = await collectTurn(agent.runTurn({ text: 'pids?' }));
    const pids = toolEnds(events).map((event) => Number(event.result));
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(isAlive(pid)).toBe(true);
    await host.dispose();
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
  });
});
