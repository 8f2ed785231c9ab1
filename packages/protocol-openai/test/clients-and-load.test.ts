import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { delay, hang, step, text } from '@hermes/core/testing';
import { streamText } from 'ai';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { weakKeyReason } from '../src/index.js';
import { dataOf, KEY, type Rig, startRig, until } from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

const user = (content: string) => ({ role: 'user' as const, content });

describe('other clients', () => {
  it('the Vercel AI SDK openai-compatible provider streams a reply', async () => {
    rig = await startRig({ script: [step(text('Hello from '), text('Hermes.'))] });
    const provider = createOpenAICompatible({ name: 'hermes', baseURL: `${rig.base}/v1`, apiKey: KEY });
    const result = streamText({ model: provider.chatModel('hermes-agent'), prompt: 'hi' });
    let streamed = '';
    for await (const delta of result.textStream) streamed += delta;
    expect(streamed).toBe('Hello from Hermes.');
    expect(await result.finishReason).toBe('stop');
  });
});

describe('coalesced content chunks (spec §13.6)', () => {
  /** The content of each chunk the official client yields, in order. */
  async function contents(client: OpenAI): Promise<string[]> {
    const stream = await client.chat.completions.create({
      model: 'hermes-agent',
      stream: true,
      messages: [user('go')],
    });
    const seen: string[] = [];
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) seen.push(content);
    }
    return seen;
  }

  it('a burst of deltas shares chunks, and the text arrives whole and in order', async () => {
    const answer = Array.from({ length: 2000 }, (_, index) => String(index % 10)).join('');
    rig = await startRig({ script: [step(text(answer, 1))] });
    const seen = await contents(rig.client);
    expect(seen.join('')).toBe(answer);
    expect(seen.length).toBeLessThan(2000);
  });

  it('deltas that arrive at their own pace get a chunk each', async () => {
    rig = await startRig({ script: [step(text('one '), delay(30), text('two '), delay(30), text('three'))] });
    expect(await contents(rig.client)).toEqual(['one ', 'two ', 'three']);
  });
});

describe('raw SSE and disconnects', () => {
  it('closing a chat stream aborts the model call (raw fetch)', async () => {
    rig = await startRig({ script: [step(text('Start'), hang())] });
    const controller = new AbortController();
    const response = await rig.raw('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ messages: [user('hi')], stream: true }),
      signal: controller.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let buffer = '';
    while (!buffer.includes('"content":"Start"')) buffer += new TextDecoder().decode((await reader.read()).value);
    const first = dataOf(buffer.split('\n\n')[0] ?? '') as { choices: { delta: unknown }[] };
    expect(first.choices[0]?.delta).toEqual({ role: 'assistant', content: '' });
    controller.abort();
    await until(() => rig?.host.model.calls[0]?.aborted === true);
    await until(() => rig?.api.activeTurns() === 0);
    expect(rig.host.model.calls).toHaveLength(1);
  });
});

describe('non-stream disconnects', () => {
  it('a client that leaves before a non-stream answer interrupts the turn', async () => {
    rig = await startRig({ script: [step(text('Start'), hang())] });
    const controller = new AbortController();
    const pending = rig
      .raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ messages: [user('hi')] }),
        signal: controller.signal,
      })
      .catch((caught: unknown) => caught);
    await until(() => rig?.host.model.calls.length === 1);
    controller.abort();
    await pending;
    await until(() => rig?.host.model.calls[0]?.aborted === true);
    await until(() => rig?.api.activeTurns() === 0);
  });
});

describe('load', () => {
  it('holds 100 concurrent streaming chat completions, and the 101st over a cap of 100 gets 429', async () => {
    const script = Array.from({ length: 100 }, () => step(text('ok'), hang()));
    rig = await startRig({ script, settings: { maxConcurrentRuns: 100 } });
    const client = new OpenAI({ baseURL: `${rig.base}/v1`, apiKey: KEY, maxRetries: 0 });
    const controllers = Array.from({ length: 100 }, () => new AbortController());
    const streams = await Promise.all(
      controllers.map((controller, index) =>
        client.chat.completions.create(
          { model: 'hermes-agent', messages: [user(`conversation ${index}`)], stream: true },
          { signal: controller.signal },
        ),
      ),
    );
    const firstChunks = await Promise.all(streams.map((stream) => stream[Symbol.asyncIterator]().next()));
    for (const chunk of firstChunks) expect(chunk.value?.choices[0]?.delta.role).toBe('assistant');
    await until(() => rig?.host.model.calls.length === 100);
    expect(rig.api.activeTurns()).toBe(100);
    const over = await client.chat.completions
      .create({ model: 'hermes-agent', messages: [user('one too many')] })
      .catch((caught: unknown) => caught);
    expect(over).toBeInstanceOf(OpenAI.RateLimitError);
    expect((over as InstanceType<typeof OpenAI.RateLimitError>).status).toBe(429);
    for (const controller of controllers) controller.abort();
    await until(() => rig?.api.activeTurns() === 0, 20_000);
  }, 60_000);
});

describe('settings', () => {
  it('weak keys are refused with a message naming API_SERVER_KEY', () => {
    for (const key of [
      undefined,
      '',
      'short',
      'aaaaaaaaaaaaaaaaaaaa',
      'changeme-changeme-changeme',
      'my-Your-API-Key-0001',
    ])
      expect(weakKeyReason(key)).toContain('API_SERVER_KEY');
    expect(weakKeyReason(KEY)).toBeNull();
  });
});
