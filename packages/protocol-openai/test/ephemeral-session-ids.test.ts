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
