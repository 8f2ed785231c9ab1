import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startScriptedOpenAIServer } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { cleanups, runCleanups, startServer, temp } from './support/server-process.js';

const KEY = 'ticket-test-key-0123456789abcdef';
afterEach(runCleanups);

/** Opens the gateway with a ticket offered as browsers do, and reports how it ended. */
function offerTicket(url: string, ticket: string): Promise<{ code: number; protocol: string; firstFrame?: string }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${url.replace('http', 'ws')}/api/ws`, [
      'hermes-gateway-v1',
      `hermes-gateway-ticket.${ticket}`,
    ]);
    let firstFrame: string | undefined;
    socket.on('message', (data) => {
      firstFrame ??= String(data);
      socket.close(1000);
    });
    socket.on('close', (code) => resolve({ code, protocol: socket.protocol, ...(firstFrame ? { firstFrame } : {}) }));
    socket.on('error', () => {});
  });
}

describe('gateway tickets on apps/server', () => {
  it('POST /api/ws/ticket needs the API key and mints a single-use ticket the gateway admits once', async () => {
    const model = await startScriptedOpenAIServer({ script: [] });
    cleanups.push(() => model.close());
    const home = temp('hermes-home-');
    writeFileSync(join(home, 'config.yaml'), 'session:\n  auto_title: false\n');
    const server = await startServer({
      HERMES_HOME: home,
      HERMES_MODEL: 'custom:scripted',
      HERMES_BASE_URL: model.baseURL,
      API_SERVER_KEY: KEY,
    });
    const mint = (key?: string) =>
      fetch(`${server.url}/api/ws/ticket`, { method: 'POST', headers: key ? { authorization: `Bearer ${key}` } : {} });

    expect((await mint()).status).toBe(401);
    expect((await mint('not-the-key-0123456789')).status).toBe(401);
    const minted = await mint(KEY);
    expect(minted.status).toBe(200);
    const body = (await minted.json()) as { ticket: string; expires_at: number; subprotocols: string[] };
    expect(body.subprotocols).toEqual(['hermes-gateway-v1', `hermes-gateway-ticket.${body.ticket}`]);
    expect(body.expires_at - Date.now() / 1000).toBeLessThanOrEqual(31);

    const first = await offerTicket(server.url, body.ticket);
    expect(first.protocol).toBe('hermes-gateway-v1');
    expect(JSON.parse(first.firstFrame ?? '{}').params?.type).toBe('gateway.ready');
    // The ticket is spent: a second use, and a made-up one, are refused like a wrong token.
    expect(await offerTicket(server.url, body.ticket)).toMatchObject({ code: 4401 });
    expect(await offerTicket(server.url, 'made-up')).toMatchObject({ code: 4401 });
    // The key itself is not a ticket.
    expect(await offerTicket(server.url, KEY)).toMatchObject({ code: 4401 });
  });
});
