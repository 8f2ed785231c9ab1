import { createServer } from 'node:net';
import { type ScriptedServer, startScriptedOpenAIServer } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createFixture, type GatewayFixture } from './support/client.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A loopback port nothing listens on: bound once by the OS, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function twoProviders(): Promise<{ gateway: GatewayFixture; live: ScriptedServer }> {
  const live = await startScriptedOpenAIServer({ script: [], models: ['live-a', 'live-b'] });
  cleanups.push(() => live.close());
  const port = await closedPort();
  const gateway = await createFixture({
    config: {
      model: { default: 'live:live-a' },
      providers: {
        live: { base_url: live.baseURL, models: ['live-a'] },
        offline: { base_url: `http://127.0.0.1:${port}/v1`, models: ['saved-o'] },
      },
    },
  });
  cleanups.push(() => gateway.dispose());
  return { gateway, live };
}

const listings = (server: ScriptedServer) =>
  server.requests.filter((request) => request.method === 'GET' && request.path.endsWith('/models')).length;

describe('model.options refresh semantics (§4.9, issue 16.6)', () => {
  it('a normal open probes only the current custom provider, once; the offline one is not asked', async () => {
    const { gateway, live } = await twoProviders();
    const client = await gateway.connect();
    const { session_id } = await client.result('session.create', {});

    const first = await client.result('model.options', { session_id });
    expect(first.provider).toBe('live');
    const liveEntry = first.providers.find((entry: { slug: string }) => entry.slug === 'live');
    expect(liveEntry).toMatchObject({ is_current: true, models: ['live-a', 'live-b'], total_models: 2 });
    expect(liveEntry.warning).toBeUndefined();
    // Not probed: its saved models, no warning even though its port is closed.
    const offlineEntry = first.providers.find((entry: { slug: string }) => entry.slug === 'offline');
    expect(offlineEntry).toMatchObject({ is_current: false, models: ['saved-o'] });
    expect(offlineEntry.warning).toBeUndefined();
    expect(listings(live)).toBe(1);

    // A second open is served from the cache.
    const second = await client.result('model.options', { session_id });
    expect(second.providers).toEqual(first.providers);
    expect(listings(live)).toBe(1);
  });

  it('refresh:true busts the cache and probes every saved custom provider; the offline one warns', async () => {
    const { gateway, live } = await twoProviders();
    const client = await gateway.connect();
    await client.result('model.options', {});
    expect(listings(live)).toBe(1);

    const refreshed = await client.result('model.options', { refresh: true });
    expect(listings(live)).toBe(2);
    const liveEntry = refreshed.providers.find((entry: { slug: string }) => entry.slug === 'live');
    expect(liveEntry.models).toEqual(['live-a', 'live-b']);
    const offlineEntry = refreshed.providers.find((entry: { slug: string }) => entry.slug === 'offline');
    expect(offlineEntry.models).toEqual([]);
    expect(offlineEntry.total_models).toBe(0);
    expect(offlineEntry.warning).toMatch(/model listing failed: http:\/\/127\.0\.0\.1:\d+\/v1\/models unreachable/);

    // The failed listing is remembered until the next refresh; the live one is not asked again.
    const reopened = await client.result('model.options', {});
    expect(listings(live)).toBe(2);
    expect(reopened.providers.find((entry: { slug: string }) => entry.slug === 'offline').warning).toBeDefined();
  });

  it('explicit_only lists configured models without asking any endpoint', async () => {
    const { gateway, live } = await twoProviders();
    const client = await gateway.connect();
    const result = await client.result('model.options', { explicit_only: true, refresh: true });
    expect(listings(live)).toBe(0);
    expect(result.providers.find((entry: { slug: string }) => entry.slug === 'live').models).toEqual(['live-a']);
  });
});
