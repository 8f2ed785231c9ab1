import { type ChildProcess, spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { systemClock } from '../clock.js';
import type { Clock } from '../types.js';
import { HeadTailBuffer } from './output-buffer.js';
import { sandboxedInvocation } from './sandbox.js';
import { KILL_GRACE_MS, shellInvocation, signalProcessGroup } from './shell.js';
import type { CommandRunner, RunningCommand } from './types.js';

/** How long to wait for output pipes to close after the shell exited (its own `&` children may hold them). */
const PIPE_DRAIN_MS = 1000;

/** Options of {@link createLocalCommandRunner}. */
export interface LocalCommandRunnerOptions {
  clock?: Clock;
}

/**
 * The default command-runner seam (spec/core.md §24.2): `bash -c` (or `sh -c`) in a new process
 * group, stdin closed (or fed the given text, for `sudo -S`), stdout and stderr merged in arrival
 * order and capped to the first 20% and last 80% of `outputByteLimit` characters. Killing sends
 * SIGTERM to the whole group, then SIGKILL after 5 s.
 *
 * Background children a command starts with `&` are not waited for once the shell has exited;
 * they keep running (long-running processes belong to `terminal` with `background: true`).
 */
export function createLocalCommandRunner(options: LocalCommandRunnerOptions = {}): CommandRunner {
  const clock = options.clock ?? systemClock;
  return {
    async start(input) {
      const invocation = sandboxedInvocation(shellInvocation(input.command, input.env), input.sandbox, input.cwd);
      const child = spawn(invocation.file, invocation.args, {
        cwd: input.cwd,
        env: { ...input.env },
        detached: true,
        stdio: [input.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
      if (input.stdin !== undefined && child.stdin !== null) {
        child.stdin.on('error', () => {
          // The command may exit without reading its input.
        });
        child.stdin.end(input.stdin);
      }
      const headChars = Math.floor(input.outputByteLimit * 0.2);
      return new LocalRunningCommand(
        child,
        new HeadTailBuffer(headChars, input.outputByteLimit - headChars),
        clock,
        input.onOutput,
      );
    },
  };
}

class LocalRunningCommand implements RunningCommand {
  readonly pid: number | null;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly closed: Promise<void>;
  private exitStatus: { code: number | null; signal: NodeJS.Signals | null } | null = null;

  constructor(
    private readonly child: ChildProcess,
    private readonly buffer: HeadTailBuffer,
    private readonly clock: Clock,
    onOutput: ((chunk: string) => void) | undefined,
  ) {
    this.pid = child.pid ?? null;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitStatus = { code, signal };
        resolve(this.exitStatus);
      });
    });
    this.closed = new Promise((resolve) => child.once('close', () => resolve()));
    for (const stream of [child.stdout, child.stderr]) {
      if (stream === null) continue;
      const decoder = new StringDecoder('utf8');
      stream.on('data', (chunk: Buffer) => {
        const text = decoder.write(chunk);
        if (text === '') return;
        this.buffer.append(text);
        onOutput?.(text);
      });
      stream.on('end', () => {
        const rest = decoder.end();
        if (rest !== '') {
          this.buffer.append(rest);
          onOutput?.(rest);
        }
      });
    }
  }

  async wait(options: { timeoutMs: number; signal: AbortSignal }) {
    let timedOut = false;
    let cancelled = false;
    if (this.exitStatus === null) {
      let cancelTimer = () => {};
      let onAbort = () => {};
      const stopped = new Promise<'timeout' | 'abort'>((resolve) => {
        cancelTimer = this.clock.setTimer(() => resolve('timeout'), options.timeoutMs);
        onAbort = () => resolve('abort');
        if (options.signal.aborted) resolve('abort');
        else options.signal.addEventListener('abort', onAbort, { once: true });
      });
      const first = await Promise.race([this.exited.then(() => 'exit' as const), stopped]);
      cancelTimer();
      options.signal.removeEventListener('abort', onAbort);
      if (first === 'timeout') timedOut = true;
      if (first === 'abort') cancelled = true;
      if (first !== 'exit') await this.kill();
    }
    const status = await this.exited;
    await this.drain();
    return { exitCode: status.code, signal: status.signal, timedOut, cancelled };
  }

  output() {
    return this.buffer.text();
  }

  async kill(): Promise<void> {
    if (this.exitStatus !== null || this.pid === null) return;
    signalProcessGroup(this.pid, 'SIGTERM');
    const pid = this.pid;
    // SIGKILL the group after the grace period even when the leader is gone: a child that
    // ignores SIGTERM must not outlive the call.
    this.clock.setTimer(() => signalProcessGroup(pid, 'SIGKILL'), KILL_GRACE_MS);
    await this.exited;
  }

  async release(): Promise<void> {
    // Releasing a command that still runs stops it: nothing could read or kill it afterwards.
    if (this.exitStatus === null) await this.kill();
    await this.drain();
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
    this.child.stdin?.destroy();
  }

  private async drain(): Promise<void> {
    if (this.exitStatus === null) return;
    let cancel = () => {};
    await Promise.race([
      this.closed,
      new Promise<void>((resolve) => (cancel = this.clock.setTimer(resolve, PIPE_DRAIN_MS))),
    ]);
    cancel();
  }
}
