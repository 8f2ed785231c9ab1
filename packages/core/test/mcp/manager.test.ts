import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createMcpManager,
  type McpManagerHost,
  type McpManagerInternal,
  type McpNoticeTarget,
  mcpToolName,
} from '../../src/mcp/manager.js';
import type { McpServerConfig } from '../../src/mcp/types.js';
import { startHttpMcpServer } from '../fixtures/mcp/http-server.js';
import { IMAGE_BYTES, LONG_TOOL_NAME, ODD_TOOL_NAME } from '../fixtures/mcp/test-tools.mjs';
import { useCleanups } from '../support/cleanups.js';
import {
  CRASH_SERVER,
  captureLogger,
  isAlive,
  named,
  PROCESS_TEST_TIMEOUT_MS,
  reference,
  runTool,
  SILENT_SERVER,
  stdioServer,
  until,
} from './helpers.js';

type ServerSection = Record<string, Omit<McpServerConfig, 'name'>>;

const { cleanups, temp } = useCleanups();

/** An agent stand-in that records the notices it receives. */
function noticeTarget(sessionId: string): McpNoticeTarget & { notices: { key: string; text: string }[] } {
  const notices: { key: string; text: string }[] = [];
  return { sessionId, notices, emitEvent: (_type, payload) => notices.push({ key: payload.key, text: payload.text }) };
}

function manager(
  section: ServerSection | (() => ServerSection),
  options: { host?: Partial<McpManagerHost>; agents?: McpNoticeTarget[]; connect?: boolean } = {},
): { mcp: McpManagerInternal; log: ReturnType<typeof captureLogger> } {
  const log = captureLogger();
  const mcp = createMcpManager({
    host: { lookupEnv: (name) => process.env[name], liveAgents: () => options.agents ?? [], ...options.host },
    connect: options.connect ?? true,
    servers: typeof section === 'function' ? section : () => section,
    logger: log.logger,
  });
  cleanups.push(() => mcp.close());
  return { mcp, log };
}

/** Sets process environment variables for one test. */
function setEnv(values: Record<string, string>): void {
  const previous = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
  Object.assign(process.env, values);
  cleanups.push(() => {
    for (const [name, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
}

async function pidOf(mcp: McpManagerInternal, tool: string, sessionId = 'session-a'): Promise<number> {
  const result = await runTool(named(mcp.toolsFor(sessionId), tool), {}, sessionId);
  return Number(result.content);
}

describe('MCP tools of a stdio server', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('every tool is registered as mcp_<server>_<tool> with the server input schema passed through', async () => {
    const { mcp } = manager({ echo: stdioServer() });
    await mcp.start();
    expect(mcp.status()).toEqual([{ name: 'echo', transport: 'stdio', state: 'connected', toolCount: 10 }]);
    const tools = mcp.toolsFor('session-a');
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining([
        'mcp_echo_echo',
        'mcp_echo_add',
        'mcp_echo_image',
        'mcp_echo_resources',
        'mcp_echo_fail',
        'mcp_echo_slow',
        'mcp_echo_environment',
      ]),
    );
    const echo = named(tools, 'mcp_echo_echo');
    expect(echo).toMatchObject({ toolset: 'mcp', description: 'Echoes the text back.' });
    expect(echo?.inputSchema).toEqual({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    expect(await runTool(echo, { text: 'hello' })).toEqual({ content: 'hello' });
  });

  it('maps text, images, resource links, embedded text resources, isError and structuredContent', async () => {
    const { mcp } = manager({ echo: stdioServer() });
    await mcp.start();
    const tools = mcp.toolsFor('session-a');
    expect(await runTool(named(tools, 'mcp_echo_image'), {})).toEqual({
      content: `Here is the picture:\n[image: image/png, ${IMAGE_BYTES.length} bytes]`,
    });
    expect(await runTool(named(tools, 'mcp_echo_resources'), {})).toEqual({
      content: 'file:///srv/reports/summary.txt\nembedded note text',
    });
    expect(await runTool(named(tools, 'mcp_echo_fail'), {})).toEqual({
      content: 'something went wrong on purpose',
      isError: true,
      status: 'failed',
    });
    expect(await runTool(named(tools, 'mcp_echo_add'), { a: 2, b: 3 })).toEqual({
      content: '5',
      structured: { sum: 5 },
    });
  });

  it('a tool with readOnlyHint is parallel-safe and the others are not', async () => {
    const { mcp } = manager({ echo: stdioServer() });
    await mcp.start();
    const tools = mcp.toolsFor('session-a');
    expect(named(tools, 'mcp_echo_environment')?.readOnly).toBe(true);
    expect(tools.filter((tool) => tool.readOnly === true).map((tool) => tool.name)).toEqual(['mcp_echo_environment']);
  });

  it('names are sanitized, a name over 64 characters is cut and given a hash, and calls use the original name', async () => {
    const { mcp } = manager({ 'my server.v2': stdioServer() });
    await mcp.start();
    const tools = mcp.toolsFor('session-a');
    for (const tool of tools) expect(tool.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    const odd = named(tools, 'mcp_my_server_v2_odd_name_with_space');
    expect(await runTool(odd, {})).toEqual({ content: 'odd tool called' });
    const long = tools.find((tool) => tool.name.startsWith('mcp_my_server_v2_a_tool_whose_name'));
    expect(long?.name).toHaveLength(64);
    expect(long?.name).toMatch(/_[0-9a-f]{6}$/);
    expect(long?.name).toBe(mcpToolName('my server.v2', LONG_TOOL_NAME));
    expect(await runTool(long, {})).toEqual({ content: 'long tool called' });
    expect(ODD_TOOL_NAME).toContain('/');
  });

  it('mcpToolName resolves collisions with a hash and is deterministic', () => {
    const taken = new Set<string>();
    const first = mcpToolName('a', 'b.c', taken);
    const second = mcpToolName('a', 'b/c', taken);
    expect(first).toBe('mcp_a_b_c');
    expect(second).toMatch(/^mcp_a_b_c_[0-9a-f]{6}$/);
    expect(mcpToolName('a', 'b/c', new Set(['mcp_a_b_c']))).toBe(second);
    expect(taken).toEqual(new Set([first, second]));
  });

  it(`the stdio server gets only the minimal environment plus its configured env, with \${VAR} expanded from the host env`, async () => {
    setEnv({
      HERMES_MCP_TEST_SECRET_TOKEN: 'sk-must-not-leak',
      LOGNAME: process.env.LOGNAME ?? 'tester',
      LC_HERMES_TEST: 'kept',
      HERMES_MCP_TEST_NAME: 'world',
    });
    const { mcp } = manager({
      echo: stdioServer({ env: { GREETING: `hello ${reference('HERMES_MCP_TEST_NAME')}`, PLAIN: 'as is' } }),
    });
    await mcp.start();
    const result = await runTool(named(mcp.toolsFor('session-a'), 'mcp_echo_environment'), {});
    const environment = JSON.parse(result.content) as Record<string, string>;
    expect(environment.HERMES_MCP_TEST_SECRET_TOKEN).toBeUndefined();
    expect(environment.LOGNAME).toBeUndefined();
    expect(environment.GREETING).toBe('hello world');
    expect(environment.PLAIN).toBe('as is');
    expect(environment.LC_HERMES_TEST).toBe('kept');
    expect(environment.PATH).toBe(process.env.PATH);
    const allowed = new Set(['PATH', 'HOME', 'USER', 'LANG', 'TMPDIR', 'SHELL', 'TERM', 'GREETING', 'PLAIN']);
    const extra = Object.keys(environment).filter((name) => !allowed.has(name) && !name.startsWith('LC_'));
    expect(extra).toEqual([]);
  });

  it('the base environment comes from the host environment, not from process.env', async () => {
    setEnv({ HERMES_MCP_TEST_SECRET_TOKEN: 'sk-must-not-leak' });
    const { mcp } = manager(
      { echo: stdioServer() },
      { host: { subprocessEnv: () => ({ PATH: '/host/bin', HERMES_MCP_TEST_SECRET_TOKEN: 'sk-host' }) } },
    );
    await mcp.start();
    const environment = JSON.parse(
      (await runTool(named(mcp.toolsFor('session-a'), 'mcp_echo_environment'), {})).content,
    ) as Record<string, string>;
    expect(environment).toEqual({ PATH: '/host/bin' });
  });

  it(`a missing \${VAR} fails a host server at once; a session server asks the secret callback, uses the answer and writes it to .env`, async () => {
    const homeDir = temp('hermes-mcp-home-');
    const requests: unknown[] = [];
    const withToken = stdioServer({ env: { TOKEN: reference('HERMES_MCP_TEST_MISSING') } });
    const { mcp } = manager(
      { hosted: withToken },
      {
        host: {
          homeDir,
          callbacks: {
            secret: async (request) => {
              requests.push(request);
              return { value: 'answered-value' };
            },
          },
        },
      },
    );
    await mcp.start();
    // No client can answer while the host is being created, so a host server does not ask.
    expect(mcp.status()[0]).toMatchObject({
      state: 'failed',
      error: 'HERMES_MCP_TEST_MISSING is not set (referenced by the hosted MCP server configuration)',
    });
    expect(requests).toEqual([]);

    const [status] = await mcp.attachSessionServers('session-a', [{ name: 'ide', ...withToken }]);
    expect(status?.state).toBe('connected');
    expect(requests).toEqual([expect.objectContaining({ envVar: 'HERMES_MCP_TEST_MISSING', sessionId: 'session-a' })]);
    const environment = JSON.parse(
      (await runTool(named(mcp.toolsFor('session-a'), 'mcp_ide_environment'), {})).content,
    ) as Record<string, string>;
    expect(environment.TOKEN).toBe('answered-value');
    expect(readFileSync(join(homeDir, '.env'), 'utf8')).toContain('HERMES_MCP_TEST_MISSING=answered-value');
  });

  it(`a session server whose \${VAR} is missing fails when no secret callback answers`, async () => {
    const { mcp } = manager({}, { host: { callbacks: { secret: async () => ({ value: '' }) } } });
    await mcp.start();
    const [status] = await mcp.attachSessionServers('session-a', [
      { name: 'ide', ...stdioServer({ headers: {}, env: { TOKEN: reference('HERMES_MCP_TEST_MISSING') } }) },
    ]);
    expect(status).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('HERMES_MCP_TEST_MISSING is not set'),
    });
    expect(mcp.toolsFor('session-a')).toEqual([]);
  });

  it('include and exclude filter the tools', async () => {
    const { mcp } = manager({
      only: stdioServer({ tools: { include: ['echo', 'add'] } }),
      without: stdioServer({ tools: { exclude: ['slow', 'fail'] } }),
    });
    await mcp.start();
    const names = mcp.toolsFor('session-a').map((tool) => tool.name);
    expect(names.filter((name) => name.startsWith('mcp_only_'))).toEqual(['mcp_only_echo', 'mcp_only_add']);
    expect(names).not.toContain('mcp_without_slow');
    expect(names).not.toContain('mcp_without_fail');
    expect(names).toContain('mcp_without_echo');
    expect(mcp.status().map((status) => status.toolCount)).toEqual([2, 8]);
  });
});

describe('MCP calls: timeouts and cancellation', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('a call that outlives the server timeout ends with an error result and the server sees the cancellation', async () => {
    const { mcp, log } = manager({ echo: stdioServer({ timeout: 0.2 }) });
    await mcp.start();
    const result = await runTool(named(mcp.toolsFor('session-a'), 'mcp_echo_slow'), { label: 'late' });
    expect(result).toEqual({
      content: 'MCP tool slow on server echo did not answer within 0.2 s',
      isError: true,
      status: 'failed',
    });
    await until(() => log.has('slow cancelled late'));
  });

  it("aborting the call's signal rejects the call and sends the MCP cancellation", async () => {
    const { mcp, log } = manager({ echo: stdioServer() });
    await mcp.start();
    const controller = new AbortController();
    const call = runTool(
      named(mcp.toolsFor('session-a'), 'mcp_echo_slow'),
      { label: 'stopped' },
      'session-a',
      controller.signal,
    );
    await until(() => log.has('slow started stopped'));
    controller.abort(new Error('user interrupt'));
    await expect(call).rejects.toThrow('user interrupt');
    await until(() => log.has('slow cancelled stopped'));
    // The server is still usable after a cancelled call.
    expect(await runTool(named(mcp.toolsFor('session-a'), 'mcp_echo_echo'), { text: 'still here' })).toEqual({
      content: 'still here',
    });
  });
});

describe('MCP servers that fail', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('a missing command, a crashing server and a silent one fail on their own; start() still resolves and their tools are absent', async () => {
    const pidFile = join(temp('hermes-mcp-pid-'), 'pid');
    const { mcp } = manager({
      missing: { command: '/nonexistent/hermes-mcp-server' },
      crashing: { command: process.execPath, args: [CRASH_SERVER] },
      silent: { command: process.execPath, args: [SILENT_SERVER, pidFile], connect_timeout: 0.5 },
      echo: stdioServer(),
    });
    await mcp.start();
    const statuses = mcp.status();
    expect(statuses.map((status) => [status.name, status.state])).toEqual([
      ['missing', 'failed'],
      ['crashing', 'failed'],
      ['silent', 'failed'],
      ['echo', 'connected'],
    ]);
    expect(statuses[0]?.error).toContain('ENOENT');
    expect(statuses[1]?.error).toContain('crash-server: cannot open the database');
    expect(statuses[2]?.error).toContain('did not connect within 0.5 s');
    const names = mcp.toolsFor('session-a').map((tool) => tool.name);
    expect(names.every((name) => name.startsWith('mcp_echo_'))).toBe(true);
    // The silent server is killed, not left behind.
    const silentPid = Number(readFileSync(pidFile, 'utf8'));
    await until(() => !isAlive(silentPid));
  });

  it('a server with neither or both of command and url fails with a reason; a disabled one is disabled', async () => {
    const { mcp } = manager({
      neither: {},
      both: { command: process.execPath, url: 'http://127.0.0.1:1/mcp' },
      off: { ...stdioServer(), enabled: false },
    });
    await mcp.start();
    expect(mcp.status()).toEqual([
      {
        name: 'neither',
        transport: 'stdio',
        state: 'failed',
        toolCount: 0,
        error: 'an MCP server needs either command or url',
      },
      {
        name: 'both',
        transport: 'stdio',
        state: 'failed',
        toolCount: 0,
        error: 'an MCP server has either command or url, not both',
      },
      { name: 'off', transport: 'stdio', state: 'disabled', toolCount: 0 },
    ]);
  });

  it('with connect: false start() connects nothing, while reload() and session servers still connect', async () => {
    const { mcp } = manager({ echo: stdioServer() }, { connect: false });
    await mcp.start();
    expect(mcp.status()).toEqual([{ name: 'echo', transport: 'stdio', state: 'disabled', toolCount: 0 }]);
    expect(mcp.toolsFor('session-a')).toEqual([]);
    // A protocol that creates its host with connectMcp: false starts the configured servers this way.
    expect(await mcp.reload()).toEqual([{ name: 'echo', transport: 'stdio', state: 'connected', toolCount: 10 }]);
    const [status] = await mcp.attachSessionServers('session-a', [{ name: 'ide', ...stdioServer() }]);
    expect(status?.state).toBe('connected');
    expect(await runTool(named(mcp.toolsFor('session-a'), 'mcp_ide_echo'), { text: 'attached' })).toEqual({
      content: 'attached',
    });
  });

  it('a stdio server that disconnects is failed, live agents get a notice, its tools answer "unavailable" until a reload', async () => {
    const agent = noticeTarget('session-a');
    const { mcp } = manager({ echo: stdioServer() }, { agents: [agent] });
    await mcp.start();
    const pid = await pidOf(mcp, 'mcp_echo_pid');
    const before = mcp.toolsFor('session-a');
    process.kill(pid, 'SIGKILL');
    await until(() => mcp.status()[0]?.state === 'failed');
    expect(mcp.status()[0]).toMatchObject({
      state: 'failed',
      toolCount: 10,
      error: expect.stringContaining('the server closed the connection'),
    });
    expect(agent.notices).toEqual([
      { key: 'mcp_server_failed', text: expect.stringContaining('MCP server echo disconnected') },
    ]);
    // The tools stay listed (the spec says they answer, so the model's tool list does not change).
    expect(mcp.toolsFor('session-a').map((tool) => tool.name)).toEqual(before.map((tool) => tool.name));
    expect(await runTool(named(mcp.toolsFor('session-a'), 'mcp_echo_echo'), { text: 'x' })).toEqual({
      content: 'MCP server echo is unavailable',
      isError: true,
      status: 'failed',
    });
    await mcp.reload();
    expect(mcp.status()[0]?.state).toBe('connected');
    // A definition handed out before the reload works again: calls are resolved by name at call time.
    expect(await runTool(named(before, 'mcp_echo_echo'), { text: 'back' })).toEqual({ content: 'back' });
  });
});

describe('MCP over Streamable HTTP', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it(`connects, lists, calls and maps results; \${VAR} in headers is expanded`, async () => {
    const server = await startHttpMcpServer();
    cleanups.push(() => server.close());
    setEnv({ HERMES_MCP_TEST_TOKEN: 'token-123' });
    const { mcp } = manager({
      web: { url: server.url, headers: { Authorization: `Bearer ${reference('HERMES_MCP_TEST_TOKEN')}` } },
    });
    await mcp.start();
    expect(mcp.status()).toEqual([{ name: 'web', transport: 'http', state: 'connected', toolCount: 10 }]);
    const tools = mcp.toolsFor('session-a');
    expect(await runTool(named(tools, 'mcp_web_echo'), { text: 'over http' })).toEqual({ content: 'over http' });
    expect(await runTool(named(tools, 'mcp_web_add'), { a: 1, b: 1 })).toEqual({
      content: '2',
      structured: { sum: 2 },
    });
    expect(server.requests.length).toBeGreaterThan(0);
    for (const headers of server.requests) expect(headers.authorization).toBe('Bearer token-123');
  });

  it('a cancelled HTTP call reaches the server as a cancellation', async () => {
    const server = await startHttpMcpServer();
    cleanups.push(() => server.close());
    const { mcp } = manager({ web: { url: server.url } });
    await mcp.start();
    const controller = new AbortController();
    const call = runTool(
      named(mcp.toolsFor('session-a'), 'mcp_web_slow'),
      { label: 'http' },
      'session-a',
      controller.signal,
    );
    await until(() => server.log.includes('slow started http'));
    controller.abort(new Error('stop'));
    await expect(call).rejects.toThrow('stop');
    await until(() => server.log.includes('slow cancelled http'));
  });

  it('an HTTP server that goes away is marked failed and its tools answer "unavailable"', async () => {
    const server = await startHttpMcpServer();
    const { mcp } = manager({ web: { url: server.url } });
    await mcp.start();
    await server.close();
    const first = await runTool(named(mcp.toolsFor('session-a'), 'mcp_web_echo'), { text: 'x' });
    expect(first.isError).toBe(true);
    expect(first.content).toMatch(/^MCP server web is unavailable/);
    expect(mcp.status()[0]?.state).toBe('failed');
    expect(await runTool(named(mcp.toolsFor('session-a'), 'mcp_web_echo'), { text: 'x' })).toEqual({
      content: 'MCP server web is unavailable',
      isError: true,
      status: 'failed',
    });
  });
});

describe('MCP reload', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('reload() re-reads the servers, ends in-flight calls with an error, drops removed tools and notifies sessions whose tools changed', async () => {
    let section: ServerSection = { alpha: stdioServer() };
    const agent = noticeTarget('session-a');
    const { mcp, log } = manager(() => section, { agents: [agent] });
    await mcp.start();
    const before = mcp.toolsFor('session-a');
    const alphaPid = await pidOf(mcp, 'mcp_alpha_pid');
    const inFlight = runTool(named(before, 'mcp_alpha_slow'), { label: 'during-reload' });
    await until(() => log.has('slow started during-reload'));

    section = { beta: stdioServer() };
    const statuses = await mcp.reload();
    expect(statuses.map((status) => [status.name, status.state])).toEqual([['beta', 'connected']]);
    expect(await inFlight).toMatchObject({
      isError: true,
      content: expect.stringMatching(/^MCP server alpha is unavailable/),
    });
    expect(isAlive(alphaPid)).toBe(false);
    const names = mcp.toolsFor('session-a').map((tool) => tool.name);
    expect(names).toContain('mcp_beta_echo');
    expect(names.some((name) => name.startsWith('mcp_alpha_'))).toBe(false);
    // A turn still holding the old list gets the §15.2 answer for a tool that disappeared.
    expect(await runTool(named(before, 'mcp_alpha_echo'), { text: 'x' })).toEqual({
      content: 'Tool mcp_alpha_echo is no longer available',
      isError: true,
      status: 'failed',
    });
    expect(agent.notices).toEqual([{ key: 'mcp_tools_changed', text: expect.stringContaining('reloaded') }]);
  });

  it('a reload that changes nothing sends no notice, and a call made during the reload waits for it', async () => {
    const agent = noticeTarget('session-a');
    const { mcp } = manager({ echo: stdioServer() }, { agents: [agent] });
    await mcp.start();
    const echo = named(mcp.toolsFor('session-a'), 'mcp_echo_echo');
    const reload = mcp.reload();
    const during = runTool(echo, { text: 'during' });
    await reload;
    expect(await during).toEqual({ content: 'during' });
    expect(agent.notices).toEqual([]);
  });
});

describe('MCP session servers (spec/core.md §15.2, §24.6)', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('are visible only to their session, shared between sessions with identical configurations, and closed with the last one', async () => {
    const { mcp } = manager({ host: stdioServer() });
    await mcp.start();
    const config: McpServerConfig = { name: 'ide', ...stdioServer() };
    const [statusA] = await mcp.attachSessionServers('session-a', [config]);
    expect(statusA).toEqual({ name: 'ide', transport: 'stdio', state: 'connected', toolCount: 10 });
    // The same configuration with its keys in another order is the same server.
    await mcp.attachSessionServers('session-b', [
      { args: config.args ?? [], command: config.command ?? '', name: 'ide' },
    ]);
    expect(mcp.toolsFor('session-a').map((tool) => tool.name)).toContain('mcp_ide_echo');
    expect(mcp.toolsFor('session-c').map((tool) => tool.name)).not.toContain('mcp_ide_echo');
    expect(mcp.toolsFor('session-c').map((tool) => tool.name)).toContain('mcp_host_echo');
    const pidA = await pidOf(mcp, 'mcp_ide_pid', 'session-a');
    const pidB = await pidOf(mcp, 'mcp_ide_pid', 'session-b');
    expect(pidB).toBe(pidA);
    expect(mcp.status().map((status) => status.name)).toEqual(['host', 'ide']);
    // Session c cannot reach the server through a definition it was never given.
    expect(await runTool(named(mcp.toolsFor('session-a'), 'mcp_ide_echo'), { text: 'x' }, 'session-c')).toMatchObject({
      content: 'Tool mcp_ide_echo is no longer available',
    });

    await mcp.attachSessionServers('session-a', []);
    expect(isAlive(pidA)).toBe(true);
    expect(mcp.toolsFor('session-a').map((tool) => tool.name)).not.toContain('mcp_ide_echo');
    await mcp.attachSessionServers('session-b', []);
    expect(isAlive(pidA)).toBe(false);
    expect(mcp.status().map((status) => status.name)).toEqual(['host']);
  });

  it('a second attachSessionServers call replaces the session list', async () => {
    const { mcp } = manager({});
    await mcp.start();
    await mcp.attachSessionServers('session-a', [{ name: 'first', ...stdioServer() }]);
    const firstPid = await pidOf(mcp, 'mcp_first_pid');
    const statuses = await mcp.attachSessionServers('session-a', [{ name: 'second', ...stdioServer() }]);
    expect(statuses.map((status) => [status.name, status.state])).toEqual([['second', 'connected']]);
    expect(isAlive(firstPid)).toBe(false);
    const names = mcp.toolsFor('session-a').map((tool) => tool.name);
    expect(names).toContain('mcp_second_echo');
    expect(names.some((name) => name.startsWith('mcp_first_'))).toBe(false);
  });

  it('a session server named like a host server gets distinct tool names', async () => {
    const { mcp } = manager({ files: stdioServer() });
    await mcp.start();
    await mcp.attachSessionServers('session-a', [{ name: 'files', ...stdioServer({ tools: { include: ['echo'] } }) }]);
    const names = mcp.toolsFor('session-a').map((tool) => tool.name);
    expect(new Set(names).size).toBe(names.length);
    const sessionEcho = names.find((name) => /^mcp_files_echo_[0-9a-f]{6}$/.test(name));
    expect(sessionEcho).toBeDefined();
    expect(
      await runTool(named(mcp.toolsFor('session-a'), sessionEcho ?? ''), { text: 'from the session server' }),
    ).toEqual({ content: 'from the session server' });
  });

  it('close() stops every server and later attaches do nothing', async () => {
    const { mcp } = manager({ host: stdioServer() });
    await mcp.start();
    await mcp.attachSessionServers('session-a', [{ name: 'ide', ...stdioServer() }]);
    const pids = [await pidOf(mcp, 'mcp_host_pid'), await pidOf(mcp, 'mcp_ide_pid')];
    await mcp.close();
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    expect(await mcp.attachSessionServers('session-b', [{ name: 'late', ...stdioServer() }])).toEqual([]);
    expect(mcp.toolsFor('session-a')).toEqual([]);
  });
});
