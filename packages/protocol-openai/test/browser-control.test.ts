import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '@hermes/core';
import { createTestHost, type ModelScript, step, type TestHost, text, toolCall } from '@hermes/core/testing';
import { type ServerType, serve } from '@hono/node-server';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { BROWSER_CONTROL_PROTOCOL, createOpenAIApp, type OpenAIApp, principalOfKey } from '../src/index.js';

const KEY = 'browser-control-key-0123456789';
const SESSION = 'bc-session-1';

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON answers without narrowing each field.
type Json = any;

interface Rig {
  host: TestHost;
  api: OpenAIApp;
  base: string;
  client: OpenAI;
  post(path: string, body: unknown): Promise<Response>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startRig(script: ModelScript, enabled: boolean | undefined, configYaml?: string): Promise<Rig> {
  // Protocol-owned sections (`api_server`) are read from config.yaml.
  const homeDir = configYaml === undefined ? undefined : mkdtempSync(join(tmpdir(), 'hermes-browser-'));
  if (homeDir !== undefined) {
    writeFileSync(join(homeDir, 'config.yaml'), configYaml as string);
    cleanups.push(() => rmSync(homeDir, { recursive: true, force: true }));
  }
  const host = await createTestHost({
    script,
    clock: systemClock as never,
    config: { session: { auto_title: false } } as never,
    ...(homeDir === undefined ? {} : { homeDir }),
  });
  const api = createOpenAIApp({
    host,
    settings: { key: KEY },
    ...(enabled === undefined ? {} : { browserControl: { enabled } }),
  });
  const server: ServerType = await new Promise((resolve) => {
    const created = serve({ fetch: api.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(created));
  });
  const detach = api.browserControl.attach(server as never);
  cleanups.push(async () => {
    detach();
    api.close();
    (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await host.dispose();
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    host,
    api,
    base,
    client: new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0 }),
    post: (path, body) =>
      fetch(base + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
  };
}

const registration = (capabilities = ['browser_navigate', 'browser_snapshot', 'shell_exec']) => ({
  protocol_version: 1,
  session_id: SESSION,
  controller_id: 'ext-1',
  browser_profile_id: 'profile-default',
  capabilities,
  principal: 'someone-else',
});

async function chat(rig: Rig, content: string): Promise<string> {
  const completion = await rig.client.chat.completions.create(
    { model: 'hermes-agent', messages: [{ role: 'user', content }] },
    { headers: { 'X-Hermes-Session-Id': SESSION } },
  );
  return completion.choices[0]?.message.content ?? '';
}

/** A real WebSocket client playing the browser extension: answers commands like a browser would. */
function connectExtension(
  rig: Rig,
  subprotocols: string[],
  path = '/v1/browser-control/ws',
): Promise<{ socket: WebSocket; commands: Record<string, unknown>[] }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${rig.base.replace('http', 'ws')}${path}`, subprotocols);
    const commands: Record<string, unknown>[] = [];
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data));
      if (frame.type !== 'browser.controller.command') return;
      commands.push(frame);
      const result =
        frame.capability === 'browser_navigate'
          ? { url: frame.args.url, title: 'Example Domain' }
          : { text: 'Example Domain. This domain is for use in examples. [e1] More information' };
      socket.send(JSON.stringify({ type: 'browser.controller.result', id: frame.id, ok: true, result }));
    });
    socket.on('open', () => resolve({ socket, commands }));
    socket.on('unexpected-response', (_request, response) => reject(new Error(`HTTP ${response.statusCode}`)));
    socket.on('error', reject);
    cleanups.push(() => socket.terminate());
  });
}

describe('browser-extension control (spec §24, issue 16.6)', () => {
  it('terminates a controller socket that stops answering pings (api_server.ws_ping_interval_s)', async () => {
    const rig = await startRig([step(text('hello'))], true, 'api_server:\n  ws_ping_interval_s: 0.2\n');
    expect(await chat(rig, 'hi')).toBe('hello');
    const registered = (await (await rig.post('/v1/browser-control/register', registration())).json()) as Json;
    const silent = new WebSocket(`${rig.base.replace('http', 'ws')}/v1/browser-control/ws`, registered.subprotocols, {
      autoPong: false,
    });
    cleanups.push(() => silent.terminate());
    let pings = 0;
    silent.on('ping', () => {
      pings += 1;
    });
    const closed = new Promise<void>((resolve) => silent.on('close', () => resolve()));
    await new Promise((resolve) => silent.once('open', resolve));
    await closed;
    expect(pings).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it('is off by default: register answers 404 and the WebSocket is refused before the upgrade', async () => {
    const rig = await startRig([step(text('hi'))], undefined);
    const response = await rig.post('/v1/browser-control/register', registration());
    expect(response.status).toBe(404);
    expect(((await response.json()) as Json).error.code).toBe('not_found');
    await expect(connectExtension(rig, [BROWSER_CONTROL_PROTOCOL, 'hermes-browser-control-ticket.x'])).rejects.toThrow(
      'HTTP 404',
    );
  });

  it('a registered extension is driven by the browser tools the model calls, within its granted capabilities', async () => {
    const rig = await startRig(
      [
        step(text('hello')),
        step(toolCall('browser_navigate', { url: 'https://example.com/' }, 'call_nav')),
        step(toolCall('browser_snapshot', {}, 'call_snap')),
        step(toolCall('browser_click', { ref: 'e1' }, 'call_click')),
        step(text('The page is Example Domain.')),
      ],
      true,
    );
    expect(await chat(rig, 'hi')).toBe('hello');
    // Browser tools are not offered to a session without a controller.
    expect(rig.host.model.calls[0]?.tools.map((tool) => tool.name)).not.toContain('browser_navigate');

    const response = await rig.post('/v1/browser-control/register', registration());
    expect(response.status).toBe(200);
    const registered = (await response.json()) as Json;
    expect(registered.scope).toEqual({
      session_id: SESSION,
      controller_id: 'ext-1',
      browser_profile_id: 'profile-default',
      capabilities: ['browser_navigate', 'browser_snapshot'],
    });
    expect(registered.expires_at * 1000).toBeLessThanOrEqual(Date.now() + 30_000);

    const extension = await connectExtension(rig, registered.subprotocols);
    expect(extension.socket.protocol).toBe(BROWSER_CONTROL_PROTOCOL);
    expect(await chat(rig, 'what is on example.com?')).toBe('The page is Example Domain.');
    // Now the session has a controller lane: the model is offered the browser tools.
    expect(rig.host.model.calls[1]?.tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['browser_navigate', 'browser_snapshot', 'browser_click']),
    );

    expect(extension.commands.map((command) => [command.capability, command.args])).toEqual([
      ['browser_navigate', { url: 'https://example.com/' }],
      ['browser_snapshot', {}],
    ]);
    const toolResults = JSON.stringify(
      (rig.host.model.calls.at(-1)?.messages ?? []).filter((message) => (message as { role: string }).role === 'tool'),
    );
    expect(toolResults).toContain('Example Domain');
    expect(toolResults).toContain('[e1] More information');
    // browser_click was not granted: refused without reaching the browser.
    expect(toolResults).toContain('The browser controller was not granted browser_click.');
  });

  it('tickets are single-use, never read from the query string, and bound to the registering principal', async () => {
    const rig = await startRig([step(text('hello'))], true);
    await chat(rig, 'hi');
    const registered = (await (await rig.post('/v1/browser-control/register', registration())).json()) as Json;
    const ticket = registered.subprotocols[1].slice('hermes-browser-control-ticket.'.length);
    await expect(
      connectExtension(rig, [BROWSER_CONTROL_PROTOCOL], `/v1/browser-control/ws?ticket=${ticket}`),
    ).rejects.toThrow('HTTP 400');
    await expect(
      connectExtension(rig, [BROWSER_CONTROL_PROTOCOL, 'hermes-browser-control-ticket.forged']),
    ).rejects.toThrow('HTTP 401');
    await connectExtension(rig, registered.subprotocols);
    await expect(connectExtension(rig, registered.subprotocols)).rejects.toThrow('HTTP 401');

    // The client-sent `principal` was ignored: the controller belongs to the key's principal, and
    // another principal cannot take the session's browser lane.
    await expect(rig.api.browserControl.register('key:another', registration())).rejects.toMatchObject({
      status: 403,
    });
    await expect(rig.api.browserControl.register(principalOfKey(KEY), registration())).resolves.toMatchObject({
      scope: { session_id: SESSION },
    });
    const unknown = await rig.post('/v1/browser-control/register', { ...registration(), session_id: 'nope' });
    expect(unknown.status).toBe(404);
    const none = await rig.post('/v1/browser-control/register', registration(['shell_exec']));
    expect(none.status).toBe(400);
  });

  it('fails closed once the controller detaches: the tool errors, no other browser is used', async () => {
    const rig = await startRig(
      [
        step(text('hello')),
        step(toolCall('browser_navigate', { url: 'https://example.com/' }, 'call_nav')),
        step(text('could not browse')),
      ],
      true,
    );
    await chat(rig, 'hi');
    const registered = (await (await rig.post('/v1/browser-control/register', registration())).json()) as Json;
    const extension = await connectExtension(rig, registered.subprotocols);
    const closed = new Promise((resolve) => extension.socket.once('close', resolve));
    extension.socket.send(JSON.stringify({ type: 'browser.controller.detach', reason: 'user closed the tab' }));
    await closed;
    expect(await chat(rig, 'open example.com')).toBe('could not browse');
    const toolResults = JSON.stringify(rig.host.model.calls.at(-1)?.messages);
    expect(toolResults).toContain('No browser controller is connected to this session');
    expect(extension.commands).toEqual([]);
  });
});
