import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ModelScript, type ScriptedServer, startScriptedOpenAIServer } from '@hermes/core/testing';
import WebSocket from 'ws';
import { createTestDatabase } from '../../../../packages/core/test/support/postgres.js';

/** `apps/server` as built, started as a real child process by the server tests. */
const main = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

/** What a test left to undo; run in reverse by {@link runCleanups} (register it with `afterEach`). */
export const cleanups: (() => Promise<void> | void)[] = [];

export async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

/** A fresh temporary folder, removed after the test. */
export function temp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface StartedServer {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  stdout: () => string;
  exited: Promise<number | null>;
}

/**
 * Starts `apps/server` on 127.0.0.1 port 0 with only `env` (plus PATH and HOME) and resolves with the
 * URL its "listening" log line names; rejects with its stderr when it exits first. Killed after the test.
 * `nodeArguments` go to node before the script (V8 flags that `NODE_OPTIONS` does not accept).
 */
export async function startServer(env: Record<string, string>, nodeArguments: string[] = []): Promise<StartedServer> {
  const child = spawn(process.execPath, [...nodeArguments, main], {
    env: { PATH: process.env.PATH ?? '', HOME: env.HERMES_HOME ?? tmpdir(), API_SERVER_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      for (const line of stdout.split('\n')) {
        if (line.includes('"msg":"listening"')) resolve((JSON.parse(line) as { url: string }).url);
      }
    });
    void exited.then((code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr, stdout: () => stdout, exited };
}

/**
 * Two apps/server instances on one fresh PostgreSQL database, both on one scripted model, each with its own
 * HERMES_HOME holding `configYaml`; the database, model and processes are removed after the test.
 */
export async function startInstancePair(
  script: ModelScript,
  options: { key: string; configYaml: string; env?: Record<string, string> },
): Promise<{ a: StartedServer; b: StartedServer; model: ScriptedServer; databaseUrl: string }> {
  const database = await createTestDatabase();
  cleanups.push(database.drop);
  const model = await startScriptedOpenAIServer({ script });
  cleanups.push(() => model.close());
  const env = () => {
    const home = temp('hermes-home-');
    writeFileSync(join(home, 'config.yaml'), options.configYaml);
    return {
      HERMES_HOME: home,
      HERMES_MODEL: 'custom:scripted',
      HERMES_BASE_URL: model.baseURL,
      API_SERVER_KEY: options.key,
      HERMES_DATABASE_URL: database.url,
      ...options.env,
    };
  };
  const a = await startServer(env());
  const b = await startServer(env());
  return { a, b, model, databaseUrl: database.url };
}

/** A scripted model server with an empty script (tests push steps), closed after the test. */
export async function scriptedModel(): Promise<ScriptedServer> {
  const model = await startScriptedOpenAIServer({ script: [] });
  cleanups.push(() => model.close());
  return model;
}

/** The environment of a server on `model` with API key `key`, no auto titles, and `configYaml` appended. */
export function scriptedServerEnv(key: string, model: ScriptedServer, configYaml = ''): Record<string, string> {
  const home = temp('hermes-home-');
  writeFileSync(join(home, 'config.yaml'), `session:\n  auto_title: false\n${configYaml}`);
  return { HERMES_HOME: home, HERMES_MODEL: 'custom:scripted', HERMES_BASE_URL: model.baseURL, API_SERVER_KEY: key };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Probes until `accept` takes the value (every 25 ms, at most `timeoutMs`); the error names `what` and the last value. */
export async function until<T>(
  probe: () => Promise<T> | T,
  accept: (value: T) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const started = Date.now();
  let last: T = await probe();
  while (!accept(last)) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: last ${JSON.stringify(last)}`);
    await sleep(25);
    last = await probe();
  }
  return last;
}

/** Resident memory of a process, in bytes; 0 once it is gone. */
export function residentBytes(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return Number(match?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/**
 * Makes the server collect its garbage, through the inspector it opens when started with
 * `NODE_OPTIONS=--inspect=127.0.0.1:0` (no route of the product is added for it), and resolves with its heap in use
 * after. A server with nothing to do may not run a full collection for minutes, so memory a test reads without this
 * can be garbage, not memory kept.
 */
export async function collectGarbage(server: StartedServer): Promise<number> {
  const url = /Debugger listening on (ws:\/\/\S+)/.exec(server.stderr())?.[1];
  if (url === undefined) throw new Error(`no inspector: ${server.stderr()}`);
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  let nextId = 0;
  type Reply = { id?: number; result?: { result?: { value?: string } } };
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<Reply>((resolve) => {
      nextId += 1;
      const id = nextId;
      const onMessage = (data: Buffer) => {
        const message = JSON.parse(data.toString()) as Reply;
        if (message.id !== id) return;
        socket.off('message', onMessage);
        resolve(message);
      };
      socket.on('message', onMessage);
      socket.send(JSON.stringify({ id, method, params }));
    });
  try {
    await call('HeapProfiler.enable');
    // Twice: what the first collection frees (finalisers, weak references) the second one takes.
    await call('HeapProfiler.collectGarbage');
    await new Promise((resolve) => setTimeout(resolve, 100));
    await call('HeapProfiler.collectGarbage');
    const usage = await call('Runtime.evaluate', {
      expression: 'JSON.stringify(process.memoryUsage())',
      returnByValue: true,
    });
    return (JSON.parse(usage.result?.result?.value ?? '{}') as { heapUsed: number }).heapUsed;
  } finally {
    socket.close();
  }
}
