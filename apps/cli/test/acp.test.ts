import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { runCleanups, spawnHermes } from './support/hermes-process.js';

afterEach(runCleanups);

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

/** Module hooks that refuse `@hermes/core/logger`, which `hermes acp` loads with the ACP SDK. */
const REFUSE_LOGGER = `export async function resolve(specifier, context, next) {
  if (specifier === '@hermes/core/logger') throw new Error('LOGGER-REFUSED');
  return next(specifier, context);
}`;

/** `hermes acp` on pipes, with the given module hooks registered before the CLI loads. */
function spawnAcp(hooks: string) {
  const register = `import { register } from 'node:module'; register(${JSON.stringify(
    `data:text/javascript,${encodeURIComponent(hooks)}`,
  )});`;
  const preload = `data:text/javascript,${encodeURIComponent(register)}`;
  const replies = new Map<number, (reply: Reply) => void>();
  const lines: Reply[] = [];
  const { child, exited, stderr } = spawnHermes(
    ['acp'],
    { prefix: 'hermes-acp-', nodeArgs: ['--import', preload], env: { HERMES_MODEL: 'custom:scripted' } },
    (line) => {
      const reply = JSON.parse(line) as Reply;
      lines.push(reply);
      if (reply.id !== undefined) replies.get(reply.id)?.(reply);
    },
  );
  const request = (id: number, method: string, params: Record<string, unknown>) =>
    new Promise<Reply>((resolve, reject) => {
      replies.set(id, resolve);
      void exited.then(() => reject(new Error(`hermes acp exited: ${stderr()}`)));
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  return { request, stderr, lines: () => lines, exited };
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

  it('answers initialize before the ACP SDK loads, once, and the SDK still sees it', async () => {
    // The logger loads with the SDK: refusing it ends the server right after the early answer.
    const refused = spawnAcp(REFUSE_LOGGER);
    const early = await refused.request(0, 'initialize', { protocolVersion: 1, clientCapabilities: {} });
    expect(early.result?.protocolVersion).toBe(1);
    await refused.exited;
    expect(refused.stderr()).toContain('LOGGER-REFUSED');

    // Served normally, the SDK reads the same request (it accepts session requests after it) and
    // its own answer is not sent a second time.
    const acp = spawnAcp('');
    const initialized = await acp.request(0, 'initialize', {
      protocolVersion: 1,
      clientCapabilities: { auth: { terminal: true } },
    });
    const listed = await acp.request(1, 'session/list', {});
    expect(listed.error).toBeUndefined();
    expect(listed.result?.sessions).toEqual([]);
    expect(acp.lines().filter((line) => line.id === 0)).toEqual([initialized]);
    expect(((initialized.result?.authMethods ?? []) as { id: string }[]).map((method) => method.id)).toEqual([
      'api-key-env',
      'hermes-setup',
    ]);
  });

  it('leaves a first line that is not a valid initialize to the SDK, which answers it as before', async () => {
    const acp = spawnAcp('');
    const early = await acp.request(0, 'session/list', {});
    expect(early.error?.code).toBe(-32600);
    const invalid = await acp.request(1, 'initialize', { protocolVersion: 'one' });
    expect(invalid.error?.code).toBe(-32602);
    const initialized = await acp.request(2, 'initialize', { protocolVersion: 1 });
    expect(initialized.result?.protocolVersion).toBe(1);
    expect(acp.lines()).toHaveLength(3);
  });
});
