import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScriptedServer } from '@hermes/core/testing';

const bin = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));

/** Run after each test (registered with `afterEach(runCleanups)`), last first. */
export const cleanups: (() => Promise<void> | void)[] = [];
export async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

export interface Frame {
  id?: string | number;
  method?: string;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
  params?: { type?: string; session_id?: string; payload?: Record<string, unknown> } & Record<string, unknown>;
}

/**
 * A `hermes` child on stdio pipes with a fresh home, killed and its home removed by `runCleanups`. Each stdout line
 * goes to `onLine`; stderr is kept for error messages.
 */
export function spawnHermes(
  args: string[],
  options: { prefix: string; nodeArgs?: string[]; env: Record<string, string>; config?: string },
  onLine: (line: string) => void,
) {
  const home = mkdtempSync(join(tmpdir(), options.prefix));
  if (options.config !== undefined) writeFileSync(join(home, 'config.yaml'), options.config);
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), bin, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: home, HERMES_HOME: home, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await exited;
    rmSync(home, { recursive: true, force: true });
  });
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    for (let index = buffer.indexOf('\n'); index >= 0; index = buffer.indexOf('\n')) {
      const line = buffer.slice(0, index);
      buffer = buffer.slice(index + 1);
      onLine(line);
    }
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  return { child, home, exited, stderr: () => stderr };
}

/** A `hermes gateway` child on stdio pipes, with every stdout frame collected in order. */
export function spawnGateway(scripted: ScriptedServer, options: { path?: string; env?: Record<string, string> } = {}) {
  const frames: Frame[] = [];
  const waiters = new Set<() => void>();
  const { child, home, exited, stderr } = spawnHermes(
    ['gateway'],
    {
      prefix: 'hermes-gateway-',
      config: 'session:\n  auto_title: false\n',
      env: {
        ...(options.path !== undefined ? { PATH: options.path } : {}),
        HERMES_MODEL: 'custom:scripted',
        HERMES_BASE_URL: scripted.baseURL,
        ...options.env,
      },
    },
    (line) => {
      frames.push(JSON.parse(line) as Frame);
      for (const wake of waiters) wake();
    },
  );
  const waitFor = (match: (frame: Frame) => boolean): Promise<Frame> =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = frames.find(match);
        if (found) {
          waiters.delete(check);
          resolve(found);
        }
      };
      waiters.add(check);
      void exited.then(() => reject(new Error(`the gateway exited: ${stderr()}`)));
      check();
    });
  const call = async (id: string, method: string, params: Record<string, unknown>) => {
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return waitFor((frame) => frame.id === id);
  };
  return {
    child,
    home,
    frames,
    waitFor,
    call,
    send: (frame: unknown) => child.stdin.write(`${JSON.stringify(frame)}\n`),
  };
}
