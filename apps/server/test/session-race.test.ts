import { step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
// The global setup's `ProvidedContext` declaration types `inject('hermesTestDatabaseUrl')`.
import type {} from '../../../packages/core/test/support/postgres-global-setup.js';
import { connectGateway, type Frame } from './support/gateway-client.js';
import { runCleanups, type StartedServer, startInstancePair, temp } from './support/server-process.js';

/** Issue 33 item 5: the same new `X-Hermes-Session-Id` sent to two instances at once. */

const KEY = 'test-key-0123456789abcdef';
afterEach(runCleanups);
const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };

function chat(server: StartedServer, sessionId: string, content: string): Promise<Response> {
  return fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth, 'X-Hermes-Session-Id': sessionId },
    body: JSON.stringify({ model: 'hermes-agent', messages: [{ role: 'user', content }] }),
  });
}

/** A raw WebSocket client of the gateway, keeping every frame it receives. */
const gatewayClient = (server: StartedServer) => connectGateway(server, KEY);

describe('one new session id on two instances at once', () => {
  it('33.5: one request creates the session, the other uses it and waits on its lease (or gets 409), never 500 "already exists"', async () => {
    const pairs = 5;
    const { a, b } = await startInstancePair(
      Array.from({ length: pairs * 2 }, () => step(text('answered'))),
      { key: KEY, configYaml: 'session:\n  auto_title: false\n' },
    );
    for (let pair = 0; pair < pairs; pair += 1) {
      const sessionId = `race-${pair}-${Date.now().toString(36)}`;
      const answers = await Promise.all([chat(a, sessionId, 'from A'), chat(b, sessionId, 'from B')]);
      const bodies = await Promise.all(answers.map(async (answer) => `${answer.status} ${await answer.text()}`));
      for (const [index, answer] of answers.entries()) expect([200, 409], bodies[index]).toContain(answer.status);
      expect(answers.some((answer) => answer.status === 200)).toBe(true);
      // Every answered turn is in the one session's transcript.
      const messages = (await (
        await fetch(`${a.url}/api/sessions/${sessionId}/messages`, { headers: auth })
      ).json()) as { data: { role: string }[] };
      const answered = answers.filter((answer) => answer.status === 200).length;
      expect(messages.data.filter((message) => message.role === 'assistant')).toHaveLength(answered);
    }
  }, 120_000);

  it('33.5: a session just made with session.create on A is attached from B at once, before any turn', async () => {
    const { a, b } = await startInstancePair([step(text('first words'))], {
      key: KEY,
      configYaml: 'session:\n  auto_title: false\n',
    });
    const x = await gatewayClient(a);
    const created = await x.call('session.create', { cwd: temp('hermes-workspace-') });
    expect(created.error).toBeUndefined();
    const runtimeId = created.result?.session_id as string;
    const storedId = created.result?.stored_session_id as string;
    const y = await gatewayClient(b);
    const attached = await y.call('session.resume', { session_id: storedId });
    expect(attached.error, JSON.stringify(attached.error)).toBeUndefined();
    // Attached to A's live session: A's first turn reaches B's client too.
    const submitted = await x.call('prompt.submit', { session_id: runtimeId, text: 'hello' });
    expect(submitted.error).toBeUndefined();
    const complete = (frame: Frame) =>
      frame.params?.type === 'message.complete' && frame.params.payload?.text === 'first words';
    await x.waitFor(complete, 'message.complete on A');
    await y.waitFor(complete, 'message.complete on B');
  }, 120_000);
});
