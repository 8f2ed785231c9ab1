import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Reply {
  id?: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** Module hooks that refuse the root entry of `@hermes/core` (its `./logger` entry stays allowed). */
const REFUSE_CORE = `export async function resolve(specifier, context, next) {
  if (specifier === '@hermes/core') throw new Error('CORE-REFUSED');
  return next(specifier, context);
}`;

/** `hermes acp` on pipes, with the given module hooks registered before the CLI loads. */
function spawnAcp(hooks: string) {
  const home = mkdtempSync(join(tmpdir(), 'hermes-acp-'));
  const register = `import { register } from 'node:module'; register(${JSON.stringify(
    `data:text/javascript,${encodeURIComponent(hooks)}`,
  )});`;
  const preload = `data:text/javascript,${encodeURIComponent(register)}`;
  const child = spawn(process.execPath, ['--import', preload, bin, 'acp'], {
    env: { PATH: process.env.PATH ?? '', HOME: home, HERMES_HOME: home, HERMES_MODEL: 'custom:scripted' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await exited;
    rmSync(home, { recursive: true, force: true });
  });
  const replies = new Map<number, (reply: Reply) => void>();
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    for (let index = buffer.indexOf('\n'); index >= 0; index = buffer.indexOf('\n')) {
      const reply = JSON.parse(buffer.slice(0, index)) as Reply;
      buffer = buffer.slice(index + 1);
      if (reply.id !== undefined) replies.get(reply.id)?.(reply);
    }
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const request = (id: number, method: string, params: Record<string, unknown>) =>
    new Promise<Reply>((resolve, reject) => {
      replies.set(id, resolve);
      void exited.then(() => reject(new Error(`hermes acp exited: ${stderr}`)));
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  return { request, stderr: () => stderr };
}

describe('hermes acp', () => {
  it('answers initialize without importing @hermes/core, which loads with the host afterwards', async () => {
    const acp = spawnAcp(REFUSE_CORE);
    const initialized = await acp.request(0, 'initialize', { protocolVersion: 1, clientCapabilities: {} });
    expect(initialized.error).toBeUndefined();
    expect(initialized.result?.protocolVersion).toBe(1);
    // The first request that needs the host is where the core import happens, and fails here.
    const created = await acp.request(1, 'session/new', { cwd: tmpdir(), mcpServers: [] });
    expect(created.error?.code).toBe(-32603);
    expect(created.error?.message).toContain('CORE-REFUSED');
  });
});
