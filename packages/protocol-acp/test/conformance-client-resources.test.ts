import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hang, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { startHttpMcpServer } from '../../core/test/fixtures/mcp/http-server.js';
import { CLI_ENTRY, initialize } from './agent-harness.js';
import {
  agentOn,
  agentRequests,
  eventually,
  fixtureFor,
  openRun,
  prompt,
  teardown,
  updatesOf,
} from './conformance-helpers.js';

afterEach(async (context) => {
  await teardown(context.task.result?.state === 'fail');
});

const STDIO_MCP_SERVER = fileURLToPath(new URL('../../core/test/fixtures/mcp/stdio-server.mjs', import.meta.url));
const SILENT_MCP_SERVER = fileURLToPath(new URL('../../core/test/fixtures/mcp/silent-server.mjs', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function processesMatching(pattern: string): number[] {
  const result = spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' });
  return result.stdout.split('\n').filter(Boolean).map(Number);
}

describe('ACP conformance: client file system, terminals, MCP and process lifecycle (spec/acp.md §19)', () => {
  for (const withFs of [true, false]) {
    it(`${withFs ? '47' : '48'}. ${withFs ? 'client' : 'no client'} file system: reads and writes go ${withFs ? 'through the editor buffers' : 'to the disk'}`, async () => {
      const capabilities = withFs ? { fs: { readTextFile: true, writeTextFile: true } } : {};
      const run = await openRun({
        script: [
          step(toolCall('read_file', { path: 'a.txt' })),
          step(toolCall('patch', { path: 'a.txt', old_string: 'BUFFER', new_string: 'PATCHED' })),
          step(text('ok')),
        ],
        capabilities,
        mode: 'yolo',
      });
      const file = join(run.fixture.project, 'a.txt');
      await writeFile(file, withFs ? 'disk text\n' : 'BUFFER on disk\n');
      if (withFs) run.agent.buffers.set(file, 'BUFFER in editor\n');
      await prompt(run, 'edit');
      const patchCall = updatesOf(run.agent, run.sessionId, 'tool_call').find((line) => line.update.name === 'patch');
      const completion = updatesOf(run.agent, run.sessionId, 'tool_call_update').find(
        (line) => line.update.toolCallId === patchCall?.update.toolCallId && line.update.status,
      );
      const diff = completion?.update.content?.[0] as { type: string; oldText: string | null; newText: string };
      if (withFs) {
        const reads = agentRequests(run.agent, 'fs/read_text_file');
        expect(reads.length).toBeGreaterThan(0);
        expect(reads[0]?.message.params).toMatchObject({ sessionId: run.sessionId, path: file });
        expect(diff.oldText).toBe('BUFFER in editor\n');
        const writes = agentRequests(run.agent, 'fs/write_text_file');
        expect(writes.map((line) => line.message.params)).toEqual([
          { sessionId: run.sessionId, path: file, content: 'PATCHED in editor\n' },
        ]);
        expect(await readFile(file, 'utf8')).toBe('disk text\n');
      } else {
        expect(run.agent.lines.filter((line) => String(line.message.method ?? '').startsWith('fs/'))).toEqual([]);
        expect(diff.oldText).toBe('BUFFER on disk\n');
        expect(await readFile(file, 'utf8')).toBe('PATCHED on disk\n');
      }
    });
  }

  it('49. a command in a client terminal: create, show, wait, output, completion, release', async () => {
    const run = await openRun({
      script: [step(toolCall('terminal', { command: 'echo hi; exit 3' })), step(text('ok'))],
      capabilities: { terminal: true },
      mode: 'yolo',
    });
    await prompt(run, 'run');
    const create = agentRequests(run.agent, 'terminal/create')[0];
    const params = create?.message.params as {
      sessionId: string;
      cwd: string;
      outputByteLimit: number;
      env: { name: string }[];
    };
    expect(params.sessionId).toBe(run.sessionId);
    expect(params.cwd.startsWith('/')).toBe(true);
    expect(params.outputByteLimit).toBeGreaterThan(0);
    expect((params.env ?? []).map((variable) => variable.name)).not.toContain('SCRIPTED_API_KEY');
    const answer = run.agent.lines.find(
      (line) => line.from === 'client' && line.message.id === create?.message.id && !line.message.method,
    );
    const terminalId = ((answer?.message.result ?? {}) as { terminalId: string }).terminalId;
    const updates = updatesOf(run.agent, run.sessionId, 'tool_call_update');
    expect(updates[0]?.update.content).toEqual([{ type: 'terminal', terminalId }]);
    expect(agentRequests(run.agent, 'terminal/wait_for_exit')).toHaveLength(1);
    expect(agentRequests(run.agent, 'terminal/output').length).toBeGreaterThan(0);
    const completion = updates.find((line) => line.update.status);
    expect(completion?.update.status).toBe('completed');
    expect(completion?.update.content).toEqual([{ type: 'terminal', terminalId }]);
    expect(((completion?.update.rawOutput ?? {}) as { exitCode?: number }).exitCode).toBe(3);
    const release = agentRequests(run.agent, 'terminal/release');
    expect(release).toHaveLength(1);
    expect(release[0]?.seq).toBeGreaterThan(completion?.seq ?? 0);
    const uses = run.agent.lines.filter(
      (line) =>
        line.from === 'agent' &&
        (line.message.params as { terminalId?: string } | undefined)?.terminalId === terminalId,
    );
    expect(uses.at(-1)?.seq).toBe(release[0]?.seq);
  });

  it('50. without the terminal capability commands run locally with their output in the completion text', async () => {
    const run = await openRun({
      script: [step(toolCall('terminal', { command: 'echo hi; exit 3' })), step(text('ok'))],
      mode: 'yolo',
    });
    await prompt(run, 'run');
    expect(run.agent.lines.filter((line) => String(line.message.method ?? '').startsWith('terminal/'))).toEqual([]);
    const completion = updatesOf(run.agent, run.sessionId, 'tool_call_update').find((line) => line.update.status);
    expect(completion?.update.status).toBe('completed');
    const content = JSON.stringify(completion?.update.content);
    expect(content).toContain('hi');
    expect(content).toContain('[exit code 3]');
  });

  it('51. a client terminal that times out is killed, read, failed and released', async () => {
    const run = await openRun({
      script: [step(toolCall('terminal', { command: 'sleep 10', timeout: 1 })), step(text('ok'))],
      capabilities: { terminal: true },
      mode: 'yolo',
    });
    await prompt(run, 'slow');
    const kill = agentRequests(run.agent, 'terminal/kill')[0];
    const outputs = agentRequests(run.agent, 'terminal/output');
    const completion = updatesOf(run.agent, run.sessionId, 'tool_call_update').find((line) => line.update.status);
    const release = agentRequests(run.agent, 'terminal/release')[0];
    expect(kill).toBeDefined();
    expect(outputs.some((line) => line.seq > (kill?.seq ?? 0))).toBe(true);
    expect(completion?.update.status).toBe('failed');
    expect(release?.seq).toBeGreaterThan(completion?.seq ?? 0);
  });

  it('52. client MCP servers: stdio and HTTP tools work, sse is skipped, failures are listed by /tools, close stops the server', async () => {
    const httpServer = await startHttpMcpServer();
    try {
      const run = await openRun({ script: [] });
      const client = run.agent.agent;
      const session = await client.request('session/new', {
        cwd: run.fixture.project,
        mcpServers: [
          { name: 'fx', command: process.execPath, args: [STDIO_MCP_SERVER, 'fx'], env: [] },
          { type: 'http', name: 'hx', url: httpServer.url, headers: [] },
          { type: 'sse', name: 'sx', url: 'http://127.0.0.1:9/sse', headers: [] },
        ],
      });
      run.fixture.server.push(
        step(toolCall('mcp_fx_echo', { text: 'FROM-STDIO' })),
        step(toolCall('mcp_hx_pid', {})),
        step(text('ok')),
      );
      await prompt(run, 'use mcp', session.sessionId);
      const calls = updatesOf(run.agent, session.sessionId, 'tool_call');
      expect(calls.map((call) => [call.update.name, call.update.kind])).toEqual([
        ['mcp_fx_echo', 'other'],
        ['mcp_hx_pid', 'other'],
      ]);
      const completions = updatesOf(run.agent, session.sessionId, 'tool_call_update').filter(
        (line) => line.update.status,
      );
      expect(completions.map((line) => line.update.status)).toEqual(['completed', 'completed']);
      expect(JSON.stringify(completions[0]?.update.content)).toContain('FROM-STDIO');
      const serverPids = processesMatching(`${STDIO_MCP_SERVER} fx`);
      expect(serverPids.length).toBeGreaterThan(0);

      const started = Date.now();
      const broken = await client.request('session/new', {
        cwd: run.fixture.project,
        mcpServers: [{ name: 'missing', command: '/nonexistent/mcp-server', args: [], env: [] }],
      });
      expect(Date.now() - started).toBeLessThan(10_000);
      await prompt(run, '/tools', broken.sessionId);
      const toolsText = JSON.stringify(updatesOf(run.agent, broken.sessionId, 'agent_message_chunk'));
      expect(toolsText).toContain('missing');
      expect(toolsText).toContain('failed');

      await client.request('session/close', { sessionId: session.sessionId });
      await eventually(() => serverPids.every((pid) => !alive(pid)), 8000);
    } finally {
      await httpServer.close();
    }
  }, 30000);

  it('54. closing stdin exits 0 within 8 seconds and leaves no MCP server or local command behind', async () => {
    // A duration no other test uses: other projects' tests run `sleep 60` children at the same time, and pgrep sees
    // every process of the machine.
    const sleep = `sleep 60.${String(process.pid).padStart(7, '0')}`;
    const fixture = await fixtureFor({ script: [step(toolCall('terminal', { command: sleep })), step(hang())] });
    const agent = await agentOn(fixture);
    await initialize(agent);
    const session = await agent.agent.request('session/new', {
      cwd: fixture.project,
      mcpServers: [{ name: 'lx', command: process.execPath, args: [STDIO_MCP_SERVER, 'lx-lifecycle'], env: [] }],
    });
    await agent.agent.request('session/set_mode', { sessionId: session.sessionId, modeId: 'yolo' });
    void agent.agent
      .request('session/prompt', { sessionId: session.sessionId, prompt: [{ type: 'text', text: 'sleep' }] })
      .catch(() => {});
    await eventually(() => processesMatching(sleep).length > 0);
    const children = [...processesMatching('lx-lifecycle'), ...processesMatching(sleep)];
    expect(children.length).toBeGreaterThanOrEqual(2);
    const started = Date.now();
    expect(await agent.close()).toBe(0);
    expect(Date.now() - started).toBeLessThan(8000);
    await eventually(() => children.every((pid) => !alive(pid)), 3000);
  }, 20000);

  it('55. initialize answers at once although a configured MCP server never answers, and session/new follows quickly', async () => {
    const fixture = await fixtureFor({
      extraConfig: [
        'mcp_servers:',
        '  silent:',
        `    command: ${process.execPath}`,
        `    args: [${JSON.stringify(SILENT_MCP_SERVER)}]`,
        '    connect_timeout: 1',
      ].join('\n'),
    });
    const spawnedAt = Date.now();
    const agent = await agentOn(fixture);
    await initialize(agent);
    expect(Date.now() - spawnedAt).toBeLessThan(5000);
    const before = Date.now();
    await agent.agent.request('session/new', { cwd: fixture.project, mcpServers: [] });
    expect(Date.now() - before).toBeLessThan(5000);
  });
});

describe('ACP conformance: CLI modes (spec/acp.md §19)', () => {
  function runCli(args: string[], env: Record<string, string | undefined>) {
    return new Promise<{ code: number | null; stdout: string; stderr: string; durationMs: number }>((resolve) => {
      const started = Date.now();
      const child = spawn(process.execPath, [CLI_ENTRY, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      child.on('exit', (code) => resolve({ code, stdout, stderr, durationMs: Date.now() - started }));
    });
  }
  const environmentFor = (home: string) => {
    const env: Record<string, string | undefined> = { ...process.env, HERMES_HOME: home };
    delete env.SCRIPTED_API_KEY;
    return env;
  };

  it('56. --check reports ready, a broken configuration, and missing credentials with the setup hint', async () => {
    const fixture = await fixtureFor();
    const ready = await runCli(['acp', '--check'], environmentFor(fixture.home));
    expect(ready.code).toBe(0);
    expect(ready.stdout).toMatch(/^OK/m);
    expect(ready.stdout.trim().split('\n').at(-1)).toBe('ready');
    // The core ships ripgrep, so search_files has it even where PATH has no `rg`.
    expect(ready.stdout).toMatch(/^OK\s+rg: rg found/m);
    // Which sandbox commands run in (issue 32): bubblewrap where it works, else none and why.
    expect(ready.stdout).toMatch(
      /^(OK\s+sandbox: commands run in bubblewrap \(network on\)|WARN\s+sandbox: none: .+)$/m,
    );
    expect(ready.durationMs).toBeLessThan(10_000);
    expect(ready.stdout).not.toContain('jsonrpc');

    const brokenHome = await fixtureFor();
    await writeFile(join(brokenHome.home, 'config.yaml'), 'model: [unclosed\n');
    const broken = await runCli(['acp', '--check'], environmentFor(brokenHome.home));
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(/^FAIL\s+configuration/m);

    const keyless = await fixtureFor({ withKey: false });
    const missing = await runCli(['acp', '--check'], environmentFor(keyless.home));
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(/^FAIL\s+credentials.*hermes acp --setup/m);
    expect(missing.stdout).not.toContain('jsonrpc');
  }, 40000);

  it('--check fails with a clear line when terminal.sandbox asks for bwrap and it cannot start', async () => {
    const fixture = await fixtureFor();
    const config = await readFile(join(fixture.home, 'config.yaml'), 'utf8').catch(() => '');
    await writeFile(
      join(fixture.home, 'config.yaml'),
      `${config}\nterminal:\n  sandbox: bwrap\n  bwrap_path: /nonexistent/bwrap\n`,
    );
    const checked = await runCli(['acp', '--check'], environmentFor(fixture.home));
    expect(checked.code).toBe(1);
    expect(checked.stdout).toMatch(/^FAIL\s+sandbox: terminal\.sandbox is "bwrap", but bubblewrap cannot start/m);
  }, 40000);

  it('57. --setup without a terminal, --version and an unknown flag exit with 1, 0 and 2', async () => {
    const fixture = await fixtureFor();
    const setup = await runCli(['acp', '--setup'], environmentFor(fixture.home));
    expect(setup.code).toBe(1);
    expect(setup.stderr).toContain('terminal');
    expect(setup.durationMs).toBeLessThan(5000);
    const version = await runCli(['acp', '--version'], environmentFor(fixture.home));
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const bogus = await runCli(['acp', '--bogus'], environmentFor(fixture.home));
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toMatch(/unknown option/i);
    expect(existsSync(CLI_ENTRY)).toBe(true);
  });
});
