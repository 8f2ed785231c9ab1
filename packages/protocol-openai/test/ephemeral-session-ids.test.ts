import { hang, step, text } from '@hermes/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type Rig, startRig, until } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

/**
 * Issue 34: a header-less chat completion runs on an ephemeral agent whose id the core draws from the clock's second
 * and 24 random bits; in a burst of a thousand concurrent streams two of them now and then drew the same id, and the
 * later request failed with HTTP 500 `internal_error` ("Session … is already running a turn"). The host's id source
 * is forced here to repeat, as that rare draw did: the later stream must be served like any other.
 */
describe('header-less chat completions whose ephemeral agents draw the same session id', () => {
  it('the second stream answers 200 with its reply while the first still runs', async () => {
    const drawn: string[] = [];
    const ids = ['20261205_055206_26ab0f', '20261205_055206_26ab0f', '20261205_055206_9c41d2'];
    rig = await startRig({
      script: [step(text('first, still running'), hang()), step(text('second answer'))],
      generateSessionId: () => {
        const id = ids[Math.min(drawn.length, ids.length - 1)] as string;
        drawn.push(id);
        return id;
      },
    });
    const controller = new AbortController();
    const first = await rig.raw('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model: 'hermes-agent', stream: true, messages: [{ role: 'user', content: 'stream 0' }] }),
      signal: controller.signal,
    });
    expect(first.status).toBe(200);
    const reader = (first.body as ReadableStream<Uint8Array>).getReader();
    let buffer = '';
    // The first turn is running (its agent holds the first id) once its text arrives.
    while (!buffer.includes('first, still running')) buffer += new TextDecoder().decode((await reader.read()).value);

    const second = await rig.raw('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model: 'hermes-agent', stream: true, messages: [{ role: 'user', content: 'stream 1' }] }),
    });
    const body = await second.text();
    expect({ status: second.status, body: second.status === 200 ? 'sse' : body }).toEqual({ status: 200, body: 'sse' });
    expect(body).toContain('"content":"second answer"');
    expect(body).toContain('"finish_reason":"stop"');
    expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    // The repeat was drawn and passed over: the second agent has an id of its own.
    expect(drawn).toEqual(ids);

    controller.abort();
    await until(() => rig?.api.activeTurns() === 0);
    expect(rig.api.activeTurns()).toBe(0);
  });
});

/**
 * The same draw on the routes that create a stored session under an id the server picks: a Responses turn without a
 * chain, and `POST /api/sessions` without an id. The repeat names a stored session of another client here; taken as
 * found, the second client's turn continued the first client's conversation (its rows reached the model).
 */
describe('new stored sessions whose drawn id is already stored', () => {
  const repeating = (ids: string[], drawn: string[]) => () => {
    const id = ids[Math.min(drawn.length, ids.length - 1)] as string;
    drawn.push(id);
    return id;
  };

  it("a fresh Responses turn gets a session of its own, and never sees another client's conversation", async () => {
    const drawn: string[] = [];
    const ids = ['20261205_061500_5e11a0', '20261205_061500_5e11a0', '20261205_061500_77b3c9'];
    rig = await startRig({
      script: [step(text('first answer')), step(text('second answer'))],
      generateSessionId: repeating(ids, drawn),
    });
    const first = await rig.client.responses.create({ model: 'hermes-agent', input: 'secret of client one' });
    expect(first.output_text).toBe('first answer');
    const second = await rig.client.responses.create({ model: 'hermes-agent', input: 'question of client two' });
    expect(second.output_text).toBe('second answer');
    // The second draw repeated the first session's id and was passed over.
    expect(drawn).toEqual(ids);
    const seenBySecond = JSON.stringify(rig.host.model.calls[1]?.messages ?? []);
    expect(seenBySecond).toContain('question of client two');
    expect(seenBySecond).not.toContain('secret of client one');
    expect((await rig.host.store.getSession('20261205_061500_77b3c9'))?.id).toBe('20261205_061500_77b3c9');
    const firstRows = await rig.host.store.loadConversation('20261205_061500_5e11a0');
    expect(JSON.stringify(firstRows)).not.toContain('question of client two');
  });

  it('POST /api/sessions without an id creates a session of its own instead of answering 409', async () => {
    const drawn: string[] = [];
    const ids = ['20261205_061501_0a0b0c', '20261205_061501_0a0b0c', '20261205_061501_d4e5f6'];
    rig = await startRig({ generateSessionId: repeating(ids, drawn) });
    const first = await rig.raw('/api/sessions', { method: 'POST', body: '{}' });
    expect(first.status).toBe(201);
    expect(((await first.json()) as { id: string }).id).toBe('20261205_061501_0a0b0c');
    const second = await rig.raw('/api/sessions', { method: 'POST', body: '{}' });
    expect(second.status).toBe(201);
    expect(((await second.json()) as { id: string }).id).toBe('20261205_061501_d4e5f6');
    // A client's own id that is taken is still its 409.
    const named = await rig.raw('/api/sessions', {
      method: 'POST',
      body: JSON.stringify({ id: '20261205_061501_0a0b0c' }),
    });
    expect(named.status).toBe(409);
  });
});
