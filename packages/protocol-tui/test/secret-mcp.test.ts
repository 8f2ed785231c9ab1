import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture } from './support/client.js';

/** The core's stdio MCP test server (it resolves its SDK from packages/core). */
const STDIO_SERVER = fileURLToPath(new URL('../../core/test/fixtures/mcp/stdio-server.mjs', import.meta.url));

/** A `${NAME}` variable reference, as an MCP server's `env` is written in config.yaml. */
const reference = (name: string): string => `$${'{'}${name}}`;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the secret server request for an MCP server (§6.4, core §24.7)', () => {
  it('reload.mcp from a session asks its client for a missing variable; the answer connects the server', async () => {
    const gateway = await createFixture({
      config: {
        mcp_servers: {
          keyed: {
            command: process.execPath,
            args: [STDIO_SERVER],
            env: { TOKEN: reference('HERMES_GW_MCP_MISSING') },
          },
        },
        approvals: { mcp_reload_confirm: false },
      },
    });
    cleanups.push(() => gateway.dispose());
    const client = await gateway.connect();
    const { session_id } = await client.result('session.create', {});
    const reload = client.call('reload.mcp', { session_id, confirm: true });
    const request = await client.waitFor((frame) => frame.method === 'secret', 60_000);
    expect(request.params).toMatchObject({ env_var: 'HERMES_GW_MCP_MISSING' });
    expect(request.params.prompt).toContain('keyed');
    await client.result('request.answer', { id: request.id, result: { value: 'mcp-token-value' } });
    expect((await reload).result).toMatchObject({ status: 'reloaded' });
    expect(gateway.host.mcp.status()).toEqual([expect.objectContaining({ name: 'keyed', state: 'connected' })]);
    expect(readFileSync(join(gateway.host.homeDir, '.env'), 'utf8')).toContain('HERMES_GW_MCP_MISSING=mcp-token-value');
  }, 120_000);

  it('a server that failed at host start for a missing variable asks the first session client; the answer connects it', async () => {
    const gateway = await createFixture({
      config: {
        mcp_servers: {
          keyed: {
            command: process.execPath,
            args: [STDIO_SERVER],
            env: { TOKEN: reference('HERMES_GW_MCP_AT_START') },
          },
        },
      },
      connectMcp: true,
    });
    cleanups.push(() => gateway.dispose());
    // No client existed when the host started its servers: the server failed, naming the variable.
    await expect.poll(() => gateway.host.mcp.status()[0]?.state, { timeout: 60_000 }).toBe('failed');
    expect(gateway.host.mcp.status()[0]?.error).toContain('HERMES_GW_MCP_AT_START');
    const client = await gateway.connect();
    await client.result('session.create', {});
    const request = await client.waitFor((frame) => frame.method === 'secret', 60_000);
    expect(request.params).toMatchObject({ env_var: 'HERMES_GW_MCP_AT_START' });
    await client.result('request.answer', { id: request.id, result: { value: 'start-token-value' } });
    await expect.poll(() => gateway.host.mcp.status()[0]?.state, { timeout: 60_000, interval: 100 }).toBe('connected');
    expect(readFileSync(join(gateway.host.homeDir, '.env'), 'utf8')).toContain(
      'HERMES_GW_MCP_AT_START=start-token-value',
    );
  }, 120_000);
});
