import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLocalCommandRunner } from '../../src/tools/command-runner.js';
import { createProcessTool } from '../../src/tools/process-tool.js';
import { createTerminalTool } from '../../src/tools/terminal.js';
import type { CommandRunner, RunningCommand } from '../../src/tools/types.js';
import type { Clock } from '../../src/types.js';
import { approvals, createTestToolContext, isProcessAlive, type TestToolContext } from './context.js';

const terminal = createTerminalTool();
const processTool = createProcessTool();
const contexts: TestToolContext[] = [];

async function context(options: Parameters<typeof createTestToolContext>[0] = {}): Promise<TestToolContext> {
  const created = await createTestToolContext(options);
  contexts.push(created);
  return created;
}

afterEach(async () => {
  for (const created of contexts.splice(0)) await created.cleanup();
});

/** A runner that records what it was asked and the commands it started. */
function recordingRunner(): {
  runner: CommandRunner;
  inputs: Parameters<CommandRunner['start']>[0][];
  started: RunningCommand[];
} {
  const local = createLocalCommandRunner();
  const inputs: Parameters<CommandRunner['start']>[0][] = [];
  const started: RunningCommand[] = [];
  return {
    inputs,
    started,
    runner: {
      async start(input) {
        inputs.push(input);
        const running = await local.start(input);
        started.push(running);
        return running;
      },
    },
  };
}

function allProgress(test: TestToolContext): string {
  return test.progress.map((update) => update.output ?? '').join('');
}

describe('checklist', () => {
  it('17. an interrupt during a foreground sleep 30 kills the process group (pid gone) and the call ends cancelled', async () => {
    const recording = recordingRunner();
    const test = await context({ commands: recording.runner });
    const pending = test.run(terminal, { command: 'sleep 30 & echo "grandchild $!"; sleep 30' });
    await vi.waitFor(() => expect(allProgress(test)).toMatch(/grandchild \d+/), { timeout: 10_000 });
    const grandchild = Number(/grandchild (\d+)/.exec(allProgress(test))?.[1]);
    const pid = recording.started[0]?.pid as number;
    expect(isProcessAlive(pid)).toBe(true);
    expect(isProcessAlive(grandchild)).toBe(true);

    test.controller.abort();
    const result = await pending;
    expect(result.status).toBe('cancelled');
    expect(result.content).toBe(`grandchild ${grandchild}\n[cancelled]`);
    expect(result.structured).toMatchObject({ cancelled: true, timedOut: false, exitCode: null, signal: 'SIGTERM' });
    expect(isProcessAlive(pid)).toBe(false);
    await vi.waitFor(() => expect(isProcessAlive(grandchild)).toBe(false), { timeout: 10_000 });
  });

  it('32. a background terminal command can be polled, its log read, and killed through process', async () => {
    const test = await context();
    const started = await test.run(terminal, {
      command: 'for i in 1 2 3; do echo "tick $i"; done; sleep 30',
      background: true,
    });
    expect(started.content).toMatch(
      /^Started background process proc_\d+ \(pid \d+\)\. Use the process tool to read its output or stop it\.$/,
    );
    const { processId, pid } = started.structured as { processId: string; pid: number };
    expect(started.displayMetadata).toEqual({ processId });

    let polled = '';
    await vi.waitFor(
      async () => {
        const poll = await test.run(processTool, { action: 'poll', process_id: processId });
        expect(poll.content).toMatch(new RegExp(`^${processId} is running \\(pid ${pid}, runtime \\d+s\\)\\.`));
        polled += poll.content.split('\n').slice(1).join('\n');
        expect(polled).toContain('tick 3');
      },
      { timeout: 10_000 },
    );
    const again = await test.run(processTool, { action: 'poll', process_id: processId });
    expect(again.content.split('\n')[1]).toBe('(no new output)');

    const log = await test.run(processTool, { action: 'log', process_id: processId });
    expect(log.content).toBe(
      `${processId} is running (pid ${pid}, runtime ${/runtime (\d+s)/.exec(log.content)?.[1]}). — lines 1–3 of 3\ntick 1\ntick 2\ntick 3`,
    );
    const window = await test.run(processTool, { action: 'log', process_id: processId, offset: 2, lines: 1 });
    expect(window.content.endsWith('lines 2–2 of 3\ntick 2')).toBe(true);

    const killed = await test.run(processTool, { action: 'kill', process_id: processId });
    expect(killed.content).toBe(`Killed ${processId} (pid ${pid}) and its process group.`);
    expect(isProcessAlive(pid)).toBe(false);
    const list = await test.run(processTool, { action: 'list' });
    expect(list.content).toContain(`${processId}  been killed  pid ${pid}`);
  });

  it('32. env run through terminal does not show OPENAI_API_KEY set in the host env', async () => {
    const test = await context({
      env: {
        ...process.env,
        OPENAI_API_KEY: 'sk-host-secret',
        GITHUB_TOKEN: 'ghp-secret',
        ALLOWED_TOKEN: 'kept',
        HARMLESS_SETTING: 'yes',
      },
      envPassthrough: ['ALLOWED_TOKEN'],
    });
    const result = await test.run(terminal, { command: 'env' });
    expect(result.status).toBe('completed');
    expect(result.content).toContain('HARMLESS_SETTING=yes');
    expect(result.content).toContain('ALLOWED_TOKEN=kept');
    expect(result.content).not.toContain('OPENAI_API_KEY');
    expect(result.content).not.toContain('sk-host-secret');
    expect(result.content).not.toContain('GITHUB_TOKEN');
    const background = await test.run(terminal, { command: 'env; sleep 30', background: true });
    const { processId } = background.structured as { processId: string };
    await vi.waitFor(async () => {
      const log = await test.run(processTool, { action: 'log', process_id: processId });
      expect(log.content).toContain('HARMLESS_SETTING=yes');
      expect(log.content).not.toContain('OPENAI_API_KEY');
    });
  });
});

describe('terminal foreground', () => {
  it('returns output then the exit code; a non-zero exit is completed', async () => {
    const test = await context();
    const result = await test.run(terminal, { command: 'echo out; exit 3' });
    expect(result.content).toBe('out\n[exit code 3]');
    expect(result.status).toBe('completed');
    expect(result.isError).toBeUndefined();
    expect(result.structured).toMatchObject({
      exitCode: 3,
      signal: null,
      timedOut: false,
      cancelled: false,
      cwd: test.cwd,
      truncated: false,
    });
  });

  it('merges stderr with stdout', async () => {
    const test = await context();
    const result = await test.run(terminal, { command: 'echo to-stdout; echo to-stderr >&2' });
    expect(result.content).toContain('to-stdout\n');
    expect(result.content).toContain('to-stderr\n');
    expect(result.content.endsWith('[exit code 0]')).toBe(true);
  });

  it('streams output as progress', async () => {
    const test = await context();
    await test.run(terminal, { command: 'for i in 1 2 3; do echo "n$i"; done' });
    expect(allProgress(test)).toBe('n1\nn2\nn3\n');
  });

  it('runs in a fresh process each time: cd does not persist, workdir does', async () => {
    const test = await context();
    await mkdir(join(test.cwd, 'sub'));
    const first = await test.run(terminal, { command: 'cd sub && pwd' });
    expect(first.content).toBe(`${join(test.cwd, 'sub')}\n[exit code 0]`);
    expect((await test.run(terminal, { command: 'pwd' })).content).toBe(`${test.cwd}\n[exit code 0]`);
    const inSub = await test.run(terminal, { command: 'pwd', workdir: 'sub' });
    expect(inSub.content).toBe(`${join(test.cwd, 'sub')}\n[exit code 0]`);
    expect(inSub.structured).toMatchObject({ cwd: join(test.cwd, 'sub') });
    const missing = await test.run(terminal, { command: 'pwd', workdir: 'nope' });
    expect(missing.isError).toBe(true);
  });

  it('closes stdin', async () => {
    const test = await context();
    const result = await test.run(terminal, { command: 'cat; echo "read done"' });
    expect(result.content).toBe('read done\n[exit code 0]');
  });

  it('times out, kills the command and fails', async () => {
    const test = await context();
    const result = await test.run(terminal, { command: 'echo started; sleep 30', timeout: 0.5 });
    expect(result.status).toBe('failed');
    expect(result.isError).toBe(true);
    expect(result.content).toBe('started\n[timed out after 0.5 s]');
    expect(result.structured).toMatchObject({ timedOut: true, cancelled: false });
  });

  it('keeps the first 20,000 and the last 80,000 characters of long output', async () => {
    const test = await context();
    const result = await test.run(terminal, {
      command: "printf START; head -c 150000 /dev/zero | tr '\\0' a; printf END",
    });
    expect(result.structured).toMatchObject({ truncated: true, exitCode: 0 });
    expect(result.content.startsWith('START')).toBe(true);
    expect(result.content.indexOf('\n[… 50008 characters of output omitted …]\n')).toBe(20_000);
    expect(result.content.endsWith('END\n[exit code 0]')).toBe(true);
  });

  it('fails when the command cannot be started', async () => {
    const failing: CommandRunner = {
      async start() {
        throw new Error('spawn refused');
      },
    };
    const test = await context({ commands: failing });
    const result = await test.run(terminal, { command: 'echo hi' });
    expect(result).toEqual({ content: 'Could not start the command: spawn refused', isError: true });
  });

  it('shows the first line of the command, cut to 120 characters, as the title', () => {
    const long = `echo ${'x'.repeat(200)}\necho second`;
    expect(terminal.display?.({ command: long }, { cwd: '/' }).title).toBe(`echo ${'x'.repeat(115)}`);
  });
});

describe('terminal approvals', () => {
  it('23. rm -rf build asks once with recursive_delete; deny leaves the directory and ends denied', async () => {
    const test = await context({ approvals: [approvals.deny()] });
    await mkdir(join(test.cwd, 'build'));
    const result = await test.run(terminal, { command: 'rm -rf build' });
    expect(test.approvalRequests).toEqual([{ command: 'rm -rf build', cwd: test.cwd }]);
    expect(result).toEqual({
      content: 'Command not run: denied by the user. Choose another approach or ask the user.',
      status: 'denied',
    });
    expect((await stat(join(test.cwd, 'build'))).isDirectory()).toBe(true);
  });

  it('runs an approved dangerous command', async () => {
    const test = await context({ approvals: [approvals.once()] });
    await mkdir(join(test.cwd, 'build'));
    const result = await test.run(terminal, { command: 'rm -rf build' });
    expect(result.content).toBe('[exit code 0]');
    await expect(stat(join(test.cwd, 'build'))).rejects.toThrow();
  });

  it('does not ask for commands without a pattern key', async () => {
    const test = await context();
    await test.run(terminal, { command: 'echo safe' });
    expect(test.approvalRequests).toEqual([]);
  });

  it('26. never runs a blocklisted command and offers no approval', async () => {
    const test = await context({ approvals: [approvals.once()] });
    const result = await test.run(terminal, { command: 'rm -rf /' });
    expect(result).toEqual({
      content: 'Command not run: recursive delete of / is on the hard blocklist and never runs',
      status: 'denied',
    });
    expect(test.approvalRequests).toEqual([]);
  });

  it('26. denies without a callback, on timeout and on error, with a reason for each', async () => {
    const cases = [
      [
        approvals.noCallback(),
        "Command not run: it needs the user's approval and no approval callback is configured. Choose another approach or ask the user.",
      ],
      [
        approvals.timeout(),
        'Command not run: nobody answered the approval request in time, so it was denied. Choose another approach or ask the user.',
      ],
      [
        { approved: false, choice: null, source: 'error', cancelled: false, reason: 'callback threw' },
        'Command not run: the approval request failed (callback threw). Choose another approach or ask the user.',
      ],
      [
        {
          approved: false,
          choice: null,
          source: 'smart',
          cancelled: false,
          reason: 'the auxiliary model rated it dangerous',
        },
        'Command not run: the auxiliary model rated it dangerous. Choose another approach or ask the user.',
      ],
    ] as const;
    for (const [outcome, text] of cases) {
      const test = await context({ approvals: [outcome] });
      expect(await test.run(terminal, { command: 'git push --force' })).toEqual({ content: text, status: 'denied' });
    }
  });

  it('an interrupt during the approval wait cancels the call', async () => {
    const test = await context({ approvals: [approvals.cancelled()] });
    const result = await test.run(terminal, { command: 'git reset --hard' });
    expect(result.status).toBe('cancelled');
  });

  it('asks for background commands too', async () => {
    const test = await context({ approvals: [approvals.deny()] });
    const result = await test.run(terminal, { command: 'sudo sleep 30', background: true });
    expect(result.status).toBe('denied');
    expect(test.ctx.processes.list(test.ctx.sessionId)).toEqual([]);
  });
});

describe('terminal sudo', () => {
  it('feeds the password from the sudo callback to sudo -S on stdin, never in the command or the result', async () => {
    const inputs: Parameters<CommandRunner['start']>[0][] = [];
    const local = createLocalCommandRunner();
    const runner: CommandRunner = {
      async start(input) {
        inputs.push(input);
        // Stand in for sudo (not installed in every test environment): echo what it would read.
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
        return local.start({ ...input, command: 'read password; echo "password read: ${#password} characters"' });
      },
    };
    const test = await context({
      commands: runner,
      approvals: [approvals.once()],
      sudoPassword: async () => 'hunter2',
    });
    const result = await test.run(terminal, { command: 'sudo apt-get update' });
    expect(test.sudoRequests).toEqual(['sudo apt-get update']);
    expect(inputs[0]?.command).toBe("sudo -S -p '' apt-get update");
    expect(inputs[0]?.stdin).toBe('hunter2\n');
    expect(result.content).toBe('password read: 7 characters\n[exit code 0]');
    expect(JSON.stringify(result)).not.toContain('hunter2');
  });

  it('runs the command unchanged, with stdin closed, when the sudo callback declines', async () => {
    const recording = recordingRunner();
    const test = await context({ commands: recording.runner, approvals: [approvals.once()] });
    await test.run(terminal, { command: 'sudo true; echo after' });
    expect(recording.inputs[0]?.command).toBe('sudo true; echo after');
    expect(recording.inputs[0]?.stdin).toBeUndefined();
  });

  it('does not ask for commands that do not start with sudo', async () => {
    const test = await context();
    await test.run(terminal, { command: 'echo sudo' });
    expect(test.sudoRequests).toEqual([]);
  });
});

describe('local command runner', () => {
  it('writes the given stdin text and closes it', async () => {
    const runner = createLocalCommandRunner();
    const running = await runner.start({
      sessionId: 's',
      callId: 'c',
      command: 'read line; echo "got $line"; cat',
      cwd: process.cwd(),
      env: { PATH: process.env.PATH ?? '' },
      outputByteLimit: 1000,
      stdin: 'abc\nrest\n',
    });
    const outcome = await running.wait({ timeoutMs: 10_000, signal: new AbortController().signal });
    expect(outcome).toEqual({ exitCode: 0, signal: null, timedOut: false, cancelled: false });
    expect(running.output()).toEqual({ text: 'got abc\nrest\n', truncated: false });
    await running.release();
  });

  it('kills a command that ignores SIGTERM with SIGKILL after the grace period', async () => {
    // The grace timer runs on the injected clock, fired here by hand instead of waiting 5 s.
    const timers: { fn: () => void; ms: number }[] = [];
    const clock: Clock = {
      now: () => 0,
      sleep: async () => {},
      setTimer(fn, ms) {
        timers.push({ fn, ms });
        return () => {};
      },
    };
    const runner = createLocalCommandRunner({ clock });
    const running = await runner.start({
      sessionId: 's',
      callId: 'c',
      command: "trap '' TERM; echo ready; sleep 30",
      cwd: process.cwd(),
      env: { PATH: process.env.PATH ?? '' },
      outputByteLimit: 1000,
    });
    await vi.waitFor(() => expect(running.output().text).toBe('ready\n'));
    const killed = running.kill();
    const grace = timers.find((timer) => timer.ms === 5000);
    expect(grace).toBeDefined();
    expect(isProcessAlive(running.pid as number)).toBe(true);
    grace?.fn();
    await killed;
    const outcome = await running.wait({ timeoutMs: 10_000, signal: new AbortController().signal });
    expect(outcome.signal).toBe('SIGKILL');
    expect(isProcessAlive(running.pid as number)).toBe(false);
    await running.release();
  });
});
