import { findExecutable } from './executables.js';

/** Grace between SIGTERM and SIGKILL when a process group is stopped (spec/core.md §11.6). */
export const KILL_GRACE_MS = 5000;

/** `bash` when installed, else `sh` (spec/core.md §11.6). */
export function resolveShell(env: Readonly<Record<string, string>>): string {
  const path = env.PATH ?? process.env.PATH;
  return findExecutable('bash', path) ?? findExecutable('sh', path) ?? '/bin/sh';
}

/**
 * The shell invocation of a command: `bash --norc -c <command>` or `sh -c <command>`. Node's
 * stdin pipes are sockets, and bash reads `~/.bashrc` when its stdin is a socket (it takes that
 * for an rsh session) unless `--norc` is given; the user's rc file must not leak into commands.
 */
export function shellInvocation(
  command: string,
  env: Readonly<Record<string, string>>,
): { file: string; args: string[] } {
  const file = resolveShell(env);
  const isBash = file.endsWith('/bash') || file === 'bash';
  return { file, args: isBash ? ['--norc', '-c', command] : ['-c', command] };
}

/** Sends `signal` to the process group led by `pid`; false when the group no longer exists. */
export function signalProcessGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}
