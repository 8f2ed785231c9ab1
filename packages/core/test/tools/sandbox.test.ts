import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { HermesError } from '../../src/errors.js';
import { createTestHost } from '../../src/testing/index.js';
import { createLocalCommandRunner } from '../../src/tools/command-runner.js';
import { createProcessTool } from '../../src/tools/process-tool.js';
import { type CommandSandbox, resolveSandbox } from '../../src/tools/sandbox.js';
import { createTerminalTool } from '../../src/tools/terminal.js';
import type { CommandRunner, RunningCommand } from '../../src/tools/types.js';
import { requireBwrap } from '../security/support.js';
import { createTestToolContext, type TestToolContext } from './context.js';

const terminal = createTerminalTool();
const processTool = createProcessTool();
const cleanups: (() => Promise<void>)[] = [];
let bwrap = '';

beforeAll(async () => {
  requireBwrap();
  const status = await resolveSandbox({ setting: 'bwrap', network: true });
  bwrap = status.executable as string;
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function temporaryDirectory(prefix: string, base = tmpdir()): Promise<string> {
  const directory = await realpath(await mkdtemp(join(base, prefix)));
  cleanups.push(() => rm(directory, { recursive: true, force: true }));
  return directory;
}

/** A tool context whose commands run in bubblewrap: workspace `cwd`, `hermesHome` hidden. */
async function sandboxed(
  options: { network?: boolean; env?: Record<string, string>; base?: string } = {},
): Promise<{ test: TestToolContext; hermesHome: string; outside: string; started: RunningCommand[] }> {
  const parent = await temporaryDirectory('hermes-sandbox-', options.base);
  const cwd = join(parent, 'workspace');
  const hermesHome = join(parent, 'hermes-home');
  const outside = join(parent, 'outside');
  for (const directory of [cwd, hermesHome, outside]) await mkdir(directory);
  await writeFile(join(hermesHome, '.env'), 'API_SERVER_KEY=hk-sandbox-secret-0123456789\n');
  const sandbox: CommandSandbox = {
    kind: 'bwrap',
    executable: bwrap,
    workspace: cwd,
    writable: [],
    hidden: [hermesHome],
    network: options.network ?? true,
  };
  // Records the commands started, for their pid (bwrap's, the leader of the sandbox's process group).
  const local = createLocalCommandRunner();
  const started: RunningCommand[] = [];
  const commands: CommandRunner = {
    async start(input) {
      const running = await local.start(input);
      started.push(running);
      return running;
    },
  };
  const test = await createTestToolContext({
    cwd,
    sandbox,
    commands,
    env: options.env ?? { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  cleanups.push(() => test.cleanup());
  return { test, hermesHome, outside, started };
}

/** Host pids of every process whose process group is `group` (the sandbox's, led by bwrap). */
function processGroupMembers(group: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields[0] is the state, fields[2] the process group; zombies have exited.
      if (Number(fields[2]) === group && fields[0] !== 'Z') members.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return members;
}

describe('terminal in the bubblewrap sandbox', () => {
  it('writes land in the workspace; writing anywhere else fails, and /tmp is private', async () => {
    // Not below /tmp, which the sandbox replaces with its own: a folder the host can write.
    const { test, outside } = await sandboxed({ base: '/var/tmp' });
    const result = await test.run(terminal, {
      command: `echo inside > made-here.txt && cat made-here.txt; echo x > ${outside}/escaped.txt; echo y > /tmp/private.txt && echo tmp-ok; touch ${dirname(test.cwd)}/sibling.txt`,
    });
    expect(result.content).toContain('inside');
    expect(result.content).toContain(`${outside}/escaped.txt: Read-only file system`);
    expect(result.content).toContain('tmp-ok');
    expect(result.content).toMatch(/sibling\.txt'?: Read-only file system/);
    expect(await readFile(join(test.cwd, 'made-here.txt'), 'utf8')).toBe('inside\n');
    await expect(stat(join(outside, 'escaped.txt'))).rejects.toThrow();
    await expect(stat('/tmp/private.txt')).rejects.toThrow();
  }, 60_000);

  it('HERMES_HOME is an empty folder inside the sandbox', async () => {
    const { test, hermesHome } = await sandboxed();
    const result = await test.run(terminal, {
      command: `ls -A ${hermesHome}; echo "[$(ls -A ${hermesHome})]"; cat ${hermesHome}/.env`,
    });
    expect(result.content).toContain('[]');
    expect(result.content).toContain(`${hermesHome}/.env: No such file or directory`);
    expect(result.content).not.toContain('hk-sandbox-secret');
  }, 60_000);

  it("the parent's environment is out of reach: its own PID namespace shows no host process", async () => {
    const { test } = await sandboxed({ env: { PATH: process.env.PATH ?? '/usr/bin:/bin', VISIBLE: 'yes' } });
    // The test runner's environment holds PATH, HOME and whatever else the shell running vitest had.
    const result = await test.run(terminal, {
      command: `echo "ppid=$PPID"; cat /proc/${process.pid}/environ; echo; tr '\\0' '\\n' < /proc/$PPID/environ; ls /proc | grep -c '^[0-9]'`,
    });
    expect(result.content).toContain('ppid=1');
    expect(result.content).toContain(`/proc/${process.pid}/environ: No such file or directory`);
    // PID 1 of the sandbox is bwrap, which has the command's own (filtered) environment.
    expect(result.content).toContain('VISIBLE=yes');
    expect(result.content).not.toContain(`HOME=${process.env.HOME}`);
  }, 60_000);

  it('with the network off a connection to a 127.0.0.1 listener fails; with it on it succeeds', async () => {
    const server: Server = createServer((socket) => socket.end('hello\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    // A plain redirection: the approval parser reads it (it cannot read `3<>`, which would ask).
    const command = `head -1 < /dev/tcp/127.0.0.1/${port}`;
    const online = await sandboxed({ network: true });
    expect((await online.test.run(terminal, { command })).content).toBe('hello\n[exit code 0]');
    const offline = await sandboxed({ network: false });
    const refused = await offline.test.run(terminal, { command });
    expect(refused.content).toContain('Connection refused');
    expect(refused.content).not.toContain('hello');
  }, 60_000);

  it('a foreground timeout kills every process of the sandbox', async () => {
    const { test, started } = await sandboxed();
    const result = await test.run(terminal, { command: 'sleep 60 & sleep 60 & echo started; sleep 60', timeout: 2 });
    expect(result.content).toContain('started');
    expect(result.content).toContain('[timed out after 2 s]');
    const group = started[0]?.pid as number;
    expect(group).toBeGreaterThan(0);
    // Every sleep ran inside the sandbox, in the group bwrap leads; none is left.
    await vi.waitFor(() => expect(processGroupMembers(group)).toEqual([]), { timeout: 15_000 });
  }, 60_000);

  it('background processes: output is captured, stdin is fed, wait times out, and kill stops the whole group', async () => {
    const { test } = await sandboxed();
    const started = await test.run(terminal, {
      command: 'echo ready; sleep 60 & read line; echo "got $line"; sleep 60',
      background: true,
    });
    const { processId, pid } = started.structured as { processId: string; pid: number };
    await vi.waitFor(
      async () =>
        expect((await test.run(processTool, { action: 'log', process_id: processId })).content).toContain('ready'),
      { timeout: 15_000 },
    );
    await test.run(processTool, { action: 'write', process_id: processId, data: 'hello\n' });
    await vi.waitFor(
      async () =>
        expect((await test.run(processTool, { action: 'log', process_id: processId })).content).toContain('got hello'),
      { timeout: 15_000 },
    );
    const waited = await test.run(processTool, { action: 'wait', process_id: processId, timeout: 1 });
    expect(waited.content).toContain('still running');
    // bwrap, its PID 1, the shell and both sleeps share the group bwrap leads.
    expect(processGroupMembers(pid).length).toBeGreaterThanOrEqual(3);
    const killed = await test.run(processTool, { action: 'kill', process_id: processId });
    expect(killed.content).toBe(`Killed ${processId} (pid ${pid}) and its process group.`);
    await vi.waitFor(() => expect(processGroupMembers(pid)).toEqual([]), { timeout: 15_000 });
  }, 60_000);

  it('an interrupt stops a sandboxed foreground command and everything it started', async () => {
    const { test, started } = await sandboxed();
    const pending = test.run(terminal, { command: 'sleep 60 & echo started; sleep 60' });
    await vi.waitFor(() => expect(test.progress.map((update) => update.output ?? '').join('')).toContain('started'), {
      timeout: 15_000,
    });
    const group = started[0]?.pid as number;
    expect(processGroupMembers(group).length).toBeGreaterThanOrEqual(3);
    test.controller.abort();
    const result = await pending;
    expect(result.status).toBe('cancelled');
    await vi.waitFor(() => expect(processGroupMembers(group)).toEqual([]), { timeout: 15_000 });
  }, 60_000);
});

describe('choosing the sandbox', () => {
  it('an explicit bwrap that cannot start stops the host with a clear error, never a silent fallback', async () => {
    const home = await temporaryDirectory('hermes-sandbox-home-');
    const failure = await createTestHost({
      homeDir: home,
      config: { terminal: { sandbox: 'bwrap', bwrap_path: '/nonexistent/bwrap' } },
    }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(HermesError.isInstance(failure)).toBe(true);
    expect((failure as HermesError).code).toBe('sandbox_unavailable');
    expect((failure as Error).message).toContain('terminal.sandbox is "bwrap", but bubblewrap cannot start');
    expect((failure as Error).message).toContain('/nonexistent/bwrap');
  }, 60_000);

  it('a bwrap that starts but fails its trial run is refused the same way', async () => {
    const directory = await temporaryDirectory('hermes-broken-bwrap-');
    const broken = join(directory, 'bwrap');
    await writeFile(broken, '#!/bin/sh\necho "bwrap: no permission to create namespaces" >&2\nexit 1\n', {
      mode: 0o755,
    });
    await expect(resolveSandbox({ setting: 'bwrap', network: true, executable: broken })).rejects.toThrow(
      /bubblewrap cannot start: .*failed a trial run \(exit code 1\): bwrap: no permission to create namespaces/,
    );
    const auto = await resolveSandbox({ setting: 'auto', network: true, executable: broken });
    expect(auto).toMatchObject({ setting: 'auto', active: 'none', executable: null });
    expect(auto.reason).toContain('failed a trial run');
  }, 60_000);

  it('auto picks bwrap where it works, and the host says so; none keeps commands unconfined', async () => {
    const auto = await createTestHost({ config: { terminal: { sandbox: 'auto' } } });
    cleanups.push(() => auto.dispose());
    expect(auto.sandbox).toMatchObject({ setting: 'auto', active: 'bwrap', network: true, reason: null });
    const none = await createTestHost({ config: { terminal: { sandbox: 'none' } } });
    cleanups.push(() => none.dispose());
    expect(none.sandbox).toMatchObject({ setting: 'none', active: 'none', executable: null });
  }, 60_000);
});
