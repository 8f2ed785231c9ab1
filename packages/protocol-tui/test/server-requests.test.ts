import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { systemClock } from '@hermes/core';
import { createTestHost, step, text, toolCall } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayCore } from '../src/gateway-core.js';
import { createLinkedPair } from '../src/wire/index.js';
import { createFixture, createWebSocketFixture, type GatewayFixture, sleep, TestClient } from './support/client.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fixture(options: Parameters<typeof createFixture>[0] = {}): Promise<GatewayFixture> {
  const created = await createFixture(options);
  cleanups.push(() => created.dispose());
  return created;
}

/** A folder to delete, in its own workspace: the session runs there (commands write only to their workspace in the sandbox). */
function victim(): string {
  const dir = mkdtempSync(join(tmpdir(), 'hermes-victim-'));
  mkdirSync(join(dir, 'target'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'target');
}

const clarifyScript = (question = 'Pick one?') => [
  step(toolCall('clarify', { question, choices: ['x', 'y'] }, 'call_clarify')),
  step(text('thanks')),
];

async function startTurn(client: TestClient, params: Record<string, unknown> = {}) {
  const created = await client.result('session.create', params);
  await client.result('prompt.submit', { session_id: created.session_id, text: 'go' });
  return created as { session_id: string; stored_session_id: string };
}

describe('server requests (§12 checks 50–59)', () => {
  it('50. an answered clarify resolves with the answer and one request.cancel', async () => {
    const client = await (await fixture({ script: clarifyScript() })).connect();
    const { session_id: sid } = await startTurn(client);
    const request = await client.waitFor((frame) => frame.method === 'clarify');
    expect(request.id).toMatch(/^srq-[0-9a-f]{12}$/);
    expect(request.params).toMatchObject({ session_id: sid, question: 'Pick one?', choices: ['x', 'y'] });
    const before = client.frames.length;
    client.send({ jsonrpc: '2.0', id: request.id, result: { answer: 'x' } });
    const complete = await client.event('tool.complete', sid);
    expect(JSON.stringify(complete.payload)).toContain('x');
    await client.event('message.complete', sid);
    const cancels = client.events('request.cancel', sid);
    expect(cancels).toHaveLength(1);
    expect(cancels[0]?.payload).toEqual({ id: request.id, method: 'clarify', reason: 'resolved' });
    expect(client.frames.slice(before).filter((frame) => !('method' in frame))).toEqual([]);
  });

  it('51. a declined clarify returns no answer at once, with request.cancel resolved', async () => {
    const client = await (await fixture({ script: clarifyScript() })).connect();
    const { session_id: sid } = await startTurn(client);
    const request = await client.waitFor((frame) => frame.method === 'clarify');
    client.send({
      jsonrpc: '2.0',
      id: request.id,
      error: { code: -32601, message: 'no handler for server request: clarify' },
    });
    const complete = await client.event('tool.complete', sid, () => true, 500);
    expect(JSON.stringify(complete.payload)).not.toContain('"x"');
    expect(client.events('request.cancel', sid).map((event) => event.payload.reason)).toEqual(['resolved']);
  });

  it('52. an unanswered clarify times out with one request.cancel timeout', async () => {
    const client = await (
      await fixture({ script: clarifyScript(), config: { agent: { clarify_timeout: 1 } } })
    ).connect();
    const { session_id: sid } = await startTurn(client);
    await client.waitFor((frame) => frame.method === 'clarify');
    const cancel = await client.event('request.cancel', sid, () => true, 5000);
    expect(cancel.payload.reason).toBe('timeout');
    await client.event('message.complete', sid);
    expect(client.events('request.cancel', sid)).toHaveLength(1);
  });

  it('53. capability gate: a WebSocket without client.capabilities gets no frame; stdio does', async () => {
    const gateway = await fixture({ script: [...clarifyScript(), ...clarifyScript('Second?')] });
    const webClient = await gateway.connect('websocket');
    const { session_id: sid } = await startTurn(webClient);
    await webClient.event('tool.complete', sid, () => true, 500);
    expect(webClient.serverRequests()).toEqual([]);
    expect(webClient.events('request.cancel')).toEqual([]);
    await webClient.event('message.complete', sid);
    const stdioClient = await gateway.connect('stdio');
    await startTurn(stdioClient);
    const request = await stdioClient.waitFor((frame) => frame.method === 'clarify');
    expect(request.params.question).toBe('Second?');
    stdioClient.send({ jsonrpc: '2.0', id: request.id, result: { answer: 'y' } });
  });

  it('54. open requests survive a reconnect and can be answered from the new socket', async () => {
    const target = victim();
    const web = await createWebSocketFixture({
      script: [step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')), step(text('removed'))],
    });
    cleanups.push(() => web.dispose());
    const first = await web.open();
    await first.result('client.capabilities', { server_requests: true });
    const created = await startTurn(first, { cwd: dirname(target) });
    const approval = await first.waitFor((frame) => frame.method === 'approval');
    first.socket.close();
    await first.closeCode;
    const second = await web.open();
    await second.result('client.capabilities', { server_requests: true });
    const resumed = await second.result('session.resume', { session_id: created.stored_session_id });
    expect(resumed.open_requests).toEqual([{ id: approval.id, method: 'approval', params: approval.params }]);
    second.send({ jsonrpc: '2.0', id: approval.id, result: { choice: 'once' } });
    await second.event('message.complete', created.session_id);
    expect(existsSync(target)).toBe(false);
    expect(second.events('request.cancel').map((event) => event.payload.reason)).toEqual(['resolved']);
  });

  it('55. interrupt withdraws the approval and the command does not run', async () => {
    const target = victim();
    const client = await (
      await fixture({
        script: [step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')), step(text('x'))],
      })
    ).connect();
    const { session_id: sid } = await startTurn(client, { cwd: dirname(target) });
    const approval = await client.waitFor((frame) => frame.method === 'approval');
    await client.result('session.interrupt', { session_id: sid });
    const cancel = await client.event('request.cancel', sid);
    expect(cancel.payload).toEqual({ id: approval.id, method: 'approval', reason: 'interrupted' });
    const complete = await client.event('message.complete', sid);
    expect(complete.payload.status).toBe('interrupted');
    expect(existsSync(target)).toBe(true);
  });

  it('56. interrupt is per session', async () => {
    const gateway = await fixture({
      script: [
        step(toolCall('clarify', { question: 'A?' }, 'call_a')),
        step(toolCall('clarify', { question: 'B?' }, 'call_b')),
        step(text('done')),
      ],
    });
    const client = await gateway.connect();
    const a = await startTurn(client);
    const requestA = await client.waitFor(
      (frame) => frame.method === 'clarify' && frame.params.session_id === a.session_id,
    );
    const b = await startTurn(client);
    const requestB = await client.waitFor(
      (frame) => frame.method === 'clarify' && frame.params.session_id === b.session_id,
    );
    await client.result('session.interrupt', { session_id: a.session_id });
    await client.event('message.complete', a.session_id);
    expect(client.events('request.cancel').map((event) => event.payload.id)).toEqual([requestA.id]);
    const snapshot = await client.result('session.activate', { session_id: b.session_id });
    expect(snapshot.open_requests.map((request: { id: string }) => request.id)).toEqual([requestB.id]);
    client.send({ jsonrpc: '2.0', id: requestB.id, result: { answer: 'y' } });
    const complete = await client.event('tool.complete', b.session_id);
    expect(JSON.stringify(complete.payload)).toContain('y');
  });

  it('57. batch clarify locks', async () => {
    const batch = (prefix: string) => [
      step(
        toolCall(
          'clarify',
          {
            questions: [
              { id: `${prefix}1`, question: 'First?' },
              { id: `${prefix}2`, question: 'Second?' },
            ],
          },
          `call_${prefix}`,
        ),
      ),
      step(text('ok')),
    ];
    const gateway = await fixture({ script: [...batch('q'), ...batch('r')] });
    const client = await gateway.connect();
    const { session_id: sid } = await startTurn(client);
    const request = await client.waitFor((frame) => frame.method === 'clarify');
    expect(await client.result('clarify.lock', { request_id: request.id, question_id: 'q1', answer: 'one' })).toEqual({
      status: 'ok',
      remaining: ['q2'],
    });
    const snapshot = await client.result('session.activate', { session_id: sid });
    expect(snapshot.open_requests[0].params.answers).toEqual({ q1: 'one' });
    expect(await client.result('clarify.lock', { request_id: request.id, question_id: 'q2', answer: 'two' })).toEqual({
      status: 'ok',
      remaining: [],
    });
    const complete = await client.event('tool.complete', sid);
    expect(JSON.stringify(complete.payload)).toContain('one');
    expect(JSON.stringify(complete.payload)).toContain('two');
    expect(client.events('request.cancel', sid).map((event) => event.payload.reason)).toEqual(['resolved']);
    expect(await client.result('clarify.lock', { request_id: request.id, question_id: 'q1', answer: 'again' })).toEqual(
      {
        status: 'expired',
      },
    );
    await client.event('message.complete', sid);
    const other = await startTurn(client);
    const second = await client.waitFor(
      (frame) => frame.method === 'clarify' && frame.params.session_id === other.session_id,
    );
    const unknown = await client.call('clarify.lock', { request_id: second.id, question_id: 'zz', answer: 'x' });
    expect(unknown.error).toEqual({ code: 4002, message: 'unknown question_id: zz' });
    await client.result('session.interrupt', { session_id: other.session_id });
  });

  it('58. request.answer settles once, then reports expired', async () => {
    const client = await (
      await fixture({
        script: [step(toolCall('terminal', { command: 'sudo true' }, 'call_sudo')), step(text('ok'))],
        config: { approvals: { yolo: true } },
      })
    ).connect();
    const { session_id: sid } = await startTurn(client);
    const request = await client.waitFor((frame) => frame.method === 'sudo');
    expect(await client.result('request.answer', { id: request.id, result: { value: 'pw' } })).toEqual({
      status: 'ok',
    });
    expect(await client.result('request.answer', { id: request.id, result: { value: 'pw' } })).toEqual({
      status: 'expired',
    });
    await client.event('message.complete', sid);
  });

  it('59. approval.respond resolves by request_id and validates the choice', async () => {
    const target = victim();
    const client = await (
      await fixture({
        script: [step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')), step(text('x'))],
      })
    ).connect();
    const { session_id: sid } = await startTurn(client, { cwd: dirname(target) });
    const approval = await client.waitFor((frame) => frame.method === 'approval');
    const pending = await client.result('approval.pending', { session_id: sid });
    expect(pending.approvals).toHaveLength(1);
    expect(
      await client.result('approval.respond', {
        session_id: sid,
        request_id: approval.params.request_id,
        choice: 'session',
      }),
    ).toEqual({ resolved: 1 });
    const cancel = await client.event('request.cancel', sid);
    expect(cancel.payload.reason).toBe('resolved');
    const invalid = await client.call('approval.respond', { session_id: sid, choice: 'maybe' });
    expect(invalid.error).toEqual({ code: 4002, message: 'invalid choice: maybe' });
    await client.event('message.complete', sid);
    await sleep(10);
  });
});

describe('withdrawn approvals', () => {
  it('an approval withdrawn while the turn goes on is refused by the system, not "denied by the user"', async () => {
    const target = victim();
    const host = await createTestHost({
      script: [step(toolCall('terminal', { command: `rm -rf ${target}` }, 'call_rm')), step(text('x'))],
      clock: systemClock as never,
      config: { session: { auto_title: false } } as never,
    });
    // The internal core, so the test can withdraw a request without also interrupting the turn.
    const core = new GatewayCore({ host, buildDelayMs: 5 });
    cleanups.push(() => core.shutdown().catch(() => {}));
    const pair = createLinkedPair({ kind: 'memory' });
    const client = new TestClient((line) => pair.client.sendText(line));
    void (async () => {
      const reader = pair.client.readable.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        client.push(value as Record<string, unknown>);
      }
      client.markClosed();
    })();
    core.connect(pair.server);
    await client.waitFor((frame) => frame.params?.type === 'gateway.ready');
    const { session_id: sid } = await startTurn(client, { cwd: dirname(target) });
    const approval = await client.waitFor((frame) => frame.method === 'approval');
    const session = core.sessions.get(sid);
    expect(session).toBeDefined();
    core.serverRequests.withdrawAll(session ?? null, 'session_closed');
    const cancel = await client.event('request.cancel', sid);
    expect(cancel.payload).toEqual({ id: approval.id, method: 'approval', reason: 'session_closed' });
    const complete = await client.event('tool.complete', sid);
    const shown = JSON.stringify(complete.payload);
    expect(shown).not.toContain('denied by the user');
    expect(shown).toContain('refused by policy');
    await client.event('message.complete', sid);
    expect(existsSync(target)).toBe(true);
  });
});
