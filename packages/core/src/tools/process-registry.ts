import { type ChildProcess, spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { systemClock } from '../clock.js';
import { HermesError } from '../errors.js';
import type { Clock } from '../types.js';
import { RingBuffer } from './output-buffer.js';
import { sandboxedInvocation } from './sandbox.js';
import { KILL_GRACE_MS, shellInvocation, signalProcessGroup } from './shell.js';
import type { ProcessInfo, ProcessRegistry } from './types.js';

/** Output kept per background process (spec/core.md §11.6). */
export const PROCESS_BUFFER_CHARS = 1024 * 1024;
/** Running background processes allowed per session (spec/core.md §11.6). */
export const MAX_RUNNING_PROCESSES_PER_SESSION = 16;
/** Finished processes remembered per session; older ones are forgotten so buffers do not pile up. */
const MAX_FINISHED_PROCESSES_PER_SESSION = 64;
/** Characters of output returned by `wait`. */
const WAIT_TAIL_CHARS = 2000;

/** Options of {@link createProcessRegistry}. */
export interface ProcessRegistryOptions {
  /** Timestamps and the SIGKILL grace timer (default: the system clock). */
  clock?: Clock;
  /** Running processes allowed per session (default 16). */
  maxRunningPerSession?: number;
}

interface Entry {
  info: ProcessInfo;
  child: ChildProcess;
  buffer: RingBuffer;
  /** Absolute buffer offset of the session's previous poll. */
  pollOffset: number;
  exited: Promise<void>;
  /** Resolves when the output pipes are closed (after the exit, unless `&` children hold them). */
  closed: Promise<void>;
  killRequested: boolean;
}

/** How long `wait` lets output arrive after the exit before it reads the tail. */
const PIPE_DRAIN_MS = 1000;

/**
 * Creates the host's registry of background processes (spec/core.md §11.7). Ids are `proc_<n>`;
 * each entry belongs to one session and is invisible to the others. Processes run `bash -c` in
 * their own process group with a stdin pipe; stdout and stderr go, merged, to a 1 MiB ring
 * buffer. Killing signals the whole group: SIGTERM, then SIGKILL after 5 s.
 */
export function createProcessRegistry(options: ProcessRegistryOptions = {}): ProcessRegistry {
  const clock = options.clock ?? systemClock;
  const maxRunning = options.maxRunningPerSession ?? MAX_RUNNING_PROCESSES_PER_SESSION;
  const entries = new Map<string, Entry>();
  let nextId = 1;

  const snapshot = (entry: Entry): ProcessInfo => ({ ...entry.info });
  const find = (sessionId: string, id: string): Entry | undefined => {
    const entry = entries.get(id);
    return entry !== undefined && entry.info.sessionId === sessionId ? entry : undefined;
  };
  const sessionEntries = (sessionId: string): Entry[] =>
    [...entries.values()].filter((entry) => entry.info.sessionId === sessionId);
  const running = (entry: Entry) => entry.info.status === 'running';

  const forgetOldFinished = (sessionId: string) => {
    const finished = sessionEntries(sessionId).filter((entry) => !running(entry));
    for (const entry of finished.slice(0, Math.max(0, finished.length - MAX_FINISHED_PROCESSES_PER_SESSION))) {
      entries.delete(entry.info.id);
    }
  };

  const killEntry = async (entry: Entry): Promise<void> => {
    if (!running(entry) || entry.info.pid === null) return entry.exited;
    entry.killRequested = true;
    const pid = entry.info.pid;
    signalProcessGroup(pid, 'SIGTERM');
    clock.setTimer(() => signalProcessGroup(pid, 'SIGKILL'), KILL_GRACE_MS);
    await entry.exited;
  };

  return {
    async start(input) {
      if (sessionEntries(input.sessionId).filter(running).length >= maxRunning) {
        throw new HermesError(
          'process_limit',
          `This session already has ${maxRunning} running background processes; stop one with the process tool (action "kill") first.`,
        );
      }
      const invocation = sandboxedInvocation(shellInvocation(input.command, input.env), input.sandbox, input.cwd);
      const child = spawn(invocation.file, invocation.args, {
        cwd: input.cwd,
        env: { ...input.env },
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
      const id = `proc_${nextId}`;
      nextId += 1;
      const entry: Entry = {
        info: {
          id,
          sessionId: input.sessionId,
          pid: child.pid ?? null,
          command: input.command,
          cwd: input.cwd,
          status: 'running',
          exitCode: null,
          startedAt: clock.now(),
          endedAt: null,
        },
        child,
        buffer: new RingBuffer(PROCESS_BUFFER_CHARS),
        pollOffset: 0,
        exited: Promise.resolve(),
        closed: new Promise<void>((resolve) => child.once('close', () => resolve())),
        killRequested: false,
      };
      entry.exited = new Promise<void>((resolve) => {
        child.once('exit', (code) => {
          entry.info.status = entry.killRequested ? 'killed' : 'exited';
          entry.info.exitCode = code;
          entry.info.endedAt = clock.now();
          resolve();
          forgetOldFinished(input.sessionId);
        });
      });
      child.stdin?.on('error', () => {
        // Writing to a process that stopped reading is reported by `write`, not thrown.
      });
      for (const stream of [child.stdout, child.stderr]) {
        if (stream === null) continue;
        const decoder = new StringDecoder('utf8');
        stream.on('data', (chunk: Buffer) => entry.buffer.append(decoder.write(chunk)));
        stream.on('end', () => entry.buffer.append(decoder.end()));
      }
      entries.set(id, entry);
      return snapshot(entry);
    },

    list(sessionId) {
      return sessionEntries(sessionId).map(snapshot);
    },

    get(sessionId, id) {
      const entry = find(sessionId, id);
      return entry === undefined ? undefined : snapshot(entry);
    },

    poll(sessionId, id) {
      const entry = find(sessionId, id);
      if (entry === undefined) return undefined;
      const { text, dropped } = entry.buffer.since(entry.pollOffset);
      entry.pollOffset = entry.buffer.end;
      const output = dropped > 0 ? `[… ${dropped} characters dropped from the buffer …]\n${text}` : text;
      return { info: snapshot(entry), output };
    },

    log(sessionId, id, offset, lines) {
      const entry = find(sessionId, id);
      if (entry === undefined) return undefined;
      const all = entry.buffer.contents().split('\n');
      if (all[all.length - 1] === '') all.pop();
      const totalLines = all.length;
      // Negative offsets count from the end; positive ones are 1-based line numbers.
      const start = offset < 0 ? Math.max(0, totalLines + offset) : Math.max(0, offset - 1);
      return { info: snapshot(entry), text: all.slice(start, start + Math.max(0, lines)).join('\n'), totalLines };
    },

    async wait(sessionId, id, timeoutMs, signal) {
      const entry = find(sessionId, id);
      if (entry === undefined) return undefined;
      let timedOut = false;
      if (running(entry)) {
        let cancelTimer = () => {};
        let onAbort = () => {};
        const outcome = await Promise.race([
          entry.exited.then(() => 'exit' as const),
          new Promise<'timeout' | 'abort'>((resolve) => {
            cancelTimer = clock.setTimer(() => resolve('timeout'), timeoutMs);
            onAbort = () => resolve('abort');
            if (signal.aborted) resolve('abort');
            else signal.addEventListener('abort', onAbort, { once: true });
          }),
        ]);
        cancelTimer();
        signal.removeEventListener('abort', onAbort);
        if (outcome === 'abort') throw signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
        timedOut = outcome === 'timeout';
      }
      if (!running(entry)) {
        let cancelDrain = () => {};
        await Promise.race([
          entry.closed,
          new Promise<void>((resolve) => (cancelDrain = clock.setTimer(resolve, PIPE_DRAIN_MS))),
        ]);
        cancelDrain();
      }
      return { info: snapshot(entry), tail: entry.buffer.contents().slice(-WAIT_TAIL_CHARS), timedOut };
    },

    write(sessionId, id, data) {
      const entry = find(sessionId, id);
      if (entry === undefined || !running(entry) || entry.child.stdin === null || !entry.child.stdin.writable)
        return false;
      entry.child.stdin.write(data);
      return true;
    },

    async kill(sessionId, id) {
      const entry = find(sessionId, id);
      if (entry === undefined) return false;
      await killEntry(entry);
      return true;
    },

    async killSession(sessionId) {
      await Promise.all(sessionEntries(sessionId).map(killEntry));
    },

    async killAll() {
      await Promise.all([...entries.values()].map(killEntry));
    },

    runningCount(sessionId) {
      return sessionEntries(sessionId).filter(running).length;
    },
  };
}
