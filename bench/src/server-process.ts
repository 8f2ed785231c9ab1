/**
 * `apps/server` as a child process of a benchmark: its environment (scripted model, bench key,
 * info logs), the CPU-profile flags, and the URL read from its "listening" log line.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { CpuGroup } from './cgroups.js';

/**
 * `HERMES_BENCH_NODE_ARGS`: node options (space-separated) the agents of the stream paths and the turn-cost servers
 * are started with, e.g. V8 heap sizing to compare against their defaults (ADR 0085). Unset: none.
 */
export function agentNodeArguments(): string[] {
  return (process.env.HERMES_BENCH_NODE_ARGS ?? '').split(/\s+/).filter((argument) => argument !== '');
}

/**
 * `HERMES_V8_HEAP` from the harness's environment, when set, for the same processes (the agents' environment is
 * otherwise the bench's own): `node` or `small` measures those heap settings (ADR 0069, ADR 0078, ADR 0085).
 */
export function agentEnvironment(): Record<string, string> {
  const heap = process.env.HERMES_V8_HEAP;
  return heap ? { HERMES_V8_HEAP: heap } : {};
}

/** The API key every benchmark's server is started with. */
export const BENCH_KEY = 'bench-key-0123456789abcdefghij';

/**
 * Starts apps/server on port 0 with `home` as HERMES_HOME and the model at `modelUrl`, plus `env`;
 * resolves with the child and its URL. `group` is the CPU group it runs in. `profileDir` writes a CPU profile there when it exits on SIGTERM.
 * `entry` is another build's `apps/server/dist/main.js` (side-by-side.ts); by default the workspace's.
 */
export async function startBenchServer(options: {
  home: string;
  entry?: string;
  modelUrl: string;
  env?: Record<string, string>;
  profileDir?: string;
  /** The CPU group the server runs in (cgroups.ts); it is moved there as soon as it is spawned. */
  group?: CpuGroup | null;
}): Promise<{ child: ChildProcess; url: string }> {
  const entry =
    options.entry ??
    join(dirname(createRequire(import.meta.url).resolve('@hermes/server/package.json')), 'dist', 'main.js');
  const profile = options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`] : [];
  const child = spawn(process.execPath, [...agentNodeArguments(), ...profile, entry], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: options.home,
      HERMES_HOME: options.home,
      API_SERVER_PORT: '0',
      API_SERVER_KEY: BENCH_KEY,
      HERMES_LOG_LEVEL: 'info',
      HERMES_MODEL: 'custom:bench',
      HERMES_BASE_URL: options.modelUrl,
      ...agentEnvironment(),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  if (options.group && child.pid !== undefined) options.group.add(child.pid);
  const url = await new Promise<string>((resolve, reject) => {
    let stdout: string | undefined = '';
    // Keeps reading the log lines after the URL (a full pipe would stall the server), unkept.
    child.stdout?.on('data', (chunk: Buffer) => {
      if (stdout === undefined) return;
      stdout += chunk.toString();
      const line = stdout.split('\n').find((entry) => entry.includes('"msg":"listening"'));
      if (!line) return;
      stdout = undefined;
      resolve((JSON.parse(line) as { url: string }).url);
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { child, url };
}

/** Ends a child and waits for it (SIGTERM so `--cpu-prof` can write, SIGKILL after 10 s). */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
