import { step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createWebSocketFixture, type Frame, type TestClient, type WebSocketFixture } from './support/client.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function webFixture(script: Parameters<typeof createWebSocketFixture>[0]): Promise<WebSocketFixture> {
  const created = await createWebSocketFixture(script);
  cleanups.push(() => created.dispose());
  return created;
}

/** Which tool raises which request, the arguments the model gives, and what the request must carry. */
const CASES: { tool: string; method: string; args: Record<string, unknown>; params: Record<string, unknown> }[] = [
  { tool: 'read_terminal', method: 'terminal.read', args: { count: 5 }, params: { count: 5 } },
  { tool: 'read_window_below', method: 'window.read', args: {}, params: {} },
  {
    tool: 'drive_preview',
    method: 'preview.act',
    args: { action: 'click', selector: '#go' },
    params: { action: 'click', selector: '#go' },
  },
  {
    tool: 'tour',
    method: 'tour',
    args: { action: 'start', steps: [{ selector: '#a', title: 'A' }] },
    params: { action: 'start', steps: [{ selector: '#a', title: 'A' }] },
  },
  {
    tool: 'request_login_code',
    method: 'vault.code',
    args: { site: 'github.com', hint: 'authenticator app' },
    params: { site: 'github.com', hint: 'authenticator app' },
  },
  {
    tool: 'unlock_password_manager',
    method: 'vault.unlock_prompt',
    args: { backend: 'bitwarden' },
    params: { backend: 'bitwarden', display_name: 'bitwarden' },
  },
  {
    tool: 'manage_connections',
    method: 'connection',
    args: { targets: [{ name: 'github', kind: 'mcp', action: 'enable' }], reason: 'read issues' },
    params: {
      reason: 'read issues',
      targets: [{ name: 'github', kind: 'mcp', action: 'enable' }],
      timeout_seconds: 300,
    },
  },
];

/** What a desktop-like client answers to each method. */
function answerFor(method: string): Record<string, unknown> {
  switch (method) {
    case 'terminal.read':
      return { value: JSON.stringify({ lines: ['$ make', 'ok 12 tests'] }) };
    case 'window.read':
      return { value: JSON.stringify({ app: 'Firefox', title: 'Docs' }) };
    case 'preview.act':
      return { value: JSON.stringify({ success: true, clicked: '#go' }) };
    case 'tour':
      return { value: JSON.stringify({ success: true, step: 0 }) };
    case 'vault.code':
      return { value: '424242' };
    case 'vault.unlock_prompt':
      return { value: 'correct horse battery staple' };
    case 'connection':
      return { settled_by: 'all_resolved', targets: [{ name: 'github', state: 'enabled', tools: ['list_issues'] }] };
    default:
      throw new Error(`unexpected ${method}`);
  }
}

async function capableClient(web: WebSocketFixture): Promise<TestClient> {
  const client = await web.open();
  const capabilities = await client.result('client.capabilities', { server_requests: true });
  expect(capabilities.server_requests).toEqual(expect.arrayContaining(CASES.map((entry) => entry.method)));
  return client;
}

describe('server→client requests raised by tools (§6.4, issue 16.6), over a real WebSocket', () => {
  it('each tool sends its request to the attached client and uses the answer', async () => {
    const script = [
      ...CASES.map((entry, index) => step(toolCall(entry.tool, entry.args, `call_${index}`))),
      step(text('all done')),
    ];
    const web = await webFixture({ script });
    const client = await capableClient(web);
    const answered: Frame[] = [];
    const stop = setInterval(() => {
      for (const frame of client.serverRequests()) {
        if (answered.includes(frame)) continue;
        answered.push(frame);
        client.send({ jsonrpc: '2.0', id: frame.id, result: answerFor(frame.method) });
      }
    }, 5);
    cleanups.push(() => clearInterval(stop));
    const { session_id: sid } = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: sid, text: 'use the client' });
    const done = await client.event('message.complete', sid);
    expect(done.payload.text).toBe('all done');

    expect(answered.map((frame) => frame.method)).toEqual(CASES.map((entry) => entry.method));
    for (const [index, entry] of CASES.entries()) {
      const frame = answered[index] as Frame;
      expect(frame.id).toMatch(/^srq-[0-9a-f]{12}$/);
      expect(frame.params).toMatchObject({ session_id: sid, ...entry.params });
    }
    const connection = answered[6] as Frame;
    expect(connection.params.op_id).toBe('call_6');
    expect(connection.params.deadline_at).toBeGreaterThan(Date.now() / 1000);

    // The answers reached the model as tool results.
    const joined = JSON.stringify(
      (web.host.model.calls.at(-1)?.messages ?? []).filter((message) => (message as Frame).role === 'tool'),
    );
    expect(joined).toContain('ok 12 tests');
    expect(joined).toContain('Firefox');
    expect(joined).toContain('clicked');
    expect(joined).toContain('424242');
    expect(joined).toContain('bitwarden is unlocked for this session');
    expect(joined).toContain('list_issues');
    // The master password goes to the client's vault, never to the model.
    expect(JSON.stringify(web.host.model.calls)).not.toContain('correct horse battery staple');
    expect(client.events('request.cancel', sid).map((event) => event.payload.reason)).toEqual(
      CASES.map(() => 'resolved'),
    );
  });

  it('a client that answers -32601 makes the tool fail at once with a clear error', async () => {
    const web = await webFixture({
      script: [step(toolCall('drive_preview', { action: 'click', ref: 'e1' }, 'call_act')), step(text('gave up'))],
    });
    const client = await capableClient(web);
    const { session_id: sid } = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: sid, text: 'click it' });
    const request = await client.waitFor((frame) => frame.method === 'preview.act');
    client.send({
      jsonrpc: '2.0',
      id: request.id,
      error: { code: -32601, message: 'no handler for server request: preview.act' },
    });
    // Well inside the 300 s request timeout: the decline settles it at once.
    const complete = await client.event('tool.complete', sid, () => true, 5000);
    expect(JSON.stringify(complete.payload)).toContain(
      'The client could not handle preview.act: no attached client can answer preview.act requests',
    );
    const done = await client.event('message.complete', sid);
    expect(done.payload.text).toBe('gave up');
    expect(client.events('request.cancel', sid).map((event) => event.payload)).toEqual([
      { id: request.id, method: 'preview.act', reason: 'resolved' },
    ]);
    const toolMessage = web.host.model.calls[1]?.messages.find((message) => (message as Frame).role === 'tool');
    expect(JSON.stringify(toolMessage)).toContain('no attached client can answer preview.act requests');
  });

  it('a WebSocket client that never declared server_requests gets no frame and the tool fails at once', async () => {
    const web = await webFixture({
      script: [step(toolCall('read_terminal', {}, 'call_read')), step(text('no terminal then'))],
    });
    const client = await web.open();
    const { session_id: sid } = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: sid, text: 'read it' });
    const complete = await client.event('tool.complete', sid);
    expect(JSON.stringify(complete.payload)).toContain('no attached client can answer terminal.read requests');
    await client.event('message.complete', sid);
    expect(client.serverRequests()).toEqual([]);
  });

  it('an empty answer means the client had nothing: the tool says so instead of inventing content', async () => {
    const web = await webFixture({
      script: [step(toolCall('request_login_code', { site: 'example.com' }, 'call_code')), step(text('ok'))],
    });
    const client = await capableClient(web);
    const { session_id: sid } = await client.result('session.create', {});
    await client.result('prompt.submit', { session_id: sid, text: 'log in' });
    const request = await client.waitFor((frame) => frame.method === 'vault.code');
    client.send({ jsonrpc: '2.0', id: request.id, result: { value: '' } });
    const complete = await client.event('tool.complete', sid);
    expect(JSON.stringify(complete.payload)).toContain('The user did not give a code.');
  });
});
