import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { HermesError } from '../errors.js';
import { findExecutable } from './executables.js';
import { isInside } from './paths.js';

/** `terminal.sandbox`: `auto` uses bubblewrap where it works, `bwrap` requires it, `none` runs commands as they are. */
export type SandboxSetting = 'auto' | 'bwrap' | 'none';

/**
 * How one command is confined (issue 32): bubblewrap with the whole file system read-only, the
 * workspace (and `writable`) writable, `hidden` paths replaced by empty ones, a private `/tmp`,
 * its own PID namespace, and the network shared or cut.
 */
export interface CommandSandbox {
  kind: 'bwrap';
  /** Absolute path of the bwrap executable. */
  executable: string;
  /** The session's working directory: writable. */
  workspace: string;
  /** More writable paths (`terminal.sandbox_writable`); missing ones are skipped. */
  writable: readonly string[];
  /** Directories covered by an empty tmpfs and files covered by an empty one (HERMES_HOME, the store). */
  hidden: readonly string[];
  /** False: a network namespace of its own, with nothing but an unconnected loopback. */
  network: boolean;
}

/** Which sandbox the host uses, for `--check`, `/health/detailed` and logs. */
export interface SandboxStatus {
  /** The configured `terminal.sandbox`. */
  setting: SandboxSetting;
  /** What commands actually run in. */
  active: 'bwrap' | 'none';
  /** The bwrap executable in use, when active. */
  executable: string | null;
  network: boolean;
  /** Why bubblewrap is not in use (`auto` without a working bwrap), else null. */
  reason: string | null;
}

/**
 * The bwrap argument list that runs `file args…` confined by `sandbox`, in `cwd`. Later mounts win
 * over earlier ones, so the order is: everything read-only, then a private `/tmp`, the writable
 * workspace, and last the hidden paths (HERMES_HOME stays hidden even when the workspace holds it;
 * a workspace inside HERMES_HOME is bound again so that the user's chosen folder stays usable).
 * No `--new-session`: the host starts bwrap as the leader of its own session and process group
 * (detached), which has no controlling terminal to steal, and the sandboxed processes must stay in
 * that group so that killing the group stops all of them. `--die-with-parent` ends the sandbox with
 * bwrap; the PID namespace ends every process in it when its first process exits.
 */
export function bwrapArguments(
  sandbox: CommandSandbox,
  invocation: { file: string; args: readonly string[] },
  cwd: string,
): string[] {
  const args = ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--unshare-uts'];
  if (!sandbox.network) args.push('--unshare-net');
  args.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp');
  const bindWritable = (path: string) => args.push('--bind-try', path, path);
  bindWritable(sandbox.workspace);
  for (const path of sandbox.writable) bindWritable(path);
  for (const path of sandbox.hidden) {
    let directory = true;
    try {
      directory = statSync(path).isDirectory();
    } catch {
      // Missing: nothing to hide.
      continue;
    }
    if (directory) args.push('--tmpfs', path);
    else args.push('--ro-bind', '/dev/null', path);
    if (directory && isInside(sandbox.workspace, path) && sandbox.workspace !== path) bindWritable(sandbox.workspace);
  }
  args.push('--chdir', cwd, '--', invocation.file, ...invocation.args);
  return args;
}

/** The invocation to spawn: `invocation` itself, or bwrap around it when a sandbox is given. */
export function sandboxedInvocation(
  invocation: { file: string; args: string[] },
  sandbox: CommandSandbox | undefined,
  cwd: string,
): { file: string; args: string[] } {
  if (sandbox === undefined) return invocation;
  return { file: sandbox.executable, args: bwrapArguments(sandbox, invocation, cwd) };
}

/** How long the start-up probe may take. */
const PROBE_TIMEOUT_MS = 15_000;

const probes = new Map<string, Promise<{ ok: true; executable: string } | { ok: false; reason: string }>>();

/**
 * Runs `bwrap … true` once per executable and network setting (per process) and says whether it
 * worked: bubblewrap may be installed yet unusable (no user namespaces, a container that forbids
 * mounts).
 */
export function probeBwrap(
  executable: string | undefined,
  network: boolean,
  path: string | undefined = process.env.PATH,
): Promise<{ ok: true; executable: string } | { ok: false; reason: string }> {
  const resolved =
    executable === undefined || executable === ''
      ? findExecutable('bwrap', path)
      : isAbsolute(executable)
        ? executable
        : findExecutable(executable, path);
  if (resolved === null)
    return Promise.resolve({
      ok: false,
      reason: `${executable === undefined || executable === '' ? 'bwrap' : executable} was not found on PATH (install the bubblewrap package)`,
    });
  const key = `${resolved}\0${network}`;
  let probe = probes.get(key);
  if (probe === undefined) {
    probe = runProbe(resolved, network);
    probes.set(key, probe);
  }
  return probe;
}

function runProbe(
  executable: string,
  network: boolean,
): Promise<{ ok: true; executable: string } | { ok: false; reason: string }> {
  const args = bwrapArguments(
    { kind: 'bwrap', executable, workspace: '/', writable: [], hidden: [], network },
    { file: 'true', args: [] },
    '/',
  );
  return new Promise((resolve) => {
    let stderr = '';
    let settled = false;
    const finish = (result: { ok: true; executable: string } | { ok: false; reason: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const child = spawn(executable, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: '/usr/bin:/bin' } });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish({ ok: false, reason: `${executable} did not finish a trial run within ${PROBE_TIMEOUT_MS / 1000} s` });
    }, PROBE_TIMEOUT_MS);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-500);
    });
    child.once('error', (error) =>
      finish({ ok: false, reason: `${executable} could not be started: ${error.message}` }),
    );
    child.once('close', (code, signal) => {
      if (code === 0) finish({ ok: true, executable });
      else
        finish({
          ok: false,
          reason: `${executable} failed a trial run (${signal ?? `exit code ${code}`})${stderr.trim() === '' ? '' : `: ${stderr.trim()}`}`,
        });
    });
  });
}

/**
 * Decides the sandbox from the settings, probing bubblewrap once (issue 32). `auto` falls back to
 * `none` on Linux without a working bwrap (and says why); an explicit `bwrap` that cannot start
 * throws `sandbox_unavailable`, never a silent fallback.
 */
export async function resolveSandbox(options: {
  setting: SandboxSetting;
  network: boolean;
  executable?: string | undefined;
  path?: string | undefined;
}): Promise<SandboxStatus> {
  const none = (reason: string | null): SandboxStatus => ({
    setting: options.setting,
    active: 'none',
    executable: null,
    network: true,
    reason,
  });
  if (options.setting === 'none') return none(null);
  if (process.platform !== 'linux') {
    if (options.setting === 'bwrap')
      throw new HermesError(
        'sandbox_unavailable',
        `terminal.sandbox is "bwrap", but bubblewrap runs on Linux only (this is ${process.platform}). Set terminal.sandbox to "auto" or "none".`,
      );
    return none(`bubblewrap runs on Linux only (this is ${process.platform})`);
  }
  const probe = await probeBwrap(options.executable, options.network, options.path);
  if (probe.ok)
    return {
      setting: options.setting,
      active: 'bwrap',
      executable: probe.executable,
      network: options.network,
      reason: null,
    };
  if (options.setting === 'bwrap')
    throw new HermesError(
      'sandbox_unavailable',
      `terminal.sandbox is "bwrap", but bubblewrap cannot start: ${probe.reason}. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), fix terminal.bwrap_path, or set terminal.sandbox to "auto" or "none".`,
    );
  return none(probe.reason);
}
