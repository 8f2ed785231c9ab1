import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '@hermes/core';
import { createTestHost } from '@hermes/core/testing';
import { type ServerType, serve } from '@hono/node-server';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAIApp } from '../src/index.js';

const KEY = 'capabilities-key-0123456789';

interface Capabilities {
  features: Record<string, unknown>;
  endpoints: Record<string, unknown>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Serves the API over a home whose config.yaml is `configYaml`, as a user would configure it. */
async function capabilitiesWith(configYaml: string): Promise<Capabilities> {
  const homeDir = mkdtempSync(join(tmpdir(), 'hermes-caps-'));
  cleanups.push(() => rmSync(homeDir, { recursive: true, force: true }));
  writeFileSync(join(homeDir, 'config.yaml'), configYaml);
  const host = await createTestHost({ homeDir, clock: systemClock as never });
  const api = createOpenAIApp({ host, settings: { key: KEY } });
  const server: ServerType = await new Promise((resolve) => {
    const created = serve({ fetch: api.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(created));
  });
  cleanups.push(async () => {
    api.close();
    (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await host.dispose();
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0 });
  return (await client.get('/capabilities')) as Capabilities;
}

describe('GET /v1/capabilities advertises browser-extension control (issue 16.6)', () => {
  it('says false, with no browser-control endpoints, while the feature is off (the default)', async () => {
    const capabilities = await capabilitiesWith('session:\n  auto_title: false\n');
    expect(capabilities.features.browser_extension_control).toBe(false);
    expect(capabilities.endpoints).not.toHaveProperty('browser_control_register');
    expect(capabilities.endpoints).not.toHaveProperty('browser_control_ws');
  });

  it('says true, with the register and WebSocket endpoints, once api_server.browser_control.enabled is set', async () => {
    const capabilities = await capabilitiesWith('api_server:\n  browser_control:\n    enabled: true\n');
    expect(capabilities.features.browser_extension_control).toBe(true);
    expect(capabilities.endpoints.browser_control_register).toEqual({
      method: 'POST',
      path: '/v1/browser-control/register',
    });
    expect(capabilities.endpoints.browser_control_ws).toEqual({ method: 'GET', path: '/v1/browser-control/ws' });
  });
});
