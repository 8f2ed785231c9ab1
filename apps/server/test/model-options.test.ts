import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { startScriptedOpenAIServer } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { connectGateway } from './support/gateway-client.js';
import { cleanups, runCleanups, startServer, temp } from './support/server-process.js';

const KEY = 'model-options-key-0123456789abcdef';
afterEach(runCleanups);

/** A loopback port nothing listens on: bound once by the OS, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface HttpRow {
  id: string;
  name: string;
  configured: boolean;
  is_current: boolean;
  models: { id: string }[];
  error: string | null;
}

/** The HTTP payload in the gateway's shape (tui-gateway §4.9): what `model.options` must answer. */
function asGateway(payload: { model: string; provider: string; providers: HttpRow[] }) {
  return {
    model: payload.model,
    provider: payload.provider,
    providers: payload.providers.map((row) => ({
      slug: row.id,
      name: row.name,
      models: row.models.map((model) => model.id),
      total_models: row.models.length,
      is_current: row.is_current,
      authenticated: row.configured,
      ...(row.error !== null ? { warning: row.error } : {}),
    })),
  };
}

describe('GET /api/model/options and model.options', () => {
  it('answer the same inventory with one probe policy, probing the current custom provider', async () => {
    const model = await startScriptedOpenAIServer({ script: [], models: ['scripted', 'listed-only'] });
    cleanups.push(() => model.close());
    const home = temp('hermes-home-');
    const offline = `http://127.0.0.1:${await closedPort()}/v1`;
    writeFileSync(
      join(home, 'config.yaml'),
      `session:\n  auto_title: false\nproviders:\n  offline:\n    base_url: ${offline}\n    models: [saved-o]\n`,
    );
    const server = await startServer({
      HERMES_HOME: home,
      HERMES_MODEL: 'custom:scripted',
      HERMES_BASE_URL: model.baseURL,
      API_SERVER_KEY: KEY,
    });
    const listings = () => model.requests.filter((request) => request.path.endsWith('/models')).length;
    const http = async (query = '') => {
      const response = await fetch(`${server.url}/api/model/options${query}`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      expect(response.status).toBe(200);
      return (await response.json()) as { model: string; provider: string; providers: HttpRow[] };
    };
    const gateway = await connectGateway(server, KEY);
    const rpc = async (params: Record<string, unknown>) => {
      const frame = await gateway.call('model.options', params);
      expect(frame.error).toBeUndefined();
      return frame.result;
    };

    // The current provider is the custom endpoint: the first open asks it, once, for both surfaces.
    const first = await http();
    expect(first).toMatchObject({ model: 'scripted', provider: 'custom' });
    const custom = first.providers.find((row) => row.id === 'custom');
    expect(custom?.models.map((entry) => entry.id)).toEqual(expect.arrayContaining(['scripted', 'listed-only']));
    expect(custom).toMatchObject({ is_current: true, error: null });
    expect(listings()).toBe(1);
    expect(await rpc({ include_unconfigured: true })).toEqual(asGateway(first));
    expect(listings()).toBe(1);

    // A refresh asks every saved custom provider; the offline one reports its error on both surfaces.
    const refreshed = await http('?refresh=1');
    expect(listings()).toBe(2);
    const offlineRow = refreshed.providers.find((row) => row.id === 'offline');
    expect(offlineRow?.models).toEqual([]);
    expect(offlineRow?.error).toMatch(/model listing failed: .* unreachable/);
    expect(await rpc({ include_unconfigured: true })).toEqual(asGateway(refreshed));
    const gatewayRefreshed = await rpc({ include_unconfigured: true, refresh: true });
    expect(listings()).toBe(3);
    expect(gatewayRefreshed).toEqual(asGateway(await http()));
  });
});
